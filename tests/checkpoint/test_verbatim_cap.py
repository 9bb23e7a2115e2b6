"""The size cap (V20–V22)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pi_compact.checkpoint import VerbatimOptions, build_verbatim_checkpoint
from pi_compact.checkpoint.context_files import ContextFile
from pi_compact.checkpoint.verbatim.cap import MIN_CONVERSATION_CHARS, fit_spans
from pi_compact.checkpoint.verbatim.spans import Item, Span
from pi_compact.errors import UsageError
from pi_compact.js import js_len
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


def test_v20_non_user_content_is_condensed_first_oldest_first(builder: SessionBuilder, tmp_path: Path) -> None:
    busy_session(builder)
    _, free = compact(builder, tmp_path)
    cap = free.tokens - 100
    _, cp = compact(builder, tmp_path, cap=cap)
    assert cp.tokens <= cap
    assert cp.trimmed
    for turn in range(12):
        assert f"user request number {turn}\n" in cp.summary  # every user message survives, whole
    # the oldest run of tool calls became its ledger line: what ran, how it ended, the lead of the reply
    assert '▸ bash(command="run step 0 of turn 0' not in cp.summary
    assert "[e0000002..e0000010] assistant, condensed: ran " in cp.summary
    assert '"run step 0 of turn 0 ----' in cp.summary and 'said: "reply to turn 0: words' in cp.summary
    assert "1 run of tool calls and replies condensed" in cp.summary or "runs of tool calls and replies condensed" in (
        cp.summary
    )
    # the newest run stayed verbatim
    assert "reply to turn 11" in cp.summary and '▸ bash(command="run step 3 of turn 11' in cp.summary


def test_v20_ledger_lines_are_shortened_then_removed_before_any_user_message(
    builder: SessionBuilder, tmp_path: Path
) -> None:
    busy_session(builder, turns=30)
    _, free = compact(builder, tmp_path)
    seen = {"condensed": False, "short": False, "gone": False}
    for cap in range(free.tokens, 900, -150):
        _, cp = compact(builder, tmp_path, cap=cap)
        users = [turn for turn in range(30) if f"user request number {turn}\n" in cp.summary]
        condensed = "assistant, condensed: ran 4 commands" in cp.summary
        full = 'assistant, condensed: ran "run step' in cp.summary
        gone = "\n\n[…]\n\n" in cp.summary
        seen["condensed"] |= full
        seen["short"] |= condensed
        seen["gone"] |= gone
        if len(users) < 30:  # user messages go only once no run of tool calls is left to condense or remove
            assert "▸ bash" not in cp.summary and not full and not condensed
    assert all(seen.values()), seen


def test_v20_long_user_messages_become_stubs_that_keep_what_identifies_them(
    builder: SessionBuilder, tmp_path: Path
) -> None:
    paste = (
        "START OF PASTE "
        + "log line with details\n" * 700
        + "Traceback: KeyError: 'ledger_id' in src/billing/ledger.py:214\n"
        + "log line with details\n" * 700
        + "END OF PASTE"
    )
    busy_session(builder, turns=3, paste=paste)
    _, free = compact(builder, tmp_path)
    cap = free.tokens - len(paste) // 4 - 100
    _, cp = compact(builder, tmp_path, cap=cap)
    assert cp.tokens <= cap
    span_text = conversation(cp.summary)
    assert "START OF PASTE" in span_text
    stub = span_text.split("START OF PASTE", 1)[1].split("\n\n", 1)[0]
    assert f"chars of {len(paste)}" not in stub
    assert f"of {len(paste)} chars" in stub  # its sentences chosen by value, the gaps marked
    # the head, then the error line, the path and the last line of the part that was cut, in their order
    assert "KeyError: 'ledger_id'" in stub and "src/billing/ledger.py:214" in stub and "END OF PASTE" in stub
    assert len(stub) < 800
    assert "user request number 1\n" in cp.summary and "user request number 2\n" in cp.summary
    # the stub was unavoidable, so the newest runs of tool calls came back in whatever form fits
    assert '▸ bash(command="run step 3 of turn 2' in cp.summary or "condensed: ran" in cp.summary


def test_v20_every_user_message_keeps_a_trace_before_any_is_removed(builder: SessionBuilder, tmp_path: Path) -> None:
    for turn in range(20):
        builder.user(f"request {turn:02d}: " + "please look at this in detail " * 20)
        builder.assistant("ok")
    builder.user("the final kept request")
    _, free = compact(builder, tmp_path)
    found_traces = False
    for cap in range(free.tokens, 300, -100):
        _, cp = compact(builder, tmp_path, cap=cap)
        present = [turn for turn in range(20) if f"request {turn:02d}: " in cp.summary]
        if "removed by the size cap: entr" in cp.summary and present != list(range(20)):
            assert found_traces, "a user message was removed before every message was cut to a trace"
            break
        if present == list(range(20)) and re.search(r"\[\d+ of \d+ chars", cp.summary):
            found_traces = True
    assert found_traces


def test_v20_last_resort_removes_oldest_user_messages(builder: SessionBuilder, tmp_path: Path) -> None:
    busy_session(builder, turns=30)
    _plan, free = compact(builder, tmp_path)
    overhead = free.tokens - js_len(conversation(free.summary)) // 4
    cap = overhead + 200
    _, cp = compact(builder, tmp_path, cap=cap)
    assert cp.tokens <= cap
    spans_text = conversation(cp.summary)
    assert "user request number 0\n" not in spans_text
    assert "user request number 29" in spans_text  # the newest user message is the last to go
    assert "[… removed by the size cap: entries e0000001.." in spans_text
    assert "- [e0000001] user request number 0" in cp.summary  # the opening request stays, as the goal


def test_v20_cap_trims_only_the_rendered_text(builder: SessionBuilder, tmp_path: Path) -> None:
    busy_session(builder)
    _, free = compact(builder, tmp_path)
    _, cp = compact(builder, tmp_path, cap=free.tokens // 3)
    assert cp.trimmed
    assert cp.details == free.details  # saved spans stay whole for later rounds


def test_v20_cap_must_not_be_negative_and_zero_is_the_smallest_checkpoint(
    builder: SessionBuilder, tmp_path: Path
) -> None:
    busy_session(builder, turns=3)
    path = builder.write(tmp_path / "s.jsonl")
    with pytest.raises(UsageError):
        build_verbatim_checkpoint(plan_for(path), VerbatimOptions(str(path), -1))
    smallest = build_verbatim_checkpoint(plan_for(path), VerbatimOptions(str(path), 0))
    assert smallest.trimmed and "user request number 2" in smallest.summary
    conversation_part = js_len(conversation(smallest.summary))
    assert conversation_part <= MIN_CONVERSATION_CHARS + 200


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
    assert parts[0].startswith('<span compaction="1" entries="a1..a2" trimmed="true">\n[size cap: 1 run of')
    assert "recover the originals by entry id]" in parts[0]
    assert '[a2] assistant, condensed: said: "x x x' in parts[0]
    assert parts[1] == ' compaction="2" entries="x2"></span>'  # originally empty: never marked
    assert "trimmed" not in parts[2]


def test_v22_fully_removed_spans_still_say_so_in_one_tag() -> None:
    spans = [span(n, Item(f"a{n}", "user", "user:", f"{n % 10}" * 3000)) for n in range(1, 11)]
    result = fit_spans(spans, 700)
    assert result.fits and result.chars <= 700
    first = result.text.split("\n\n", 1)[0]
    assert first.startswith('<span compaction="1-')  # the emptied spans in a row: one tag, with their range
    assert first.endswith(
        'trimmed="true">[all of them removed by the size cap; recover the originals by entry id]</span>'
    )
    # the newest message survives as a marked trace
    assert "[a10] user:\n" + "0" * 40 + "… [40 of 3000 chars]" in result.text
    assert "0" * 3000 not in result.text


def test_v20_two_long_messages_both_keep_a_trace() -> None:
    spans = [span(1, Item("a1", "user", "user:", "q" * 3000)), span(2, Item("b1", "user", "user:", "b" * 3000))]
    result = fit_spans(spans, 700)
    assert result.fits and result.chars <= 700
    assert "[a1] user:\n" + "q" * 60 in result.text and "[b1] user:\n" + "b" * 60 in result.text


def test_v20_a_call_is_condensed_with_its_nested_calls() -> None:
    prose = "\n".join(f"reply line {n} " + "with more words " * 4 for n in range(20))
    call = '▸ codemode(code="x") → ok\n  ↳ edit(path=a.ts) → ok\n  ↳ read(path=b.ts) → error'
    items = (
        Item("a1", "user", "user:", "question"),
        Item("a2", "call", "assistant:", call),
        Item("a2", "assistant", "assistant:", prose),
        Item("a3", "user", "user:", "follow-up"),
    )
    full = fit_spans([span(1, *items)], None).chars
    seen_condensed = False
    for budget in range(full - 1, 150, -7):
        text = fit_spans([span(1, *items)], budget).text
        assert ("↳" in text) == ("▸ codemode" in text)  # never a nested line without its call
        assert text.count("↳") in (0, 2)
        if "condensed: edited a.ts; read b.ts (error, not resolved here)" in text:
            seen_condensed = True
            assert 'said: "reply line 0 with more words' in text
    assert seen_condensed
