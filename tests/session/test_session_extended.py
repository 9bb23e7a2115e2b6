"""A session with entries added in memory (what compact and prune preview before they append) walks its branches as
the same file, appended and loaded again, does: the parent links of an indexed prefix are kept only while they hold.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from pi_compact.session import get_branch, load_session
from pi_compact.session.entries import Entry, Session
from pi_compact.session.load import load_session_bytes
from tests.helpers.sessions import SessionBuilder


def _built(tmp_path: Path) -> tuple[Path, SessionBuilder, str]:
    """A long chain with an orphan (its parent named in vain) and a child of it; the orphan's child's id."""
    sb = SessionBuilder()
    for i in range(300):  # past the length where the walk takes runs of slots whole
        sb.user(f"question {i}")
    sb.add({"type": "message", "message": {"role": "user", "content": "orphan"}}, parent="missing01")
    child = sb.user("the orphan's child")
    sb.user("back on the chain", parent=sb.entries[299]["id"])
    return sb.write(tmp_path / "s.jsonl"), sb, child


def _warm(path: Path) -> Session:
    load_session(path, cache=True)  # writes the index
    session = load_session(path, cache=True)
    assert session.parent_slots is not None, "the second load resumes from the index"
    return session


def _added(session: Session, raws: list[dict[str, Any]]) -> list[Entry]:
    last = session.entries[-1].line
    return [Entry(raw, last + i + 1, len(session.entries) + i) for i, raw in enumerate(raws)]


def _ids(session: Session, leaf: str | None = None) -> list[str]:
    return [e.id for e in get_branch(session, leaf).entries]


@pytest.mark.usefixtures("isolated_home")
@pytest.mark.parametrize("new_id", ["f0000001", "missing01", "child"])
def test_added_entries_walk_as_the_appended_file_does(tmp_path: Path, new_id: str) -> None:
    """A new id, the id the orphan's parent names (the orphan then has a parent), and an id the file already has
    (the orphan's child's: the later entry wins): every branch, from the new leaf and from that child's id, as a
    cold load of the appended file gives it."""
    path, sb, child = _built(tmp_path)
    session = _warm(path)
    new_id = child if new_id == "child" else new_id
    raws = [
        {"type": "message", "id": new_id, "parentId": sb.leaf, "message": {"role": "user", "content": "added"}},
        {"type": "message", "id": "f0000002", "parentId": new_id, "message": {"role": "user", "content": "and"}},
    ]
    after = session.extended(_added(session, raws))
    appended = path.read_bytes() + b"".join(orjson.dumps(raw) + b"\n" for raw in raws)
    reference = load_session_bytes(appended, str(path))
    assert _ids(after) == _ids(reference)
    assert _ids(after, child) == _ids(reference, child)
    kept = after.parent_slots is not None
    assert kept == (new_id == "f0000001")  # the links hold only when nothing they name has changed
