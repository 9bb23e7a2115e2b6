"""The size cap (V20–V22)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_compact.checkpoint import VerbatimOptions, build_verbatim_checkpoint
from pi_compact.checkpoint.cap import MIN_CONVERSATION_CHARS, fit_spans
from pi_compact.checkpoint.context_files import ContextFile
from pi_compact.checkpoint.spans import Item, Span
from pi_compact.errors import UsageError
from pi_compact.tokens import js_len
from tests.helpers.checkpoint import CWD, compact, plan_for, span_texts
from tests.helpers.sessions import SessionBuilder


def busy_session(builder: SessionBuilder, turns: int = 12, paste: str | None = None) -> None:
    for turn in range(turns):
        builder.user(paste if paste is not None and turn == 0 else f"user request number {turn}")
        for step in range(4):
            builder.tool("bash", {"command": f"run step {step} of turn {turn} " + "-" * 60})
        builder.assistant(f"reply to turn {turn}: " + "words " * 30)
    builder.user("the final kept request")


def conversation(summary: str) -> str:
    return "\n\n".join(span_texts(summary))


def test_v20_default_is_no_trim_when_it_fits(builder: SessionBuilder, tmp_path: Path) -> None:
    busy_session(builder, turns=2)
    _, free = compact(builder, tmp_path)
    _, capped = compact(builder, tmp_path, cap=free.tokens)
    assert capped.summary == free.summary
    assert not capped.trimmed


def test_v20_non_user_content_goes_first_oldest_first(builder: SessionBuilder, tmp_path: Path) -> None:
    busy_session(builder)
    _, free = compact(builder, tmp_path)
    cap = free.tokens - 300
    _, cp = compact(builder, tmp_path, cap=cap)
    assert cp.tokens <= cap
    assert cp.trimmed
    for turn in range(12):
        assert f"user request number {turn}" in cp.summary  # every user message survives
    assert "run step 0 of turn 0" not in cp.summary  # the oldest tool lines went first
    assert "reply to turn 11" in cp.summary and "run step 3 of turn 11" in cp.summary  # the newest stayed


def test_v20_long_user_messages_become_marked_stubs(builder: SessionBuilder, tmp_path: Path) -> None:
    paste = "START OF PASTE " + "log line with details\n" * 1500 + "END OF PASTE"
    busy_session(builder, turns=3, paste=paste)
    _, free = compact(builder, tmp_path)
    cap = free.tokens - len(paste) // 4 - 100
    _, cp = compact(builder, tmp_path, cap=cap)
    assert cp.tokens <= cap
    assert "START OF PASTE" in cp.summary and "END OF PASTE" not in cp.summary
    assert f"characters shown of {len(paste)}" not in cp.summary
    assert f"of {len(paste)} characters shown]" in cp.summary
    assert "user request number 1" in cp.summary and "user request number 2" in cp.summary
    # removing every tool line was not enough, so the paste had to be cut; then the newest lines that fit came back
    kept = [(t, s) for t in range(3) for s in range(4) if f"run step {s} of turn {t} " in cp.summary]
    assert kept and kept[-1] == (2, 3)
    assert kept == [(t, s) for t in range(3) for s in range(4)][-len(kept) :]  # removed oldest first
    assert "run step 0 of turn 0" not in cp.summary


def test_v20_last_resort_removes_oldest_user_messages(builder: SessionBuilder, tmp_path: Path) -> None:
    busy_session(builder, turns=30)
    _plan, free = compact(builder, tmp_path)
    overhead = free.tokens - js_len(conversation(free.summary)) // 4
    cap = overhead + 200
    _, cp = compact(builder, tmp_path, cap=cap)
    assert cp.tokens <= cap
    assert "user request number 0\n" not in cp.summary
    assert "user request number 29" in cp.summary  # the newest user message is the last to go
    assert "[… removed by the size cap: entries e0000001.." in cp.summary


def test_v20_cap_trims_only_the_rendered_text(builder: SessionBuilder, tmp_path: Path) -> None:
    busy_session(builder)
    _, free = compact(builder, tmp_path)
    _, cp = compact(builder, tmp_path, cap=free.tokens // 3)
    assert cp.trimmed
    assert cp.details == free.details  # saved spans stay whole for later rounds


def test_v20_cap_must_be_positive(builder: SessionBuilder, tmp_path: Path) -> None:
    busy_session(builder, turns=1)
    path = builder.write(tmp_path / "s.jsonl")
    with pytest.raises(UsageError):
        build_verbatim_checkpoint(plan_for(path), VerbatimOptions(str(path), 0))


def startup_session(builder: SessionBuilder, guide: str) -> None:
    builder.user("start: follow the project instructions")
    builder.tool("read", {"path": "docs/GUIDE.md"}, guide)
    builder.user("the second user message closes the startup interval")
    for turn in range(20):
        builder.tool("bash", {"command": f"work item {turn} " + "=" * 80})
    builder.user("the newest compacted request")
    builder.assistant("ok")
    builder.user("kept")


def test_v21_startup_reads_are_fixed_overhead_never_trimmed(builder: SessionBuilder, tmp_path: Path) -> None:
    guide = "GUIDE LINE\n" * 2000  # ~5,500 tokens, above the cap
    startup_session(builder, guide)
    path = builder.write(tmp_path / "s.jsonl")
    instructions = ContextFile(f"{CWD}/AGENTS.md", "Always read docs/GUIDE.md before working.", "project")
    cp = build_verbatim_checkpoint(plan_for(path), VerbatimOptions(str(path), 2000, (instructions,)))
    assert guide in cp.summary  # kept verbatim and whole
    assert '<read entry="e0000003" path="docs/GUIDE.md">' in cp.summary
    assert any("startup reads alone" in w for w in cp.warnings)
    talk = conversation(cp.summary)
    assert 0 < js_len(talk) <= MIN_CONVERSATION_CHARS  # the conversation part still gets its minimum budget
    assert "the newest compacted request" in talk
    assert cp.details["picompact"]["startupReads"]["reads"][0]["path"] == "docs/GUIDE.md"


def test_v21_reads_within_cap_leave_the_rest_to_the_conversation(builder: SessionBuilder, tmp_path: Path) -> None:
    startup_session(builder, "short guide\n")
    path = builder.write(tmp_path / "s.jsonl")
    instructions = ContextFile(f"{CWD}/AGENTS.md", "See GUIDE.md.", "project")
    cp = build_verbatim_checkpoint(plan_for(path), VerbatimOptions(str(path), 1200, (instructions,)))
    assert cp.tokens <= 1200
    assert "short guide" in cp.summary
    assert not cp.warnings


def span(number: int, *items: Item) -> Span:
    first = items[0].entry if items else f"x{number}"
    last = items[-1].entry if items else f"x{number}"
    return Span(number, first, last, "verbatim", tuple(items))


def test_v22_changed_spans_are_marked_with_a_recovery_note() -> None:
    old = span(1, Item("a1", "user", "user:", "old question"), Item("a2", "assistant", "assistant:", "x " * 400))
    empty = span(2)
    new = span(3, Item("c1", "user", "user:", "new question"), Item("c2", "assistant", "assistant:", "short"))
    free = fit_spans([old, empty, new], None)
    result = fit_spans([old, empty, new], free.chars - 200)
    assert result.trimmed == (True, False, False)
    parts = result.text.split("\n\n<span")
    assert parts[0].startswith('<span compaction="1" entries="a1..a2" trimmed="true">\n[size cap: 1 line of')
    assert "The originals are in the session file" in parts[0]
    assert parts[1] == ' compaction="2" entries="x2"></span>'  # originally empty: never marked
    assert "trimmed" not in parts[2]


def test_v22_fully_removed_span_still_says_so() -> None:
    spans = [span(1, Item("a1", "user", "user:", "q" * 3000)), span(2, Item("b1", "user", "user:", "b" * 3000))]
    result = fit_spans(spans, 700)
    assert result.fits
    assert result.text.startswith('<span compaction="1" entries="a1" trimmed="true">[all of it removed by the size cap')
    assert result.chars <= 700
    # the newer message survives as a marked stub filling what the budget leaves
    assert "[b1] user:\n" + "b" * 100 in result.text
    assert "b" * 3000 not in result.text
    assert "of 3000 characters shown]" in result.text


def test_v20_a_call_leaves_with_its_nested_calls_and_prose_goes_line_by_line() -> None:
    prose = "\n".join(f"reply line {n} " + "with more words " * 4 for n in range(20))
    call = '▸ codemode(code="x") → ok\n  ↳ edit(path=a.ts) → ok\n  ↳ read(path=b.ts) → ok'
    items = (
        Item("a1", "user", "user:", "question"),
        Item("a2", "assistant", "assistant:", prose),
        Item("a2", "call", "assistant:", call),
        Item("a3", "user", "user:", "follow-up"),
    )
    full = fit_spans([span(1, *items)], None).chars
    seen_partial_prose = False
    for budget in range(full - 1, 150, -7):
        text = fit_spans([span(1, *items)], budget).text
        assert ("↳" in text) == ("▸ codemode" in text)  # never a nested line without its call
        assert text.count("↳") in (0, 2)
        seen_partial_prose |= "reply line 19" in text and "reply line 0 " not in text
    assert seen_partial_prose
