"""Every ``--json`` document and record has exactly the keys declared in ``pi_compact.cli.schema``, the README
table lists the same keys, and a document is the library result's ``to_json()`` with ``schema_version`` stamped."""

from __future__ import annotations

import re
from pathlib import Path

import orjson
import pytest

from pi_compact.cli.env import SCHEMA_VERSION
from pi_compact.cli.schema import DOCUMENTS, RECORDS, keys
from tests.helpers.cli import run
from tests.helpers.sessions import simple_session

README = (Path(__file__).resolve().parents[2] / "docs" / "json.md").read_text()  # its JSON output table
HOW = (
    "a key was added or removed: declare it in the TypedDict the result's to_json() returns (or, for a key the command "
    "adds, in pi_compact/cli/schema.py) and in the README's JSON output table"
)
WINDOW = ["--context-window", "200000"]


@pytest.fixture
def session(tmp_path: Path) -> Path:
    return simple_session(turns=6, size=400).write(tmp_path / "s.jsonl")


def readme_table() -> dict[str, list[str]]:
    section = README.split("## JSON output", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, list[str]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 2 or not cells[0].startswith("`"):
            continue
        rows[cells[0]] = re.findall(r"`([^`]+)`", cells[1])
    return rows


def test_the_readme_table_lists_the_declared_keys() -> None:
    table = readme_table()
    expected = {f"`{name}`": keys(doc) for name, doc in DOCUMENTS.items()}
    for command, records in RECORDS.items():
        for record_type, data in records.items():
            expected[f"`{command}` `{record_type}` record"] = keys(data)
    assert table == expected, HOW


def _doc(*args: str | Path) -> dict:
    result = run(*args, "--json")
    assert result.stdout_bytes.count(b"\n") >= 1
    doc = result.json
    assert next(iter(doc)) == "schema_version" and doc["schema_version"] == SCHEMA_VERSION
    return doc


def test_every_document_has_the_declared_keys(session: Path, tmp_path: Path, isolated_home: Path) -> None:
    entry = orjson.loads(session.read_bytes().split(b"\n")[3])["id"]
    keep = ["--keep-recent-tokens", "500"]
    printed = {
        "check": _doc("check", session, *WINDOW),
        "sessions": _doc("sessions", "--all"),
        "compact": _doc("compact", session, *WINDOW, *keep, "--dry-run"),
        "compact --mode summary --dry-run": _doc(
            "compact", session, "--mode", "summary", "--model", "openai/gpt-4.1-mini", *keep, "--dry-run"
        ),
        "compact --mode summary --dry-run, not needed": _doc(
            "compact", session, "--mode", "summary", "--model", "openai/gpt-4.1-mini", "--dry-run", "--if-needed"
        ),
        "list": _doc("list", session),
        "show": _doc("show", session, entry),
        "context": _doc("context", session),
        "prune": _doc("prune", session, *WINDOW, *keep, "--dry-run"),
    }
    missing = run("check", tmp_path / "missing.jsonl", "--json")
    assert missing.code == 2
    printed["error"] = missing.json
    for name, doc in printed.items():
        assert list(doc) == keys(DOCUMENTS[name]), f"{name}: {HOW}"
    # lookup needs a model; lint, audit, coverage and rules are checked in tests/ops/test_lint.py, test_audit.py,
    # test_coverage.py, test_rules.py, the pi documents in tests/extension/test_json_docs.py.
    pi = {name for name in DOCUMENTS if name.startswith("pi ")}
    # search's documents and records are checked in tests/archive/test_search_cli.py.
    assert set(DOCUMENTS) == {*printed, "lookup", "lint", "audit", "coverage", "rules", "search", "search --stats", *pi}


def test_grep_records_have_the_declared_keys(session: Path, tmp_path: Path) -> None:
    result = run("grep", session, "Turn", "-C", "1", "--json")
    assert result.code == 0
    records = result.jsonl
    assert {r["type"] for r in records} == {"match", "summary"}
    for record in records:
        assert list(record) == ["type", "version", "data"] and record["version"] == SCHEMA_VERSION
        assert list(record["data"]) == keys(RECORDS["grep"][record["type"]]), f"grep {record['type']}: {HOW}"
    error = run("grep", tmp_path / "missing.jsonl", "Turn", "--json").jsonl
    assert [r["type"] for r in error] == ["error"]
    assert list(error[0]["data"]) == keys(RECORDS["grep"]["error"])


def test_documents_are_the_library_results_to_json(session: Path) -> None:
    from pi_compact.ops.check import CheckOptions, check_session
    from pi_compact.search import build_context_view, grep, list_entries
    from pi_compact.search.transcript import build_transcript
    from pi_compact.session.load import load_session

    def same(doc: dict, data: dict) -> None:
        assert doc == {"schema_version": SCHEMA_VERSION, **orjson.loads(orjson.dumps(data))}

    from pi_compact.ops.prune import plan_prune

    checked = check_session(session, CheckOptions(context_window=200_000))
    same(_doc("check", session, *WINDOW), {**checked.to_json(), "prune": plan_prune(checked).summary_json()})
    loaded = load_session(session)
    same(_doc("list", session), list_entries(build_transcript(loaded)).to_json())
    same(_doc("context", session), build_context_view(loaded).to_json())
    page = grep(build_transcript(loaded), "Turn")
    records = run("grep", session, "Turn", "--json").jsonl
    expected = [
        *({"type": "match", "version": SCHEMA_VERSION, "data": m.to_json()} for m in page.matches),
        {"type": "summary", "version": SCHEMA_VERSION, "data": page.to_json()},
    ]
    assert records == orjson.loads(orjson.dumps(expected))


def test_sessions_document_is_the_listing_to_json(tmp_path: Path, isolated_home: Path) -> None:
    from pi_compact.pi.sessions import session_listing

    cwd = tmp_path / "proj"
    cwd.mkdir()
    folder = isolated_home / ".pi" / "agent" / "sessions" / ("--" + str(cwd).lstrip("/").replace("/", "-") + "--")
    folder.mkdir(parents=True)
    for turns in (1, 2):
        built = simple_session(turns=turns)
        built.header["cwd"] = str(cwd)
        built.write(folder / f"s{turns}.jsonl")
    listing = session_listing(cwd)
    assert len(listing.sessions) == 2 and listing.default is not None
    doc = _doc("sessions", "--cwd", cwd)
    assert doc == {"schema_version": SCHEMA_VERSION, **orjson.loads(orjson.dumps(listing.to_json()))}
    assert sum(s["default"] for s in doc["sessions"]) == 1


def test_compact_documents_are_the_results_json(session: Path, isolated_home: Path) -> None:
    from pi_compact.checkpoint.entry import fixed_clock, seeded_ids
    from pi_compact.ops.check import CheckOptions
    from pi_compact.ops.checkpoint_request import CheckpointRequest
    from pi_compact.ops.compact import CompactOptions, compact_session
    from pi_compact.ops.coverage import drafted_coverage

    hooks = {"PICOMPACT_FIXED_TIME": "2026-01-02T03:04:05.000Z", "PICOMPACT_ID_SEED": "seed"}

    def options(model: str | None = None, if_needed: bool = False) -> CompactOptions:
        check = CheckOptions(context_window=200_000, keep_recent_tokens=500, model=model)
        clock, ids = fixed_clock(hooks["PICOMPACT_FIXED_TIME"]), seeded_ids(hooks["PICOMPACT_ID_SEED"])
        return CompactOptions(check=check, dry_run=True, if_needed=if_needed, clock=clock, new_id=ids)

    def printed(*args: str) -> dict:
        result = run("compact", session, *args, "--dry-run", "--json", env=hooks)
        assert result.code == 0, result.stderr
        return result.json

    def same(doc: dict, data: object) -> None:
        assert doc == {"schema_version": SCHEMA_VERSION, **orjson.loads(orjson.dumps(data))}

    verbatim = compact_session(session, CheckpointRequest().checkpoint_mode(), options())
    verbatim.coverage = drafted_coverage(verbatim.check, verbatim.entries)  # what the dry run adds
    same(printed(*WINDOW, "--keep-recent-tokens", "500"), verbatim.compaction_json())
    summary = CheckpointRequest(mode="summary", model="openai/gpt-4.1-mini").checkpoint_mode()
    preview = compact_session(session, summary, options("openai/gpt-4.1-mini"))
    assert preview.preview is not None
    same(
        printed(*WINDOW, "--keep-recent-tokens", "500", "--mode", "summary", "--model", "openai/gpt-4.1-mini"),
        preview.preview.to_json(),
    )
    skipped = compact_session(session, summary, options("openai/gpt-4.1-mini", if_needed=True))
    assert skipped.status == "not-needed"
    same(
        printed(
            *WINDOW, "--keep-recent-tokens", "500", "--mode", "summary", "--model", "openai/gpt-4.1-mini", "--if-needed"
        ),
        skipped.not_needed_json(),
    )


def test_lint_document_is_the_reports_json(session: Path, tmp_path: Path) -> None:
    from pi_compact.ops.lint import lint_file
    from pi_compact.ops.lint_report import LintTotals, lint_json

    other = tmp_path / "other.jsonl"
    other.write_bytes(session.read_bytes() + b"not json\n")
    reports = [lint_file(session), lint_file(other)]
    totals = LintTotals()
    for report in reports:
        totals.add(report)
    doc = run("lint", session, other, "--json", "--level", "info").json
    assert doc == {
        "schema_version": SCHEMA_VERSION,
        "level": "info",
        **orjson.loads(orjson.dumps(lint_json(reports, totals))),
    }
    assert doc["total"]["counts"]["warning"] + doc["total"]["counts"]["error"] > 0
