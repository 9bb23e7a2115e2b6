"""The branch walk over an index's parent slots: runs of entries that follow their parents are taken whole, and the
walk is the one a step at a time gives, cycles refused alike."""

from __future__ import annotations

import random
from array import array

import pytest

from pi_compact.errors import CycleError
from pi_compact.session import tree
from pi_compact.session.entries import Entry


def _entries(n: int) -> list[Entry]:
    return [Entry({"type": "message", "id": f"e{i}", "parentId": None}, i + 2, i) for i in range(n)]


def _walk(follow: object, slots: array[int], entries: list[Entry], at: int) -> list[Entry] | str:
    path = [entries[at]]
    try:
        follow(slots, entries, at, path, len(entries), "s.jsonl")  # type: ignore[operator]
    except CycleError as exc:
        return str(exc)
    return path


def _slots(rng: random.Random, n: int, code: str) -> array[int]:
    """Mostly each entry's parent the entry before it, with some other parents, roots, orphans and cycles."""
    out = []
    for j in range(n):
        roll = rng.random()
        if j and roll < 0.9:
            out.append(j + 1)
        elif roll < 0.93:
            out.append(rng.choice((0, 1)))
        else:
            out.append(rng.randrange(2, n + 2))  # anywhere: later entries (and so cycles) too
    return array(code, out)


@pytest.mark.parametrize("code", ["I", "Q", "q"])
@pytest.mark.parametrize("seed", range(40))
def test_runs_walk_as_steps_do(code: str, seed: int) -> None:
    rng = random.Random(seed)
    n = rng.choice((256, 300, 1000, 3000))
    slots = _slots(rng, n, code)
    entries = _entries(n)
    for at in {n - 1, rng.randrange(n), rng.randrange(n)}:
        assert _walk(tree._follow_slots, slots, entries, at) == _walk(tree._step_slots, slots, entries, at)


def test_one_long_run_to_the_root() -> None:
    n = 5000
    slots = array("I", [0, *range(2, n + 1)])
    entries = _entries(n)
    assert _walk(tree._follow_slots, slots, entries, n - 1) == entries[::-1]


def test_a_run_that_closes_a_cycle_is_refused() -> None:
    n = 1000
    slots = array("I", [n + 1, *range(2, n + 1)])  # entry 0's parent is the last one
    entries = _entries(n)
    with pytest.raises(CycleError, match="entry e999"):
        tree._follow_slots(slots, entries, n - 1, [entries[n - 1]], n, "s.jsonl")
