"""``picompact audit``: agreement with ``check``, Pi's estimate at every reply, trust, costs, drift, the plot."""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_compact.ops.audit import audit_session
from pi_compact.ops.check import CheckOptions
from pi_compact.pi.messages import current_system_message
from pi_compact.pi.projection import build_projection
from pi_compact.pi.tokens import estimate_tokens
from pi_compact.session import load_session
from pi_compact.session.tree import Branch
from tests.helpers.cli import run
from tests.helpers.fixtures import PI_FIXTURES
from tests.helpers.sessions import SessionBuilder, simple_session

FIXTURES = sorted(PI_FIXTURES.glob("*.jsonl"))
WINDOW = ("--context-window", "200000")


def _estimate_from_scratch(branch: Branch, position: int) -> int:
    """Pi's estimate of the context at ``position``, projected from nothing (what audit keeps up to date)."""
    projection = build_projection(Branch(branch.session, branch.entries[: position + 1]))
    messages = projection.messages
    system = current_system_message(messages)
    return (estimate_tokens(system) if system else 0) + sum(
        estimate_tokens(m) for m in messages if m.get("role") != "system"
    )


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: p.name)
def test_leaf_figures_are_checks(fixture: Path) -> None:
    checked = run("check", fixture, "--json", *WINDOW).json
    audited = run("audit", fixture, "--json", *WINDOW)
    assert audited.code == 0, audited.stderr
    leaf = audited.json["leaf"]
    for key in ("context_tokens", "context_tokens_method", "usage_entry_id", "threshold", "should_compact"):
        assert leaf[key] == checked[key], key
    assert leaf["entry_id"] == checked["leaf_id"]
    used = [r for r in audited.json["replies"] if r["used_by_check"]]
    if checked["context_tokens_method"] == "usage+estimate":
        assert [r["entry_id"] for r in used] == [checked["usage_entry_id"]]
        assert used[0]["usage"]["total"] == checked["usage_tokens"]
        assert used[0]["trusted"]
    else:
        assert used == []
        # Estimate only: the last reply's estimate plus what follows it is check's figure.
        if audited.json["replies"] and audited.json["replies"][-1]["branch_index"] == checked["branch_length"] - 1:
            assert audited.json["replies"][-1]["estimate"] == checked["context_tokens"]


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: p.name)
def test_estimate_at_every_reply_and_marker_is_pis_projection(fixture: Path) -> None:
    result = audit_session(load_session(fixture), CheckOptions(context_window=200_000), cl100k=False)
    branch = result.branch
    for reply in result.replies:
        assert reply.estimate == _estimate_from_scratch(branch, reply.branch_index), reply.entry_id
    for marker in result.markers:
        assert marker.estimate_after == _estimate_from_scratch(branch, marker.branch_index), marker.entry_id


def test_cl100k_at_the_leaf_reply_is_checks_cl100k() -> None:
    fixture = PI_FIXTURES / "gen-small-101.jsonl"
    checked = run("check", fixture, "--json", "--tokenizer", "cl100k", *WINDOW).json
    replies = run("audit", fixture, "--json", *WINDOW).json["replies"]
    assert replies[-1]["entry_id"] == checked["leaf_id"]
    assert replies[-1]["cl100k"] == checked["context_tokens_cl100k"]
    assert all(r["cl100k"] is None for r in run("audit", fixture, "--json", "--no-cl100k", *WINDOW).json["replies"])


def _trust_session() -> SessionBuilder:
    sb = simple_session(turns=4, size=200)
    sb.add({"type": "compaction", "summary": "so far", "firstKeptEntryId": sb.entries[9]["id"], "tokensBefore": 4000})
    sb.user("after the compaction")
    sb.assistant("aborted reply", usage=500, stop="aborted")
    sb.assistant("no usage here")
    sb.assistant("zero", usage=0)
    sb.assistant("fresh", usage=2500)
    return sb


def test_whether_pi_trusts_each_usage(tmp_path: Path) -> None:
    sb = _trust_session()
    path = sb.write(tmp_path / "s.jsonl")
    data = run("audit", path, "--json", *WINDOW).json
    reasons = [r["reason"] for r in data["replies"]]
    compaction = next(e["id"] for e in sb.entries if e["type"] == "compaction")
    # simple_session: a tool-calling reply without usage, then one with usage, four times
    assert reasons[:8] == ["no usage", f"stale: recorded before the compaction {compaction}"] * 4
    assert reasons[8:] == ["aborted", "no usage", "zero usage", "trusted"]
    assert [r["used_by_check"] for r in data["replies"]] == [False] * 11 + [True]
    marker = data["markers"][0]
    assert marker["kind"] == "compaction" and marker["after_reply"] == 8 and marker["tokens_before"] == 4000
    assert marker["estimate_after"] < marker["estimate_before"]
    text = run("audit", path, *WINDOW).stdout
    assert f"-- compaction {compaction}" in text
    assert "yes (check starts here)" in text and "no: aborted" in text


def test_costs_are_summed_per_model(tmp_path: Path) -> None:
    sb = SessionBuilder()
    costs = {"anthropic/claude-sonnet-4-5": [0.01, 0.02], "openai/gpt-5.1-codex": [0.5]}
    for name, values in costs.items():
        provider, model = name.split("/")
        for value in values:
            sb.user("q")
            sb.assistant("a", usage=100, model=(provider, model))
            sb.entries[-1]["message"]["usage"]["cost"]["total"] = value
    sb.add(
        {
            "type": "usage",
            "kind": "cache_warm",
            "provider": "anthropic",
            "model": "claude-sonnet-4-5",
            "usage": {
                "input": 0,
                "output": 0,
                "cacheRead": 50,
                "cacheWrite": 0,
                "totalTokens": 50,
                "cost": {"total": 0.015},
            },
        }
    )
    sb.user("on a side branch", parent=sb.entries[0]["id"])
    sb.assistant("side", usage=10)
    sb.entries[-1]["message"]["usage"]["cost"]["total"] = 1.0
    path = sb.write(tmp_path / "s.jsonl")
    data = run("audit", path, "--json", "--leaf", sb.entries[-3]["id"], *WINDOW).json
    by_model = {c["model"]: c for c in data["costs"]}
    assert by_model["anthropic/claude-sonnet-4-5"]["cost"] == pytest.approx(0.045)
    assert by_model["anthropic/claude-sonnet-4-5"]["records"] == 3
    assert by_model["openai/gpt-5.1-codex"]["cost"] == pytest.approx(0.5)
    assert data["cost_total"] == pytest.approx(0.545)
    assert data["cost_all_branches"] == pytest.approx(1.545)


def test_drift_names_the_image_the_estimate_underrates(tmp_path: Path) -> None:
    sb = SessionBuilder()
    sb.user("start")
    sb.assistant("ok", usage=1000)
    sb.user("small one")
    sb.assistant("ok", usage=1100)
    sb.user([{"type": "text", "text": "look at this"}, {"type": "image", "data": "AAAA", "mimeType": "image/png"}])
    image_entry = sb.leaf
    sb.assistant("I see it", usage=9000)  # the provider counted the image far above Pi's 1,200
    sb.user("thanks")
    sb.assistant("welcome", usage=9100)
    path = sb.write(tmp_path / "s.jsonl")
    drift = run("audit", path, "--json", *WINDOW).json["drift"]
    assert drift[0]["from_reply"] == 2 and drift[0]["to_reply"] == 3
    assert drift[0]["recorded_growth"] == 7900
    biggest = max(drift[0]["entries"], key=lambda e: e["estimate"])
    assert biggest["entry_id"] == image_entry and biggest["images"] == 1
    assert abs(drift[0]["drift"]) == max(abs(d["drift"]) for d in drift)
    assert len(run("audit", path, "--json", "--top", "1", *WINDOW).json["drift"]) == 1


def test_plot_shows_threshold_and_each_compaction(tmp_path: Path) -> None:
    sb = _trust_session()
    sb.add({"type": "compaction", "summary": "again", "firstKeptEntryId": sb.leaf, "tokensBefore": 3000})
    sb.user("more")
    sb.assistant("yes", usage=3000)
    path = sb.write(tmp_path / "s.jsonl")
    result = run("audit", path, "--plot", "--context-window", "20000", "--reserve-tokens", "17000")
    assert result.code == 0, result.stderr
    lines = result.stdout.splitlines()
    threshold_rows = [ln for ln in lines if ln.lstrip().startswith("3,000 ┤")]
    assert len(threshold_rows) == 1 and "─" in threshold_rows[0]
    axis = next(ln for ln in lines if "▲" in ln)
    assert axis.count("▲") == 2
    assert "threshold 3,000" in result.stdout and "▲ compaction" in result.stdout
    assert any("█" in ln for ln in lines)


def test_plot_and_json_clash(tmp_path: Path) -> None:
    path = simple_session().write(tmp_path / "s.jsonl")
    result = run("audit", path, "--plot", "--json")
    assert result.code == 2 and "--plot" in result.stderr


def test_errors_name_the_file(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"not a session\n")
    result = run("audit", path)
    assert result.code == 2 and str(path) in result.stderr
    assert run("audit", PI_FIXTURES / "gen-small-101.jsonl", "--leaf", "nope0000").code == 2


def test_default_session_is_the_newest_for_the_directory(tmp_path: Path, agent: Path) -> None:
    from pi_compact.pi.sessions import session_dir_for_cwd

    project = tmp_path / "proj"
    project.mkdir()
    directory = session_dir_for_cwd(project)
    directory.mkdir(parents=True)
    sb = simple_session(turns=2)
    sb.write(directory / "2026-01-01T00-00-00-000Z_x.jsonl")
    data = run("audit", "--json", *WINDOW, cwd=project).json
    assert data["leaf"]["entry_id"] == sb.leaf and len(data["replies"]) == 4


def test_json_document_has_the_declared_keys() -> None:
    from pi_compact.cli.schema import DOCUMENTS, keys

    doc = run("audit", PI_FIXTURES / "gen-multi-compaction-101.jsonl", "--json", *WINDOW).json
    assert list(doc) == keys(DOCUMENTS["audit"])
    assert doc["markers"] and doc["drift"] and doc["costs"]


def test_costs_are_labelled_by_the_model_that_answered_as_pis_session_labels_them(tmp_path: Path) -> None:
    """Pi's /session keys usage by ``provider/(responseModel ?? model)``: a router's ``auto`` shows as the model it
    resolved to; a reply without responseModel (or with null) by the model asked for."""
    sb = SessionBuilder()
    for response_model in ("anthropic/claude-sonnet-4.5", "anthropic/claude-sonnet-4.5", None, "absent"):
        sb.user("q")
        sb.assistant("a", usage=100, model=("openrouter", "auto"))
        message = sb.entries[-1]["message"]
        message["usage"]["cost"]["total"] = 0.25
        if response_model != "absent":
            message["responseModel"] = response_model
    path = sb.write(tmp_path / "s.jsonl")
    data = run("audit", path, "--json", "--no-cl100k", *WINDOW).json
    assert [(c["model"], c["records"]) for c in data["costs"]] == [
        ("openrouter/anthropic/claude-sonnet-4.5", 2),
        ("openrouter/auto", 2),
    ]
    assert [r["model"] for r in data["replies"]] == [
        "openrouter/anthropic/claude-sonnet-4.5",
        "openrouter/anthropic/claude-sonnet-4.5",
        "openrouter/auto",
        "openrouter/auto",
    ]
    text = run("audit", path, "--no-cl100k", *WINDOW).stdout
    assert "  openrouter/anthropic/claude-sonnet-4.5: 2 records," in text


def test_a_model_with_neither_tokens_nor_cost_is_not_listed(tmp_path: Path) -> None:
    """Pi's /session lists a model only when its cost or its tokens (input + output + cache read + cache write)
    are above zero."""
    sb = SessionBuilder()
    sb.user("q")
    sb.assistant("a", usage=100, model=("anthropic", "claude-sonnet-4-5"))  # tokens, no cost: listed
    sb.user("q")
    sb.assistant("a", usage=0, model=("openai", "gpt-5.1-codex"))  # neither: not listed
    sb.user("q")
    sb.assistant("a", usage=0, model=("google", "gemini-2.5-pro"))  # a cost without tokens: listed
    sb.entries[-1]["message"]["usage"]["cost"]["total"] = 0.5
    sb.user("q")
    sb.assistant("a", usage=0, model=("xai", "grok-4"))  # only totalTokens, which Pi's sum leaves out: not listed
    sb.entries[-1]["message"]["usage"]["totalTokens"] = 40
    path = sb.write(tmp_path / "s.jsonl")
    result = run("audit", path, "--json", "--no-cl100k", *WINDOW)
    assert result.code == 0, result.stderr
    assert [c["model"] for c in result.json["costs"]] == ["google/gemini-2.5-pro", "anthropic/claude-sonnet-4-5"]
    assert result.json["cost_total"] == pytest.approx(0.5)
    assert len(result.json["replies"]) == 4  # the replies themselves are all shown
    text = run("audit", path, "--no-cl100k", *WINDOW).stdout
    assert "openai/gpt-5.1-codex:" not in text and "xai/grok-4:" not in text
    assert "  anthropic/claude-sonnet-4-5: 1 record," in text
