"""The branch walk against a plain reference walk: the same path, the same orphan warning, the same cycle error."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from pi_compact.errors import CycleError
from pi_compact.session import get_branch, load_session
from pi_compact.session.entries import Entry, Session
from tests.helpers.sessions import SessionBuilder


def reference_walk(session: Session) -> tuple[list[Entry], Entry | None, Entry | None]:
    """(path root → leaf, the entry whose parent is missing, the first entry met twice) by the obvious walk."""
    path: list[Entry] = []
    seen: set[int] = set()
    current = session.by_id.get(session.entries[-1].id)
    while current is not None:
        if id(current) in seen:
            return path, None, current
        seen.add(id(current))
        path.append(current)
        if current.parent_id is None:
            break
        nxt = session.by_id.get(current.parent_id)
        if nxt is None:
            return path[::-1], current, None
        current = nxt
    return path[::-1], None, None


@pytest.mark.parametrize("seed", range(40))
def test_walk_agrees_with_a_reference_walk(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    check_walk(tmp_path, rng, rng.randint(1, 30), 0.15)


@pytest.mark.parametrize("cache", ["index", "none"])
@pytest.mark.parametrize("seed", range(12))
def test_long_walk_without_an_index_agrees_with_a_reference_walk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, seed: int, cache: str
) -> None:
    # Long runs of consecutive parents, a few links to anywhere (a parent read after its child, cycles), loaded
    # cold: the first load of a file, with an index written or none
    if cache == "none":
        monkeypatch.setenv("PICOMPACT_NO_CACHE", "1")
    rng = random.Random(seed)
    check_walk(tmp_path, rng, rng.randint(300, 700), 0.004)


def check_walk(tmp_path: Path, rng: random.Random, turns: int, rewire: float) -> None:
    sb = SessionBuilder()
    for i in range(turns):
        sb.user(f"turn {i}")
    ids = [e["id"] for e in sb.entries]
    for entry in sb.entries:  # rewire some parents: to any id (cycles too), to a missing one, or to none
        roll = rng.random()
        if roll < rewire:
            entry["parentId"] = rng.choice(ids)
        elif roll < rewire * 4 / 3:
            entry["parentId"] = "missing0"
        elif roll < rewire * 5 / 3:
            entry["parentId"] = None
    if rng.random() < 0.3:
        sb.entries.append(dict(sb.entries[rng.randrange(len(sb.entries))]))  # a duplicate id: the later one wins
    session = load_session(sb.write(tmp_path / "s.jsonl"))
    path, orphan, repeated = reference_walk(session)
    if repeated is not None:
        with pytest.raises(CycleError) as info:
            get_branch(session)
        assert info.value.line == repeated.line and repeated.id in str(info.value)
        return
    branch = get_branch(session)
    assert branch.entries == path
    warned = [d for d in branch.diagnostics if d.code == "orphaned-branch"]
    assert [d.line for d in warned] == ([orphan.line] if orphan is not None else [])
    if orphan is not None:
        on_path = {id(e) for e in path}
        earlier = sum(1 for e in session.entries if e.index < orphan.index and id(e) not in on_path)
        assert f"{earlier} earlier entries" in warned[0].message
    for i, entry in enumerate(branch.entries):
        assert branch.position(entry.id) == next(j for j, e in enumerate(path) if e.id == entry.id) <= i
    off = [e.id for e in session.entries if all(e.id != p.id for p in path)]
    assert [branch.position(i) for i in [*off, "nowhere0"]] == [-1] * (len(off) + 1)
