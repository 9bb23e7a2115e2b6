"""The compaction entry builder: Pi's shape, key order, ids, timestamps and the re-orientation message."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone

import orjson
import pytest

from pi_compact.checkpoint.entry import (
    build_compaction_entries,
    epoch_ms,
    fixed_clock,
    iso_timestamp,
    random_id,
    seeded_ids,
    serialize_entries,
    serialize_entry,
)
from pi_compact.checkpoint.verbatim.build import REORIENTATION_CUSTOM_TYPE
from pi_compact.session import get_branch, load_session_bytes
from pi_compact.session.entries import Session
from tests.helpers.fixtures import PI_COMPACTION_KEYS
from tests.helpers.sessions import SessionBuilder, simple_session

COMPACTION_KEYS = [*PI_COMPACTION_KEYS, "systemMessage"]
# Pi's appendCustomMessageEntry writes its keys in this order.
CUSTOM_MESSAGE_KEYS = ["type", "customType", "content", "display", "details", "id", "parentId", "timestamp"]
HEX8 = re.compile(r"^[0-9a-f]{8}$")
WHEN = "2026-03-04T05:06:07.089Z"


def _session(sb: SessionBuilder) -> Session:
    return load_session_bytes(sb.to_bytes(), "s.jsonl")


def _with_system() -> SessionBuilder:
    sb = SessionBuilder()
    sb.message(
        {
            "role": "system",
            "content": "Base prompt.",
            "sections": {"preamble": "You help.", "cwd": "/repo"},
            "toolsAdded": [{"name": "read", "description": "Read a file", "parameters": {}}],
            "timestamp": 111,
        }
    )
    sb.user("hello")
    sb.assistant("hi", usage=500)
    sb.message({"role": "system", "content": "Later rule.", "sections": {"cwd": None}, "timestamp": 222})
    sb.user("more")
    sb.assistant("ok", usage=900)
    return sb


def _build(session: Session, leaf: str | None = None, **kw):
    branch = get_branch(session, leaf)
    args = {
        "summary": "SUMMARY",
        "first_kept_entry_id": branch.entries[-2].id,
        "tokens_before": 1234,
        "details": {"readFiles": [], "modifiedFiles": []},
        "from_hook": True,
        "clock": fixed_clock(WHEN),
        "new_id": seeded_ids("test"),
    }
    args.update(kw)
    return build_compaction_entries(session, branch, **args)


def test_compaction_entry_has_pis_key_order_with_every_optional_field():
    session = _session(_with_system())
    usage = {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 3}
    entry = _build(session, usage=usage)[0]
    assert list(entry) == COMPACTION_KEYS
    assert entry["type"] == "compaction"
    assert entry["usage"] == usage
    assert entry["tokensBefore"] == 1234
    assert entry["fromHook"] is True


def test_undefined_fields_are_left_out_like_json_stringify_drops_them():
    session = _session(simple_session(turns=3))
    entry = _build(session, details=None, usage=None)[0]
    assert list(entry) == [k for k in COMPACTION_KEYS if k not in ("details", "usage", "systemMessage")]
    line = serialize_entry(entry)
    assert b'"usage"' not in line.encode() and b"undefined" not in line.encode()


def test_system_message_is_the_replayed_prompt_stamped_with_the_entry_time():
    session = _session(_with_system())
    entry = _build(session)[0]
    system = entry["systemMessage"]
    assert system["role"] == "system"
    assert system["content"] == "Base prompt.\n\nLater rule."
    assert system["sections"] == {"preamble": "You help."}  # "cwd" removed by the later patch
    assert [t["name"] for t in system["toolsAdded"]] == ["read"]
    assert system["timestamp"] == epoch_ms(datetime(2026, 3, 4, 5, 6, 7, 89000, tzinfo=UTC))
    assert list(system) == ["role", "content", "sections", "toolsAdded", "timestamp"]


def test_no_system_message_key_when_the_branch_has_no_system_prompt():
    entry = _build(_session(simple_session(turns=3)))[0]
    assert "systemMessage" not in entry


def test_parent_is_the_branch_leaf_and_reminder_is_a_hidden_child_of_the_compaction():
    session = _session(simple_session(turns=3))
    compaction, reminder = _build(session, reminder="Re-read files before editing.")
    assert compaction["parentId"] == session.leaf.id
    assert list(reminder) == CUSTOM_MESSAGE_KEYS
    assert reminder["type"] == "custom_message"
    assert reminder["customType"] == REORIENTATION_CUSTOM_TYPE
    assert reminder["content"] == "Re-read files before editing."
    assert reminder["display"] is False
    assert reminder["details"] == {"compactionId": compaction["id"]}
    assert reminder["parentId"] == compaction["id"]
    assert reminder["id"] != compaction["id"]


def test_leaf_on_another_branch_becomes_the_parent():
    sb = simple_session(turns=2)
    fork_point = sb.entries[4]["id"]
    side = sb.user("side question", parent=fork_point)
    sb.assistant("side answer")
    main_tip = sb.entries[-3]["id"]  # last entry of the main line, before the side branch
    session = _session(sb)
    assert session.leaf.id != main_tip and side in session.by_id
    compaction = _build(session, leaf=main_tip)[0]
    assert compaction["parentId"] == main_tip


def test_retain_none_stores_the_compactions_own_id():
    entry = _build(_session(simple_session(turns=2)), first_kept_entry_id=None)[0]
    assert entry["firstKeptEntryId"] == entry["id"]


def test_ids_are_8_hex_and_never_reuse_an_id_of_the_file():
    first = seeded_ids("collide")(set())
    sb = simple_session(turns=2)
    sb.add({"type": "label", "id": first, "targetId": sb.entries[0]["id"], "label": "taken"})
    session = _session(sb)
    assert first in session.by_id
    entries = _build(session, reminder="r", new_id=seeded_ids("collide"))
    ids = [e["id"] for e in entries]
    assert all(HEX8.match(i) for i in ids)
    assert first not in ids
    assert len(set(ids)) == 2
    taken = set(session.by_id)
    assert HEX8.match(random_id(taken)) and random_id(taken) not in taken


def test_same_inputs_give_identical_bytes():
    session = _session(_with_system())
    a = serialize_entries(_build(session, reminder="r", new_id=seeded_ids("same")))
    b = serialize_entries(_build(session, reminder="r", new_id=seeded_ids("same")))
    c = serialize_entries(_build(session, reminder="r", new_id=seeded_ids("other")))
    assert a == b
    assert a != c


@pytest.mark.parametrize(
    ("moment", "expected"),
    [
        (datetime(2026, 1, 2, 3, 4, 5, 678999, tzinfo=UTC), "2026-01-02T03:04:05.678Z"),
        (datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC), "2026-01-02T03:04:05.000Z"),
        (datetime(2026, 1, 2, 5, 4, 5, 1000, tzinfo=timezone(timedelta(hours=2))), "2026-01-02T03:04:05.001Z"),
    ],
)
def test_timestamps_are_iso_with_milliseconds_and_z_like_pi(moment, expected):
    assert iso_timestamp(moment) == expected
    assert fixed_clock(expected)() == fixed_clock(expected)()
    as_datetime = datetime.fromisoformat(expected.replace("Z", "+00:00"))
    assert epoch_ms(fixed_clock(expected)()) == round(as_datetime.timestamp() * 1000)


def test_serialised_entry_is_exactly_one_line_even_with_line_separators_in_the_text():
    summary = 'line one\nline two\r\n\u2028para\u2029 émoji 😀 "quoted" \\ tab\t'
    entries = _build(_session(simple_session(turns=2)), summary=summary, reminder="r\nr")
    lines = serialize_entries(entries)
    data = "".join(lines).encode()
    assert data.count(b"\n") == 2 and data.endswith(b"\n")
    assert orjson.loads(lines[0])["summary"] == summary
    # JSON.stringify: no spaces after separators, non-ASCII written as is.
    assert lines[0].startswith('{"type":"compaction","id":')
    assert "😀" in lines[0] and "é" in lines[0]


def test_earlier_reminders_are_omitted_by_context_edits_chained_before_the_new_reminder():
    session = _session(simple_session(turns=3))
    targets = [session.entries[3].id, session.entries[5].id]
    entries = _build(session, reminder="new reminder", omit_entry_ids=targets)
    compaction, *edits, reminder = entries
    assert [e["type"] for e in edits] == ["context_edit", "context_edit"]
    assert [list(e) for e in edits] == [["type", "id", "parentId", "timestamp", "targetId", "replacement"]] * 2
    assert [e["targetId"] for e in edits] == targets
    assert all(e["replacement"] is None for e in edits)
    assert edits[0]["parentId"] == compaction["id"] and edits[1]["parentId"] == edits[0]["id"]
    assert reminder["parentId"] == edits[1]["id"]
    assert reminder["details"] == {"compactionId": compaction["id"]}
    assert len({e["id"] for e in entries}) == 4
