"""``picompact coverage``: what a compaction keeps readable, per category, with grep recovering the rest."""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_compact.ops.coverage import measure_coverage
from pi_compact.session import load_session
from tests.helpers.cli import run
from tests.helpers.fixtures import PI_FIXTURES
from tests.helpers.sessions import SessionBuilder

COMPACTED_FIXTURES = [
    p for p in sorted(PI_FIXTURES.glob("*.jsonl")) if any(e.type == "compaction" for e in load_session(p).entries)
]
LONG_REQUEST = (
    "Please refactor the payment module so that every currency conversion goes through one function, and keep "
    "the public API unchanged for the mobile client that still calls convert_legacy."
)


def work_session() -> SessionBuilder:
    """Turns with user requests, file edits, a failed command and decisions, then a short tail."""
    sb = SessionBuilder(cwd="/repo")
    sb.add({"type": "model_change", "provider": "anthropic", "modelId": "claude-sonnet-4-5"})
    sb.user(LONG_REQUEST)
    sb.assistant(
        "I'll move the conversion into src/money.py instead of keeping three copies. Reading first.",
        tool_calls=[("c1", "read", {"path": "/repo/src/pay.py"})],
    )
    sb.tool_result("c1", "read", "def pay(): ...\n" + "x" * 3000)
    sb.assistant(
        "Writing it.", tool_calls=[("c2", "write", {"path": "/repo/src/money.py", "content": "def convert(): ..."})]
    )
    sb.tool_result("c2", "write", "ok")
    sb.assistant("Running the tests.", tool_calls=[("c3", "bash", {"command": "pytest -q"})])
    sb.tool_result(
        "c3",
        "bash",
        "collected 12 items\nE   ImportError: cannot import name 'convert_legacy' from 'money'\n",
        is_error=True,
    )
    sb.assistant("We decided to keep convert_legacy as a thin wrapper around convert.", usage=4000)
    sb.user("sounds good, also edit the changelog")
    sb.assistant("Editing.", tool_calls=[("c4", "edit", {"path": "/repo/CHANGELOG.md", "edits": []})])
    sb.tool_result("c4", "edit", "ok")
    sb.assistant("Done with the changelog.", usage=5000)
    for i in range(3):
        sb.user(f"tail question {i} " + "t" * 2000)
        sb.assistant(f"tail answer {i} " + "a" * 2000, usage=6000 + i * 1000)
    return sb


def test_a_verbatim_checkpoint_keeps_users_decisions_and_files(tmp_path: Path) -> None:
    source = work_session().write(tmp_path / "s.jsonl")
    copy = tmp_path / "compacted.jsonl"
    done = run(
        "compact",
        source,
        "--mode",
        "verbatim",
        "--output",
        copy,
        "--context-window",
        "200000",
        "--keep-recent-tokens",
        "2500",
    )
    assert done.code == 0, done.stderr
    data = run("coverage", copy, "--json").json
    assert data["kind"] == "picompact verbatim checkpoint"
    cats = data["categories"]
    assert cats["user_messages"]["total"] >= 2 and cats["user_messages"]["score"] == 1.0
    assert cats["modified_files"]["total"] == 2 and cats["modified_files"]["score"] == 1.0
    assert cats["decisions"]["total"] == 2 and cats["decisions"]["score"] == 1.0
    # Tool outputs are removed from a verbatim checkpoint, but a failed one leaves its error line as a fact.
    failed = cats["failed_tool_results"]
    assert failed["total"] == 1 and failed["missing"] == 0 and failed["score"] == 1.0
    assert data["missing"] == []


def _with_summary(summary: str) -> tuple[SessionBuilder, str]:
    sb = work_session()
    kept = sb.entries[13]["id"]  # the first tail question
    sb.add(
        {
            "type": "compaction",
            "summary": summary,
            "firstKeptEntryId": kept,
            "tokensBefore": 9000,
            "details": {
                "readFiles": ["/repo/src/pay.py"],
                "modifiedFiles": ["/repo/src/money.py", "/repo/CHANGELOG.md"],
            },
        }
    )
    return sb, kept


def test_a_summary_scores_partial_and_missing_items_with_entry_ids(tmp_path: Path) -> None:
    summary = (
        "## Goal\n" + LONG_REQUEST[:70] + " (and more)\n## Progress\nEdited src/money.py.\n"
        "## Key Decisions\nKeep a wrapper.\n"
    )
    sb, _ = _with_summary(summary)
    path = sb.write(tmp_path / "s.jsonl")
    data = run("coverage", path, "--json").json
    assert data["kind"].startswith("LLM summary")
    users = {i["entry_id"]: i for i in data["items"] if i["category"] == "user_messages"}
    first_user, second_user = [e["id"] for e in sb.entries if e.get("message", {}).get("role") == "user"][:2]
    assert users[first_user]["status"] == "shortened"  # its first 70 characters are there, of 186
    assert 0.3 < users[first_user]["kept_share"] < 0.4
    assert users[second_user]["status"] == "missing" and users[second_user]["kept_share"] == 0
    files = {i["text"]: i["status"] for i in data["items"] if i["category"] == "modified_files"}
    assert files == {"/repo/src/money.py": "found", "/repo/CHANGELOG.md": "missing"}
    cats = data["categories"]
    assert cats["modified_files"]["score"] == 0.5
    assert cats["decisions"]["missing"] == 2
    assert all(m["recovered"] for m in data["missing"])
    ids = {m["entry_id"] for m in data["missing"]}
    assert second_user in ids
    text = run("coverage", path).stdout
    assert "user messages" in text and f"{second_user} (line" in text and "[grep finds it]" in text


def test_a_compaction_keeping_everything_relevant_scores_full(tmp_path: Path) -> None:
    sb0 = work_session()
    texts = [
        m["text"]
        for e in sb0.entries
        if e.get("message", {}).get("role") in ("user", "assistant")
        for m in (e["message"]["content"] if isinstance(e["message"]["content"], list) else [])
        if m.get("type") == "text"
    ]
    users = [e["message"]["content"] for e in sb0.entries if e.get("message", {}).get("role") == "user"]
    commands = [
        block["arguments"]["command"]
        for e in sb0.entries
        if e.get("message", {}).get("role") == "assistant" and isinstance(e["message"]["content"], list)
        for block in e["message"]["content"]
        if block.get("type") == "toolCall" and "command" in block.get("arguments", {})
    ]
    summary = "\n".join(
        [
            *users,
            *texts,
            *commands,
            "/repo/src/money.py /repo/CHANGELOG.md",
            "ImportError: cannot import name 'convert_legacy' from 'money'",
        ]
    )
    sb, _ = _with_summary(summary)
    data = run("coverage", sb.write(tmp_path / "s.jsonl"), "--json").json
    assert data["missing"] == []
    assert all(c["score"] in (1.0, None) for c in data["categories"].values())


@pytest.mark.parametrize("fixture", COMPACTED_FIXTURES, ids=lambda p: p.name)
def test_grep_recovers_every_missing_item_of_real_sessions(fixture: Path) -> None:
    result = measure_coverage(load_session(fixture))
    assert result.items
    assert all(i.recovered for i in result.missing), [i for i in result.missing if not i.recovered][:3]


def test_compaction_option_and_leaf(tmp_path: Path) -> None:
    sb, _ = _with_summary("first summary")
    first = sb.leaf
    sb.user("after the first compaction " + "u" * 3000)
    sb.assistant("reply", usage=3000)
    sb.add({"type": "compaction", "summary": "second", "firstKeptEntryId": sb.leaf, "tokensBefore": 4000})
    second = sb.leaf
    path = sb.write(tmp_path / "s.jsonl")
    assert run("coverage", path, "--json").json["compaction_id"] == second
    assert run("coverage", path, "--json", "--compaction", first).json["compaction_id"] == first
    assert run("coverage", path, "--json", "--leaf", first).json["compaction_id"] == first


def test_bad_input_exits_2_naming_the_file(tmp_path: Path) -> None:
    sb = work_session()
    path = sb.write(tmp_path / "s.jsonl")
    none = run("coverage", path)
    assert none.code == 2 and str(path) in none.stderr and "no compaction" in none.stderr
    not_compaction = run("coverage", path, "--compaction", sb.entries[2]["id"])
    assert not_compaction.code == 2 and "not a compaction" in not_compaction.stderr
    assert f"{path}:" in not_compaction.stderr
    unknown = run("coverage", path, "--compaction", "nope0000", "--json")
    assert unknown.code == 2 and "error" in unknown.json


def test_json_keys(tmp_path: Path) -> None:
    sb, _ = _with_summary("short")
    data = run("coverage", sb.write(tmp_path / "s.jsonl"), "--json").json
    assert data["schema_version"] == 1
    assert set(data) >= {
        "session",
        "compaction_id",
        "compaction_line",
        "kind",
        "first_kept_entry_id",
        "span_entries",
        "context_chars",
        "categories",
        "missing",
        "items",
    }
    assert set(data["categories"]) == {
        "user_messages",
        "rules",
        "values",
        "decisions",
        "progress",
        "modified_files",
        "failed_tool_results",
    }
    assert set(data["categories"]["decisions"]) == {
        "category",
        "total",
        "present",
        "shortened",
        "shortened_share",
        "trace",
        "partial",
        "missing",
        "recovered",
        "score",
        "score_any",
    }
    assert set(data["items"][0]) == {
        "category",
        "entry_id",
        "line",
        "text",
        "status",
        "kept_share",
        "needle",
        "recovered",
    }


def test_default_session_is_the_newest_for_the_directory(tmp_path: Path, agent: Path) -> None:
    from pi_compact.pi.sessions import session_dir_for_cwd

    project = tmp_path / "proj"
    project.mkdir()
    directory = session_dir_for_cwd(project)
    directory.mkdir(parents=True)
    sb, _ = _with_summary("nothing much")
    sb.write(directory / "2026-01-01T00-00-00-000Z_x.jsonl")
    assert run("coverage", "--json", cwd=project).json["compaction_id"] == sb.leaf


def test_json_document_has_the_declared_keys() -> None:
    from pi_compact.cli.schema import DOCUMENTS, keys

    doc = run("coverage", PI_FIXTURES / "pi-before-compaction.jsonl", "--json").json
    assert list(doc) == keys(DOCUMENTS["coverage"])


def test_v37_a_dry_run_reports_the_coverage_of_what_it_would_write(tmp_path: Path) -> None:
    source = work_session().write(tmp_path / "s.jsonl")
    before = source.read_bytes()
    flags = ("--mode", "verbatim", "--context-window", "200000", "--keep-recent-tokens", "2500")
    dry = run("compact", source, *flags, "--dry-run", "--json")
    assert dry.code == 0, dry.stderr
    drafted = dry.json["coverage"]
    copy = tmp_path / "compacted.jsonl"
    assert run("compact", source, *flags, "--output", copy).code == 0
    measured = run("coverage", copy, "--json").json["categories"]
    for name, category in drafted.items():  # the same figures as `coverage` on the copy it would write
        assert {k: v for k, v in category.items() if k != "recovered"} == {
            k: v for k, v in measured[name].items() if k != "recovered"
        }
    text = run("compact", source, *flags, "--dry-run")
    assert "what of the compacted span the model would still read" in text.stderr
    assert "rules" in text.stderr and "modified files" in text.stderr
    assert source.read_bytes() == before
