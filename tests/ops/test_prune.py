"""``picompact prune``: what it replaces, what it never touches, and that it writes as safely as ``compact``.

Sessions are built with the tests' builder (real JSONL files); the command runs in process (``tests.helpers.cli``)
with a fixed clock and seeded ids, so a dry run and a real run can be compared byte for byte.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from pi_compact.checkpoint.prune_stub import PRUNE_MARK, is_prune_stub
from pi_compact.ops.check import CheckOptions, check_session
from pi_compact.ops.prune import PruneOptions, plan_prune, prune_session
from pi_compact.pi.projection import build_projection, context_tokens
from pi_compact.session import get_branch, load_session
from tests.helpers.cli import run
from tests.helpers.hooked import hooked_exe
from tests.helpers.sessions import SessionBuilder
from tests.oracle import oracle_for_comparison

FIXED = {"PICOMPACT_FIXED_TIME": "2026-01-02T03:04:05.678Z", "PICOMPACT_ID_SEED": "prune"}
BIG = 4000  # characters: 1,000 of Pi's tokens, over the default --min-tokens (500)
PYTEST_FAILURE = (
    "".join(f"tests/test_api.py::test_case_{i} PASSED\n" for i in range(120))
    + "FAILED tests/test_api.py::test_rounding - AssertionError: assert 2.5 == 3\n"
    + "==== 1 failed, 120 passed in 3.21s ====\n"
)


def _lines(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().split(b"\n") if line.strip()]


def _coding_session(path: Path, recent: int = 3) -> dict[str, str]:
    """A user asks, the agent reads two files, runs the tests (which fail), edits one of the files and answers;
    then ``recent`` more turns of big searches. Returns the ids of the entries the tests look at."""
    sb = SessionBuilder()
    ids: dict[str, str] = {}
    sb.add({"type": "model_change", "provider": "anthropic", "modelId": "claude-sonnet-4-5"})
    ids["user"] = sb.user("Fix the rounding bug in src/api.py " + "please " * 400)
    read_api = sb.call("read", {"path": "/repo/src/api.py"})
    read_util = sb.call("read", {"path": "/repo/src/util.py"})
    ids["prose"] = sb.assistant("I will read both files first. " + "Because of reasons. " * 200, read_api, read_util)
    ids["read_api"] = sb.result(read_api, "def total(x):\n    return round(x)\n" + "a" * BIG)
    ids["read_util"] = sb.result(read_util, "def helper():\n    pass\n" + "u" * BIG)
    test = sb.call("bash", {"command": "python -m pytest -q"})
    sb.assistant(test)
    ids["test"] = sb.result(test, PYTEST_FAILURE + "x" * BIG, is_error=True)
    edit = sb.call("edit", {"path": "src/api.py", "edits": [{"oldText": "round(x)", "newText": "round(x, 2)"}]})
    sb.assistant(edit)
    ids["edit"] = sb.result(edit, "Successfully replaced 1 block in src/api.py.")
    small = sb.call("bash", {"command": "git status"})
    sb.assistant(small)
    ids["small"] = sb.result(small, "On branch main\nnothing to commit")
    ids["answer"] = sb.assistant("Fixed: total() now rounds to two places.", usage=30_000)
    for i in range(recent):
        sb.user(f"Now look for callers, round {i}")
        grep = sb.call("bash", {"command": f"grep -rn total src/ # {i}"})
        sb.assistant(grep)
        ids[f"recent{i}"] = sb.result(grep, f"src/caller{i}.py:3: total(1)\n" + "z" * (BIG * 3))
        sb.assistant(f"Found the caller {i}.", usage=31_000 + 3000 * i)
    sb.write(path)
    return ids


def test_prune_replaces_old_outputs_with_stubs_and_keeps_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    ids = _coding_session(path)
    result = run("prune", path, "--json", "--keep-recent-tokens", "8000", env=FIXED)
    assert result.code == 0, result.stderr
    data = result.json
    pruned = {p["id"]: p for p in data["pruned"]}
    # The read of src/util.py and the failed test run are old and big: pruned. The read of src/api.py is the latest
    # read of a file edited after it: kept. The git status is small, the edit result too; the recent turns are
    # within the budget; user and assistant text are never targets.
    assert set(pruned) == {ids["read_util"], ids["test"]}
    assert pruned[ids["test"]]["tool"] == "bash" and pruned[ids["read_util"]]["tool"] == "read"
    assert data["protected"]["read-before-edit"] == 1 and data["protected"]["recent"] >= 1
    assert data["tokens_freed"] == data["tokens_before"] - data["tokens_after"] > 0
    assert data["session"] == str(path)
    written = _lines(path)[-len(data["entries"]) :]
    assert written == data["entries"]
    # Pi's own shape: the key order of appendContextEdit, chained from the leaf, content as one text block.
    leaf = _lines(path)[-len(data["entries"]) - 1]["id"]
    assert [list(e) for e in written] == [["type", "id", "parentId", "timestamp", "targetId", "replacement"]] * 2
    assert written[0]["parentId"] == leaf and written[1]["parentId"] == written[0]["id"]
    assert all(list(e["replacement"]) == ["content"] and len(e["replacement"]["content"]) == 1 for e in written)


def test_a_stub_says_what_the_output_was_its_facts_and_how_to_get_it_back(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    ids = _coding_session(path)
    data = run("prune", path, "--json", "--keep-recent-tokens", "8000", env=FIXED).json
    stub = next(e for e in data["entries"] if e["targetId"] == ids["test"])["replacement"]["content"][0]["text"]
    assert stub.startswith(PRUNE_MARK)
    tokens = next(p["tokens"] for p in data["pruned"] if p["id"] == ids["test"])
    assert 'bash(command="python -m pytest -q") → error' in stub and f"{tokens:,} tokens" in stub
    assert "FAILED tests/test_api.py::test_rounding - AssertionError: assert 2.5 == 3" in stub  # the error line
    assert "1 failed, 120 passed in 3.21s" in stub  # the test summary
    assert f"picompact show {ids['test']}" in stub and f'context_show_entry {{"id": "{ids["test"]}"}}' in stub
    read_stub = next(e for e in data["entries"] if e["targetId"] == ids["read_util"])["replacement"]
    assert "read(path=src/util.py) → ok" in read_stub["content"][0]["text"]


def test_a_second_run_appends_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _coding_session(path)
    first = run("prune", path, "--json", "--keep-recent-tokens", "8000", env=FIXED)
    assert first.code == 0 and first.json["entries"]
    after_first = path.read_bytes()
    second = run("prune", path, "--json", "--keep-recent-tokens", "8000", env=FIXED)
    assert second.code == 0
    assert second.json["entries"] == [] and second.json["pruned"] == [] and second.json["status"] == "nothing"
    assert second.json["protected"]["edited"] == len(first.json["entries"])
    assert second.json["tokens_after"] == second.json["tokens_before"] == first.json["tokens_after"]
    assert path.read_bytes() == after_first


def test_the_dry_run_is_byte_for_byte_what_a_run_appends(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _coding_session(path)
    before = path.read_bytes()
    dry = run("prune", path, "--dry-run", "--json", "--keep-recent-tokens", "8000", env=FIXED)
    assert dry.code == 0 and dry.json["status"] == "dry-run"
    assert path.read_bytes() == before
    real = run("prune", path, "--json", "--keep-recent-tokens", "8000", env=FIXED)
    appended = path.read_bytes()[len(before) :]
    from pi_compact.checkpoint.entry import serialize_entries

    assert appended == "".join(serialize_entries(dry.json["entries"])).encode()
    assert dry.json["entries"] == real.json["entries"]
    assert {k: v for k, v in dry.json.items() if k not in ("status", "bytes_written")} == {
        k: v for k, v in real.json.items() if k not in ("status", "bytes_written")
    }
    assert real.json["bytes_written"] == len(appended)


def test_the_recent_budget_and_min_tokens_protect(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    ids = _coding_session(path)
    everything = run("prune", path, "--dry-run", "--json", "--keep-recent-tokens", "0", env=FIXED).json
    # A zero budget still keeps the newest entry; the recent grep outputs before it are prunable then.
    assert {ids["recent0"], ids["recent1"], ids["recent2"]} <= {p["id"] for p in everything["pruned"]}
    nothing = run("prune", path, "--dry-run", "--json", "--keep-recent-tokens", "1000000", env=FIXED).json
    assert nothing["pruned"] == [] and nothing["tokens_freed"] == 0
    big_only = run("prune", path, "--dry-run", "--json", "--keep-recent-tokens", "0", "--min-tokens", "2500").json
    assert {p["id"] for p in big_only["pruned"]} == {ids["recent0"], ids["recent1"], ids["recent2"]}
    assert all(p["tokens"] >= 2500 for p in big_only["pruned"])


def test_user_messages_assistant_text_and_results_pi_already_edited_are_never_pruned(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    ids = _coding_session(path)
    sb_lines = _lines(path)
    leaf = sb_lines[-1]["id"]
    edit = {
        "type": "context_edit",
        "id": "feedf00d",
        "parentId": leaf,
        "timestamp": "2026-01-01T01:00:00.000Z",
        "targetId": ids["read_util"],
        "replacement": None,
    }
    with path.open("ab") as f:
        f.write(orjson.dumps(edit) + b"\n")
    data = run("prune", path, "--dry-run", "--json", "--keep-recent-tokens", "0", "--min-tokens", "0").json
    targets = {p["id"] for p in data["pruned"]}
    roles = {e["id"]: e["message"]["role"] for e in sb_lines[1:] if e["type"] == "message"}
    assert targets and all(roles[t] == "toolResult" for t in targets)
    assert ids["read_util"] not in targets and ids["user"] not in targets and ids["prose"] not in targets


def test_the_startup_reads_a_checkpoint_keeps_are_not_pruned(tmp_path: Path) -> None:
    agents = tmp_path / "AGENTS.md"
    agents.write_text("Always read docs/design.md before changing anything.\n")
    sb = SessionBuilder(cwd=str(tmp_path))
    sb.add({"type": "model_change", "provider": "anthropic", "modelId": "claude-sonnet-4-5"})
    sb.user("Start with the design.")
    design = sb.call("read", {"path": "docs/design.md"})
    other = sb.call("read", {"path": "docs/other.md"})
    sb.assistant(design, other)
    design_id = sb.result(design, "# Design\n" + "d" * BIG)
    other_id = sb.result(other, "# Other\n" + "o" * BIG)
    sb.assistant("Read them.", usage=3000)
    for i in range(3):
        sb.user(f"next {i}")
        sb.assistant(f"ok {i} " + "w" * BIG, usage=4000 + 1000 * i)
    path = sb.write(tmp_path / "s.jsonl")
    data = run("prune", path, "--dry-run", "--json", "--keep-recent-tokens", "100", "--context-file", agents).json
    assert [p["id"] for p in data["pruned"]] == [other_id]
    assert data["protected"]["startup-read"] == 1 and design_id != other_id


def test_check_reports_what_pruning_would_free_and_the_turns_it_buys(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _coding_session(path)
    dry = run("prune", path, "--dry-run", "--json", env=FIXED).json
    check = run("check", path, "--json").json
    assert check["prune"]["tokens_freed"] == dry["tokens_freed"]
    assert check["prune"]["tokens_after"] == dry["tokens_after"]
    assert check["prune"]["outputs"] == len(dry["pruned"])
    assert check["prune"]["turns_bought"] == dry["turns_bought"]
    text = run("check", path)
    assert "prune" in text.stdout


FIXTURE_DIR = Path(__file__).resolve().parent.parent / "fixtures" / "pi"


@pytest.mark.parametrize("name", sorted(p.name for p in FIXTURE_DIR.glob("*.jsonl")))
@pytest.mark.parametrize("keep", [2000, 8000])
def test_checks_reckoning_of_the_prune_is_the_full_plans(name: str, keep: int) -> None:
    # check counts what pruning frees without building the entries; prune builds them and Pi's projection after.
    result = check_session(FIXTURE_DIR / name, CheckOptions(keep_recent_tokens=keep), cache=False)
    full, summary = plan_prune(result), plan_prune(result, summary_only=True)
    assert summary.summary_json() == full.summary_json()
    assert [p.entry_id for p in summary.pruned] == [p.entry_id for p in full.pruned]
    assert summary.entries == [] and len(full.entries) == len(full.pruned)


def test_no_prune_where_pis_estimate_after_it_is_above_the_usage_it_counts_now(tmp_path: Path) -> None:
    # A reply whose recorded usage is far below its context's text (a provider that reports little): an edit
    # after it makes Pi estimate every message, so pruning would raise Pi's count, and nothing is pruned.
    path = tmp_path / "s.jsonl"
    _coding_session(path)
    lines = path.read_bytes().split(b"\n")
    for i, line in enumerate(lines):
        if b'"usage"' in line:
            entry = orjson.loads(line)
            entry["message"]["usage"].update(input=10, output=5, cacheRead=0, cacheWrite=0, totalTokens=15)
            lines[i] = orjson.dumps(entry)
    path.write_bytes(b"\n".join(lines))
    before = path.read_bytes()
    keep = ("--keep-recent-tokens", "2000")
    data = run("prune", path, "--json", *keep, env=FIXED).json
    assert data["pruned"] == [] and data["tokens_freed"] == 0 and data["protected"]["no-gain"] >= 3
    assert path.read_bytes() == before
    assert run("check", path, "--json", *keep).json["prune"]["outputs"] == 0


def test_checks_context_after_pruning_is_pis_estimate_of_the_projection(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _coding_session(path)
    data = run("prune", path, "--json", "--keep-recent-tokens", "8000", env=FIXED).json
    session = load_session(path, keep_bodies=True)
    projection = build_projection(get_branch(session))
    tokens = context_tokens(projection)
    # The last reply's usage predates the edits: Pi counts the whole projection by estimate.
    assert tokens.method == "stale-usage" and tokens.tokens == data["tokens_after"]
    assert run("check", path, "--json").json["context_tokens"] == data["tokens_after"]
    stubs = [pe for pe in projection.entries if is_prune_stub(pe.edit)]
    assert len(stubs) == len(data["entries"])


def test_a_torn_last_line_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _coding_session(path)
    with path.open("ab") as f:
        f.write(b'{"type":"message","id":"torn0001"')
    os.utime(path, (1_000_000_000, 1_000_000_000))  # long unchanged: torn, not being written
    before = path.read_bytes()
    result = run("prune", path, "--keep-recent-tokens", "8000", env=FIXED)
    assert result.code == 2
    assert result.stderr.startswith("picompact: error: ") and str(path) in result.stderr
    assert path.read_bytes() == before
    repaired = run("prune", path, "--json", "--keep-recent-tokens", "8000", "--repair", env=FIXED)
    assert repaired.code == 0 and repaired.json["entries"]
    assert path.read_bytes().startswith(before + b"\n")


def test_a_file_changed_while_pruning_is_read_again_and_pruned_once(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _coding_session(path)
    leaf = _lines(path)[-1]["id"]
    appended: list[bytes] = []

    def pi_appends() -> None:  # under picompact's lock, just before its write: as if Pi had appended just before
        if not appended:
            label = {"type": "label", "id": "1abe1001", "parentId": leaf, "timestamp": "2026-01-01T02:00:00.000Z"}
            line = orjson.dumps({**label, "targetId": leaf, "label": "checked"}) + b"\n"
            appended.append(line)
            with path.open("ab") as f:
                f.write(line)

    options = PruneOptions(check=CheckOptions(keep_recent_tokens=8000), in_lock=pi_appends)
    result = prune_session(path, options)
    assert result.attempts == 2 and result.written
    lines = _lines(path)
    assert sum(e.get("type") == "label" for e in lines) == 1
    assert sum(e.get("type") == "context_edit" for e in lines) == len(result.plan.entries) > 0


def test_a_locked_session_is_not_written(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    _coding_session(path)
    before = path.read_bytes()
    read_end, write_end = os.pipe()
    env = {**os.environ, **FIXED, "PICOMPACT_TEST_PAUSE_IN_LOCK": "5", "PICOMPACT_TEST_LOCK_HELD_FD": str(write_end)}
    holder = subprocess.Popen(
        [*hooked_exe(), "prune", str(path), "--keep-recent-tokens", "8000"],
        env=env,
        pass_fds=(write_end,),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write_end)
    try:
        assert os.read(read_end, 1) == b"L"  # the first run holds the lock now
        second = run("prune", path, "--keep-recent-tokens", "8000", env={**FIXED, "PICOMPACT_LOCK_TIMEOUT": "0.2"})
        assert second.code == 3 and "lock" in second.stderr
        assert path.read_bytes() == before
    finally:
        os.close(read_end)
        holder.wait(60)
    assert holder.returncode == 0
    assert len(_lines(path)) > len(before.split(b"\n")) - 1


def test_bad_input_gets_a_one_line_error_and_exit_2(tmp_path: Path) -> None:
    missing = run("prune", tmp_path / "missing.jsonl")
    assert missing.code == 2 and missing.stderr.count("\n") == 1
    not_pi = tmp_path / "x.jsonl"
    not_pi.write_text('{"hello": 1}\n')
    bad = run("prune", not_pi)
    assert bad.code == 2 and bad.stderr.startswith("picompact: error: ")
    negative = run("prune", tmp_path / "missing.jsonl", "--min-tokens", "-1")
    assert negative.code == 2 and "--min-tokens" in negative.stderr


def test_plan_prune_is_a_library_call(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    ids = _coding_session(path)
    check = check_session(load_session(path, keep_bodies=True), CheckOptions(keep_recent_tokens=8000))
    plan = plan_prune(check)
    assert {p.entry_id for p in plan.pruned} == {ids["read_util"], ids["test"]}
    assert [e["targetId"] for e in plan.entries] == [p.entry_id for p in plan.pruned]
    assert plan.lines and all(line.endswith("\n") for line in plan.lines)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(pytest.main([__file__]))


@pytest.mark.parametrize("replacement", ["a string", {}, {"content": 5}, [1]])
def test_a_session_pi_cannot_project_is_refused_and_lint_says_why(tmp_path: Path, replacement: Any) -> None:
    path = tmp_path / "s.jsonl"
    ids = _coding_session(path)
    bad = {
        "type": "context_edit",
        "id": "bad0e001",
        "parentId": _lines(path)[-1]["id"],
        "timestamp": "2026-01-01T01:00:00.000Z",
        "targetId": ids["small"],
        "replacement": replacement,
    }
    with path.open("ab") as f:
        f.write(orjson.dumps(bad) + b"\n")
    before = path.read_bytes()
    line = len(before.split(b"\n")) - 1
    refused = run("prune", path, "--keep-recent-tokens", "8000", env=FIXED)
    assert refused.code == 2 and f"{path}:{line}:" in refused.stderr and "nothing written" in refused.stderr
    assert path.read_bytes() == before
    linted = run("lint", path, "--json").json
    codes = {f["code"]: f for report in linted["files"] for f in report["findings"]}
    assert codes["edit-bad-replacement"]["severity"] == "error" and codes["edit-bad-replacement"]["line"] == line
    if oracle_for_comparison():  # Pi itself cannot build this branch's context
        from tests.oracle import ask_oracle

        assert "not iterable" in ask_oracle("context", path).json.get("error", "")


def test_show_gives_the_original_and_grep_finds_it_and_the_stub(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    ids = _coding_session(path)
    data = run("prune", path, "--json", "--keep-recent-tokens", "8000", env=FIXED).json
    shown = run("show", ids["test"], path)
    assert shown.code == 0 and "FAILED tests/test_api.py::test_rounding" in shown.stdout
    assert "tests/test_api.py::test_case_7 PASSED" in shown.stdout  # the output itself, not the stub
    found = run("grep", "test_case_7 PASSED", path, "--json").jsonl
    assert [r["data"]["entry_id"] for r in found if r["type"] == "match"] == [ids["test"]]
    stub_id = next(e["id"] for e in data["entries"] if e["targetId"] == ids["test"])
    stub = run("show", stub_id, path)
    assert f"[contextEdit] prune {ids['test']}" in stub.stdout
    listed = run("list", path, "--json").json
    preview = next(e["preview"] for e in listed["entries"] if e["id"] == stub_id)
    assert preview.startswith(f"prune {ids['test']}: bash(")


def test_audit_marks_the_stubs_and_coverage_of_a_later_compaction_loses_nothing(tmp_path: Path) -> None:
    plain = tmp_path / "plain.jsonl"
    _coding_session(plain)
    pruned = tmp_path / "pruned.jsonl"
    pruned.write_bytes(plain.read_bytes())
    data = run("prune", pruned, "--json", "--keep-recent-tokens", "8000", env=FIXED).json
    audit = run("audit", pruned, "--json").json
    markers = [m for m in audit["markers"] if m["kind"] == "context_edit"]
    assert len(markers) == len(data["entries"]) and all(m["pruned"] and not m["omitted"] for m in markers)
    assert "prune stubs" in run("audit", pruned).stdout
    # Compacting the pruned session keeps what compacting the unpruned one keeps: a stub is no lost output (the
    # checkpoint's facts come from the raw results).
    keep = ["--keep-recent-tokens", "2000", "--dry-run", "--json"]
    before = run("compact", plain, *keep, env=FIXED).json
    after = run("compact", pruned, *keep, env=FIXED).json
    assert after["coverage"] == before["coverage"]
    summary = after["entries"][0]["summary"].replace(str(pruned), str(plain))
    assert summary == before["entries"][0]["summary"]
