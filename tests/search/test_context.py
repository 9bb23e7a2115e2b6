"""The context view agrees with what Pi 1.6 computes for each fixture (tests/fixtures/pi/expected)."""

from __future__ import annotations

import json

import pytest

from pi_compact.search import build_context_view
from pi_compact.session.load import load_session
from pi_compact.session.tree import get_branch
from tests.helpers.fixtures import PI_FIXTURES
from tests.helpers.sessions import SessionBuilder

EXPECTED = sorted((PI_FIXTURES / "expected").glob("*.json"))


@pytest.mark.parametrize("expected_path", EXPECTED, ids=[p.stem for p in EXPECTED])
def test_context_view_matches_pi(expected_path) -> None:
    pi = json.loads(expected_path.read_text())["context"]["result"]
    session = load_session(PI_FIXTURES / f"{expected_path.stem}.jsonl")
    view = build_context_view(session)
    seen = [m for m in view.messages if m.position >= 0]
    assert len(seen) == pi["count"]
    assert [m.role for m in seen] == pi["roles"]
    assert [m.tokens for m in seen] == [m["tokens"] for m in pi["messages"]]
    assert [m.entry_id for m in seen] == [session.entries[m["src"]].id for m in pi["messages"]]
    assert [m.position for m in seen] == list(range(len(seen)))
    assert view.context_tokens == pi["estimateProjectedContextTokens"]["tokens"]
    assert view.estimated_tokens == sum(m["tokens"] for m in pi["messages"])
    assert view.branch_length == pi["branchLength"]
    compaction = pi["latestCompaction"]
    if compaction:
        # Compare by position: a v1 file's ids are made up on load (Pi's and picompact's differ).
        assert view.compaction_id == session.entries[compaction["entry"]["index"]].id
        first_kept = compaction.get("firstKeptEntry")
        if first_kept:
            assert view.first_kept_id == session.entries[first_kept["index"]].id
        assert seen[0].segment == "summary" and seen[-1].segment in ("kept", "new")
        kept = [m.entry_id for m in seen if m.segment == "kept"]
        if compaction["firstKeptFoundBeforeCompaction"] and kept:
            assert kept[0] == view.first_kept_id
        # The segments come in order: summary, kept, new.
        order = [m.segment for m in seen]
        assert order == sorted(order, key=["summary", "kept", "new"].index)
    else:
        assert view.compaction_id is None and {m.segment for m in seen} == {"history"}


def test_omitted_entries_are_listed_but_cost_nothing() -> None:
    sb = SessionBuilder()
    sb.user("keep me")
    dropped = sb.user("drop me " * 100)
    sb.add({"type": "context_edit", "targetId": dropped, "replacement": None})
    replaced = sb.user("replace me " * 100)
    edit = sb.add({"type": "context_edit", "targetId": replaced, "replacement": {"content": "short"}})
    from pi_compact.session.load import load_session_bytes

    view = build_context_view(get_branch(load_session_bytes(sb.to_bytes())))
    rows = {m.entry_id: m for m in view.messages}
    assert rows[dropped].position == -1 and rows[dropped].tokens == 0 and rows[dropped].edit == "omitted"
    assert rows[replaced].edit == "replaced" and rows[replaced].edit_id == edit
    assert rows[replaced].tokens == 2 and rows[replaced].preview == "short"
    assert view.to_json()["message_count"] == 2
