"""context_growth walks back from the leaf and reads only the last replies; it must give exactly what the rule
read forward over the whole branch gives (the reference below is that forward reading)."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_compact.ops.forecast import Growth, context_growth, median
from pi_compact.pi.projection import assistant_usage, calculate_usage_tokens
from pi_compact.session import get_branch, load_session
from pi_compact.session.load import load_session_bytes
from pi_compact.session.tree import Branch
from tests.helpers.sessions import SessionBuilder

PI_FIXTURES = Path(__file__).parents[1] / "fixtures" / "pi"


def forward_growth(branch: Branch, window: int = 10) -> Growth:
    replies = 0
    reset = False
    measured: list[tuple[int, int, str, bool]] = []
    for entry in branch.entries:
        if entry.type in ("compaction", "context_edit"):
            reset = True
            continue
        if entry.role != "assistant":
            continue
        replies += 1
        message = entry.message
        usage = assistant_usage(message) if message is not None else None
        if usage is None:
            continue
        measured.append((replies, calculate_usage_tokens(usage), entry.id, reset))
        reset = False
    points = measured[-window:]
    growths = [
        (total - prev_total) / (number - prev_number)
        for (prev_number, prev_total, _, _), (number, total, _, was_reset) in pairwise(points)
        if not was_reset and number > prev_number
    ]
    return Growth(
        per_turn=median(growths) if growths else None,
        samples=len(growths),
        replies=len(points),
        first_entry_id=points[0][2] if points else None,
        last_entry_id=points[-1][2] if points else None,
    )


@pytest.mark.parametrize("fixture", sorted(PI_FIXTURES.glob("*.jsonl")), ids=lambda p: p.name)
def test_every_fixture(fixture: Path) -> None:
    branch = get_branch(load_session(fixture))
    for window in (1, 2, 3, 10):
        assert context_growth(branch, window) == forward_growth(branch, window)


STEPS = st.lists(
    st.sampled_from(["user", "usage", "no-usage", "aborted", "error", "zero", "compaction", "edit"]),
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(steps=STEPS, window=st.integers(min_value=1, max_value=12))
def test_random_branches(steps: list[str], window: int) -> None:
    sb = SessionBuilder()
    total = 1000
    for step in steps:
        total += 137
        if step == "user":
            sb.user("q")
        elif step == "usage":
            sb.assistant("a", usage=total)
        elif step == "no-usage":
            sb.assistant("a")
        elif step in ("aborted", "error"):
            sb.assistant("a", usage=total, stop=step)
        elif step == "zero":
            sb.assistant("a", usage=0)
        elif step == "compaction":
            sb.add({"type": "compaction", "summary": "s", "firstKeptEntryId": sb.leaf, "tokensBefore": total})
        else:
            sb.add({"type": "context_edit", "targetId": sb.leaf, "replacement": None})
    branch = get_branch(load_session_bytes(sb.to_bytes()))
    assert context_growth(branch, window) == forward_growth(branch, window)
