"""The conversation text a summarising model reads: byte-identical to Pi 1.6's serializeConversation."""

from __future__ import annotations

import hashlib
from typing import Any

import orjson
import pytest

from pi_compact.checkpoint.summary.serialize import (
    js_slice_head,
    serialize_conversation,
    serialize_messages,
    truncate_for_summary,
)
from pi_compact.js import js_len
from pi_compact.pi.plan import plan_compaction
from pi_compact.session import get_branch, load_session
from tests.helpers.fixtures import PI_FIXTURES

SESSIONS = sorted(p.stem for p in PI_FIXTURES.glob("*.jsonl"))
KEEP = {"analyze_default": 20000, "analyze_small_window": 8000}


def node_sha256(text: str) -> str:
    """sha256 of the text as Node encodes it to UTF-8 (a lone surrogate becomes U+FFFD)."""
    data = text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace").encode("utf-8")
    return hashlib.sha256(data).hexdigest()


@pytest.mark.parametrize("setting", sorted(KEEP))
@pytest.mark.parametrize("name", SESSIONS)
def test_serialisation_hashes_equal_pis_own(name: str, setting: str) -> None:
    want = orjson.loads((PI_FIXTURES / "expected" / f"{name}.json").read_bytes())[setting]["result"]["preparation"]
    if want is None:
        pytest.skip("Pi would not compact this session at these settings")
    plan = plan_compaction(get_branch(load_session(PI_FIXTURES / f"{name}.jsonl")), KEEP[setting])
    for text, stats in (
        (serialize_messages(plan.messages_to_summarize), want["serializedToSummarize"]),
        (serialize_messages(plan.turn_prefix_messages), want["serializedTurnPrefix"]),
    ):
        assert js_len(text) == stats["utf16Length"]
        assert text.startswith(stats["head300"])
        assert node_sha256(text) == stats["sha256"]


def test_the_golden_set_covers_both_kinds_and_a_split_turn() -> None:
    """The hashes above are only worth something if some of them are of non-empty text."""
    non_empty_prefix = 0
    for name in SESSIONS:
        prep = orjson.loads((PI_FIXTURES / "expected" / f"{name}.json").read_bytes())["analyze_default"]["result"][
            "preparation"
        ]
        if prep and prep["serializedTurnPrefix"]["utf16Length"] > 0:
            non_empty_prefix += 1
    assert non_empty_prefix >= 1


def _assistant(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def test_labels_order_and_blank_line_between_blocks() -> None:
    messages = [
        {"role": "user", "content": "Fix the bug"},
        _assistant(
            {"type": "thinking", "thinking": "hidden reasoning"},
            {"type": "text", "text": "Looking."},
            {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a.py", "offset": 10}},
            {"type": "toolCall", "id": "c2", "name": "bash", "arguments": {"command": 'echo "hi"'}},
        ),
        {"role": "toolResult", "toolCallId": "c1", "content": [{"type": "text", "text": "line 1"}]},
    ]
    assert serialize_conversation(messages) == (
        "[User]: Fix the bug\n\n"
        "[Assistant]: Looking.\n\n"
        '[Assistant tool calls]: read(path="a.py", offset=10); bash(command="echo \\"hi\\"")\n\n'
        "[Tool result]: line 1"
    )


def test_thinking_is_left_out_unless_asked_for_and_then_comes_first() -> None:
    message = _assistant(
        {"type": "text", "text": "Answer"},
        {"type": "thinking", "thinking": "step one"},
        {"type": "thinking", "thinking": "step two"},
    )
    assert "thinking" not in serialize_conversation([message])
    assert serialize_conversation([message], include_thinking=True) == (
        "[Assistant thinking]: step one\nstep two\n\n[Assistant]: Answer"
    )


def test_text_blocks_join_with_newline_for_assistant_and_nothing_for_user_and_tool_results() -> None:
    two = [{"type": "text", "text": "a"}, {"type": "image", "data": "x"}, {"type": "text", "text": "b"}]
    assert serialize_conversation([{"role": "user", "content": two}]) == "[User]: ab"
    assert serialize_conversation([_assistant(*two)]) == "[Assistant]: a\nb"
    assert serialize_conversation([{"role": "toolResult", "content": two}]) == "[Tool result]: ab"


def test_empty_user_and_tool_result_are_skipped_but_an_empty_assistant_text_is_not() -> None:
    messages = [
        {"role": "user", "content": [{"type": "image", "data": "x"}]},
        {"role": "toolResult", "content": []},
        _assistant({"type": "text", "text": ""}),
        {"role": "system", "content": "never summarised"},
    ]
    assert serialize_conversation(messages) == "[Assistant]: "


def test_custom_bash_and_summary_messages_become_user_text() -> None:
    messages = [
        {"role": "custom", "customType": "note", "content": "a custom note", "display": True},
        {"role": "bashExecution", "command": "ls", "output": "a.py", "exitCode": 0},
        {"role": "bashExecution", "command": "secret", "output": "x", "excludeFromContext": True},
        {"role": "compactionSummary", "summary": "earlier work", "tokensBefore": 5},
    ]
    text = serialize_messages(messages)
    parts = text.split("\n\n[User]: ")
    assert parts[0] == "[User]: a custom note"
    assert parts[1] == "Ran `ls`\n```\na.py\n```"
    assert "secret" not in text
    assert "<summary>\nearlier work\n</summary>" in parts[2]


def test_tool_results_are_cut_at_2000_units_with_the_count_of_cut_units() -> None:
    text = "x" * 2500
    out = serialize_conversation([{"role": "toolResult", "content": [{"type": "text", "text": text}]}])
    assert out == "[Tool result]: " + "x" * 2000 + "\n\n[... 500 more characters truncated]"
    assert truncate_for_summary("y" * 2000) == "y" * 2000


def test_the_cut_never_splits_a_surrogate_pair_and_counts_utf16_units() -> None:
    emoji = "\U0001f680"  # two UTF-16 units
    text = "a" * 1999 + emoji + "tail"  # the pair straddles unit 2000
    out = truncate_for_summary(text)
    assert out.startswith("a" * 1999 + "\n\n")
    assert out.endswith(f"[... {js_len(text) - 2000} more characters truncated]")
    assert js_len(text) - 2000 == 5
    whole = "a" * 1998 + emoji + "tail"  # the pair ends exactly at unit 2000: kept
    assert truncate_for_summary(whole).startswith("a" * 1998 + emoji + "\n\n")


def test_js_slice_head_counts_utf16_units() -> None:
    assert js_slice_head("é\U0001f600b", 3) == "é\U0001f600"
    assert js_slice_head("é\U0001f600b", 2) == "é"
    assert js_slice_head("abc", 0) == ""
    assert js_slice_head("abc", 10) == "abc"


def test_tool_call_arguments_are_json_values_in_key_order() -> None:
    call = {
        "type": "toolCall",
        "name": "edit",
        "arguments": {"z": 1.5, "a": [1, "two", None], "n": {"k": True}, "u": "ünï"},
    }
    out = serialize_conversation([_assistant(call)])
    assert out == '[Assistant tool calls]: edit(z=1.5, a=[1,"two",null], n={"k":true}, u="ünï")'
