"""Golden tests: picompact's numbers against Pi 1.6's own answers for the bundled sessions.

The expected files were produced by Pi's own functions (see fixtures/pi/NOTICE.md). v1 files get random ids from
Pi, so positions are compared, never ids.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from pi_compact.pi.plan import plan_compaction, should_compact
from pi_compact.pi.projection import build_projection
from pi_compact.session import get_branch, load_session
from tests.helpers.cli import run
from tests.helpers.fixtures import PI_FIXTURES

SESSIONS = sorted(p.stem for p in PI_FIXTURES.glob("*.jsonl"))
SETTINGS = {"analyze_default": (200000, 16384, 20000), "analyze_small_window": (32000, 16384, 8000)}


def expected(name: str) -> dict[str, Any]:
    return orjson.loads((PI_FIXTURES / "expected" / f"{name}.json").read_bytes())


def session_path(name: str) -> Path:
    return PI_FIXTURES / f"{name}.jsonl"


@pytest.mark.parametrize("name", SESSIONS)
def test_branch_and_leaf_match_pi(name: str) -> None:
    want = expected(name)["analyze_default"]["result"]
    branch = get_branch(load_session(session_path(name)))
    assert len(branch) == want["branchLength"]
    assert branch.leaf is not None
    assert branch.leaf.line == want["leaf"]["line"]
    assert [e.line for e in branch.entries] == [b["line"] for b in want["branch"]]


@pytest.mark.parametrize("name", SESSIONS)
def test_projection_and_per_entry_tokens_match_pi(name: str) -> None:
    want = expected(name)["analyze_default"]["result"]["projectionEntries"]
    projection = build_projection(get_branch(load_session(session_path(name))))
    got = [(pe.entry.line, len(pe.messages), pe.tokens) for pe in projection.entries]
    assert got == [(w["line"], w["n"], w["tokens"]) for w in want]


@pytest.mark.parametrize("name", SESSIONS)
def test_context_roles_match_pi(name: str) -> None:
    want = expected(name)["context"]["result"]
    projection = build_projection(get_branch(load_session(session_path(name))))
    assert [m["role"] for m in projection.messages] == want["roles"]


@pytest.mark.parametrize("name", SESSIONS)
@pytest.mark.parametrize("setting", sorted(SETTINGS))
def test_context_tokens_threshold_and_cut_match_pi(name: str, setting: str) -> None:
    window, reserve, keep = SETTINGS[setting]
    want = expected(name)[setting]["result"]
    branch = get_branch(load_session(session_path(name)))
    plan = plan_compaction(branch, keep)
    assert plan.context.tokens == want["contextEstimate"]["tokens"]
    assert (plan.context.method == "usage+estimate") == bool(want["contextEstimate"]["usageTrusted"])
    assert window - reserve == want["settings"]["threshold"]
    assert should_compact(plan.context.tokens, window, reserve) == want["shouldCompact"]
    prep = want["preparation"]
    if prep is None:
        assert not plan.can_compact
        return
    assert plan.can_compact
    assert branch.position(plan.first_kept.id) == prep["firstKeptBranchIndex"]
    assert plan.cut.is_split_turn == prep["isSplitTurn"]
    if prep["isSplitTurn"]:
        turn_entry = plan.entries[plan.cut.turn_start_index].entry
        assert branch.position(turn_entry.id) == prep["turnStartBranchIndex"]
    assert len(plan.messages_to_summarize) == prep["messagesToSummarizeCount"]
    assert len(plan.turn_prefix_messages) == prep["turnPrefixMessageCount"]
    assert [m["role"] for m in plan.messages_to_summarize] == prep["messagesToSummarizeRoleSeq"]
    assert plan.read_files == prep["computeFileLists"]["readFiles"]
    assert plan.modified_files == prep["computeFileLists"]["modifiedFiles"]
    assert plan.context.tokens == prep["tokensBefore"]


@pytest.mark.parametrize("name", ["gen-split-turn-101", "gen-context-edits-101", "pi-large-session"])
def test_check_json_agrees_with_pi_through_the_cli(name: str) -> None:
    want = expected(name)["analyze_small_window"]["result"]
    result = run("check", session_path(name), "--context-window", "32000", "--keep-recent-tokens", "8000", "--json")
    assert result.code == (1 if want["shouldCompact"] else 0), result.stderr
    data = result.json
    assert data["context_tokens"] == want["contextEstimate"]["tokens"]
    assert data["threshold"] == want["settings"]["threshold"]
    assert data["should_compact"] == want["shouldCompact"]
    assert data["branch_length"] == want["branchLength"]
    prep = want["preparation"]
    assert data["first_kept_index"] == prep["firstKeptBranchIndex"]
    assert data["is_split_turn"] == prep["isSplitTurn"]
    assert data["turn_start_index"] == (prep["turnStartBranchIndex"] if prep["isSplitTurn"] else None)
    assert data["read_files"] == prep["computeFileLists"]["readFiles"]
    assert data["modified_files"] == prep["computeFileLists"]["modifiedFiles"]
    assert data["tokens_before"] == prep["tokensBefore"]


@pytest.mark.parametrize("name", SESSIONS)
def test_check_resolves_the_context_window_of_every_fixture_model(name: str) -> None:
    """No flag: the window comes from the bundled model table for the branch's current model."""
    result = run("check", session_path(name), "--json")
    assert result.code in (0, 1), result.stderr
    data = result.json
    model = expected(name)["context"]["result"]["model"]
    assert data["model"] == {"provider": model["provider"], "id": model["modelId"]}
    assert data["context_window"] > 0
    assert data["context_window_source"] == f"model table ({model['provider']}/{model['modelId']})"
