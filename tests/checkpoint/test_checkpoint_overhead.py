"""V36: what a checkpoint costs beyond what it keeps. For a span of one turn, the summary and the re-orientation
message together, minus that turn's own text, in Pi's tokens (chars / 4) and in cl100k's."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from pi_compact.checkpoint import Checkpoint, VerbatimOptions, build_verbatim_checkpoint
from pi_compact.js import js_len
from pi_compact.pi.tokens import count_cl100k
from tests.helpers.checkpoint import plan_for
from tests.helpers.sessions import SessionBuilder

# Pi's own session paths are about this long: ~/.pi/agent/sessions/--<cwd>--/<time>_<uuid>.jsonl
SESSION_PATH = "/home/dev/.pi/agent/sessions/--home-dev-repo--/2026-01-01T00-00-00-000Z_0199aaaa-bbbb-cccc.jsonl"
SESSION_PATH += "x" * (100 - len(SESSION_PATH))
LIMIT = 300


def one_turn(builder: SessionBuilder, tmp_path: Path, *, lookup: bool = False, tools: bool = False) -> Checkpoint:
    """A session of two user messages; Pi keeps the second, so the span is the first turn alone."""
    builder.user("hi")
    builder.assistant("hello")
    builder.user("next")
    plan = plan_for(builder.write(tmp_path / "s.jsonl"))
    return build_verbatim_checkpoint(plan, VerbatimOptions(SESSION_PATH, None, (), lookup, tools))


def overhead_pi(cp: Checkpoint, own: str) -> int:
    return math.ceil((js_len(cp.summary) + js_len(cp.reminder) - js_len(own)) / 4)


def overhead_cl100k(cp: Checkpoint, own: str) -> int:
    def count(text: str) -> int:
        return count_cl100k({"role": "user", "content": text})

    return count(cp.summary) + count(cp.reminder) - count(own)


@pytest.mark.parametrize(("lookup", "tools"), [(False, False), (True, False), (False, True), (True, True)])
def test_v36_overhead_of_a_one_turn_span_is_at_most_300_pi_tokens(
    builder: SessionBuilder, tmp_path: Path, lookup: bool, tools: bool
) -> None:
    cp = one_turn(builder, tmp_path, lookup=lookup, tools=tools)
    assert "hi" in cp.summary and "hello" in cp.summary
    assert cp.summary.count(SESSION_PATH) == (0 if tools else 1)
    assert overhead_pi(cp, "hi" + "hello") <= LIMIT, (cp.summary, cp.reminder)


def test_v36_overhead_of_a_one_turn_span_is_at_most_300_cl100k_tokens(builder: SessionBuilder, tmp_path: Path) -> None:
    cp = one_turn(builder, tmp_path)
    assert overhead_cl100k(cp, "hi" + "hello") <= LIMIT, (cp.summary, cp.reminder)


def test_v36_the_block_does_not_repeat_the_verbatim_opening_request(builder: SessionBuilder, tmp_path: Path) -> None:
    """The opening request is in the span word for word: the standing-instructions block does not repeat it."""
    cp = one_turn(builder, tmp_path)
    assert "## Standing instructions" not in cp.summary
    assert cp.summary.count("\nhi\n") == 1


def test_v36_nothing_of_the_envelope_is_said_twice(builder: SessionBuilder, tmp_path: Path) -> None:
    cp = one_turn(builder, tmp_path)
    both = cp.summary + "\n" + cp.reminder
    for phrase in ("not current state", "git status", "compacted without a model", "picompact grep"):
        assert both.count(phrase) == 1, phrase
