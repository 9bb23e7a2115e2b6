"""``picompact compact`` as a user runs it: every flag, every exit code, the file never damaged."""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import time
from pathlib import Path

import orjson
import pytest

from pi_compact.pi.projection import build_projection, context_tokens
from pi_compact.session import get_branch, load_session
from tests.helpers.cli import run
from tests.helpers.fixtures import PI_FIXTURES
from tests.helpers.hooked import hooked_exe
from tests.helpers.process import start_interruptible
from tests.helpers.sessions import SessionBuilder, side_branch_session, simple_session, written_long_ago

SEEDS = {"PICOMPACT_FIXED_TIME": "2026-05-06T07:08:09.010Z", "PICOMPACT_ID_SEED": "cli-tests"}
KEEP = ("--keep-recent-tokens", "300")


def _session(tmp_path: Path, name: str = "s.jsonl", **kw) -> Path:
    return simple_session(turns=6, size=400, **kw).write(tmp_path / name)


def _compact(path: Path, *args: str, env: dict[str, str] | None = None):
    return run("compact", path, *KEEP, *args, env={**SEEDS, **(env or {})})


def _new_entries(path: Path, before: bytes) -> list[dict]:
    data = path.read_bytes()
    assert data.startswith(before)
    return [orjson.loads(line) for line in data[len(before) :].split(b"\n") if line.strip()]


# ---------------------------------------------------------------------------------------------------------------
# Writing


def test_default_appends_the_compaction_and_the_reorientation_message(tmp_path):
    path = _session(tmp_path)
    before = path.read_bytes()
    result = _compact(path)
    assert result.code == 0, result.stderr
    assert result.stdout == ""
    compaction, reminder = _new_entries(path, before)
    assert compaction["type"] == "compaction" and compaction["fromHook"] is True
    assert compaction["parentId"] == load_session(path).entries[-3].id
    assert reminder["type"] == "custom_message" and reminder["parentId"] == compaction["id"]
    assert reminder["display"] is False
    summary = result.stderr.strip().splitlines()[-1]
    assert summary.startswith("picompact: compacted ")
    assert "% freed" in summary and "checkpoint" in summary and "kept tail" in summary and "cap trimming" in summary


def test_json_reports_the_numbers_and_tokens_after_match_check_on_the_result(tmp_path):
    path = _session(tmp_path)
    result = _compact(path, "--json")
    assert result.code == 0, result.stderr
    doc = result.json
    assert doc["status"] == "written" and doc["mode"] == "verbatim"
    assert [e["type"] for e in doc["entries"]] == ["compaction", "custom_message"]
    stats = doc["stats"]
    assert stats["tokens_before"] > stats["tokens_after"] > 0
    check = run("check", path, "--json").json
    assert check["context_tokens"] == stats["tokens_after"]
    assert doc["compaction_id"] == doc["entries"][0]["id"]


def test_after_compaction_pis_projection_is_summary_kept_tail_then_reorientation(tmp_path):
    path = _session(tmp_path)
    plan_doc = run("check", path, *KEEP, "--json").json
    assert _compact(path).code == 0
    session = load_session(path)
    projection = build_projection(get_branch(session))
    visible = [pe for pe in projection.entries if pe.messages]
    assert visible[0].entry.type == "compaction"
    assert visible[1].entry.id == plan_doc["first_kept_entry_id"]
    assert visible[-1].entry.type == "custom_message"
    assert projection.messages[0]["role"] == "compactionSummary"
    assert context_tokens(projection).tokens < plan_doc["context_tokens"]


def test_same_session_and_flags_with_the_test_seeds_give_identical_bytes(tmp_path):
    path = _session(tmp_path)  # the path is part of the checkpoint (its recovery commands name it)
    before = path.read_bytes()
    assert _compact(path).code == 0
    first = path.read_bytes()
    path.write_bytes(before)
    assert _compact(path).code == 0
    assert path.read_bytes() == first


def test_without_the_seeds_ids_are_fresh(tmp_path):
    a, b = _session(tmp_path, "a.jsonl"), _session(tmp_path, "b.jsonl")
    before = a.read_bytes()
    assert run("compact", a, *KEEP).code == 0 and run("compact", b, *KEEP).code == 0
    ids_a = [e["id"] for e in _new_entries(a, before)]
    ids_b = [e["id"] for e in _new_entries(b, before)]
    assert ids_a != ids_b


# ---------------------------------------------------------------------------------------------------------------
# Previews and copies


def test_dry_run_prints_the_checkpoint_and_changes_nothing(tmp_path):
    path = _session(tmp_path)
    before = path.read_bytes()
    dry = _compact(path, "--dry-run")
    assert dry.code == 0, dry.stderr
    assert path.read_bytes() == before
    assert "dry run, nothing written" in dry.stderr
    assert _compact(path).code == 0
    compaction, reminder = _new_entries(path, before)
    assert dry.stdout.startswith(compaction["summary"])
    assert reminder["content"] in dry.stdout


def test_dry_run_json_gives_the_entries_that_would_be_written(tmp_path):
    path = _session(tmp_path)
    before = path.read_bytes()
    dry = _compact(path, "--dry-run", "--json")
    assert dry.code == 0
    assert path.read_bytes() == before
    assert dry.json["status"] == "dry-run"
    assert _compact(path).code == 0
    assert dry.json["entries"] == _new_entries(path, before)


def test_output_writes_a_compacted_copy_and_leaves_the_session(tmp_path):
    path = _session(tmp_path)
    before = path.read_bytes()
    out = tmp_path / "copy.jsonl"
    result = _compact(path, "--output", str(out))
    assert result.code == 0, result.stderr
    assert path.read_bytes() == before
    assert [e["type"] for e in _new_entries(out, before)] == ["compaction", "custom_message"]
    assert "compacted copy" in result.stderr


def test_output_dash_writes_the_copy_to_stdout(tmp_path):
    path = _session(tmp_path)
    before = path.read_bytes()
    result = _compact(path, "--output", "-")
    assert result.code == 0, result.stderr
    assert path.read_bytes() == before
    assert result.stdout_bytes.startswith(before)
    assert len([line for line in result.stdout_bytes[len(before) :].split(b"\n") if line]) == 2


# ---------------------------------------------------------------------------------------------------------------
# The cap and context files


def test_cap_trims_and_no_cap_does_not(tmp_path):
    path = _session(tmp_path)
    small = _compact(path, "--dry-run", "--json", "--cap", "150")
    full = _compact(path, "--dry-run", "--json", "--no-cap")
    assert small.code == 0 and full.code == 0, (small.stderr, full.stderr)
    assert small.json["trimmed"] and not full.json["trimmed"]
    assert small.json["stats"]["checkpoint_tokens"] < full.json["stats"]["checkpoint_tokens"]


def _startup_session(tmp_path: Path) -> Path:
    sb = SessionBuilder(cwd="/nonexistent/project")
    sb.add({"type": "model_change", "provider": "anthropic", "modelId": "claude-sonnet-4-5"})
    sb.user("Set things up as the project instructions say.")
    sb.assistant("Reading the setup notes.", tool_calls=[("c1", "read", {"path": "docs/setup-notes.md"})])
    sb.tool_result("c1", "read", "SETUP-NOTES-MARKER: run make bootstrap first")
    sb.assistant("Read them.", usage=900)
    for i in range(5):
        sb.user(f"Now do step {i} " + "x" * 400)
        sb.assistant(f"Step {i} done " + "y" * 400, usage=1000 + i)
    return sb.write(tmp_path / "startup.jsonl")


def test_context_file_selects_startup_reads_to_keep(tmp_path):
    path = _startup_session(tmp_path)
    agents = tmp_path / "AGENTS.md"
    agents.write_text("Before anything else, read docs/setup-notes.md.\n")
    without = _compact(path, "--dry-run", "--no-cap")
    with_file = _compact(path, "--dry-run", "--no-cap", "--context-file", str(agents))
    assert without.code == 0 and with_file.code == 0, (without.stderr, with_file.stderr)
    assert "SETUP-NOTES-MARKER" not in without.stdout
    assert "SETUP-NOTES-MARKER" in with_file.stdout


def test_missing_context_file_is_a_usage_error(tmp_path):
    path = _session(tmp_path)
    result = _compact(path, "--context-file", str(tmp_path / "nope.md"))
    assert result.code == 2 and "--context-file" in result.stderr


# ---------------------------------------------------------------------------------------------------------------
# When to compact, and where


def test_if_needed_below_the_threshold_exits_0_with_a_note_and_writes_nothing(tmp_path):
    path = _session(tmp_path)
    before = path.read_bytes()
    result = _compact(path, "--if-needed")
    assert result.code == 0
    assert path.read_bytes() == before
    assert "not needed" in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert result.stdout == ""


def test_if_needed_above_the_threshold_compacts(tmp_path):
    path = _session(tmp_path)
    tokens = run("check", path, "--json").json["context_tokens"]
    before = path.read_bytes()
    result = _compact(path, "--if-needed", "--context-window", str(tokens + 50), "--reserve-tokens", "100")
    assert result.code == 0, result.stderr
    assert len(_new_entries(path, before)) == 2


def test_settings_flags_are_resolved_exactly_as_check_resolves_them(tmp_path):
    path = _session(tmp_path)
    flags = ("--context-window", "50000", "--reserve-tokens", "4000", "--keep-recent-tokens", "500")
    check = run("check", path, *flags, "--json").json
    dry = run("compact", path, *flags, "--dry-run", "--json", env=SEEDS).json
    assert dry["stats"]["context_window"] == check["context_window"] == 50000
    assert dry["stats"]["threshold"] == check["threshold"] == 46000
    assert dry["first_kept_entry_id"] == check["first_kept_entry_id"]
    assert dry["entries"][0]["tokensBefore"] == check["tokens_before"]
    with_model = run("compact", path, *KEEP, "--model", "openai/gpt-4o", "--dry-run", "--json", env=SEEDS).json
    check_model = run("check", path, *KEEP, "--model", "openai/gpt-4o", "--json").json
    assert with_model["stats"]["context_window"] == check_model["context_window"]


def test_leaf_on_another_branch_is_the_parent_of_the_new_entries(tmp_path):
    path, main_tip = side_branch_session(tmp_path / "s.jsonl", "side question " + "q" * 300)
    before = path.read_bytes()
    result = _compact(path, "--leaf", main_tip)
    assert result.code == 0, result.stderr
    compaction, _ = _new_entries(path, before)
    assert compaction["parentId"] == main_tip
    assert run("check", path, "--json").json["leaf_id"] == load_session(path).entries[-1].id


def test_unknown_leaf_is_exit_2(tmp_path):
    result = _compact(_session(tmp_path), "--leaf", "zzzzzzzz")
    assert result.code == 2 and "zzzzzzzz" in result.stderr


# ---------------------------------------------------------------------------------------------------------------
# Old formats and damaged files


def test_v2_file_is_migrated_with_a_backup_unless_no_backup(tmp_path):
    original = (PI_FIXTURES / "gen-v2-legacy-101.jsonl").read_bytes()
    path = tmp_path / "v2.jsonl"
    path.write_bytes(original)
    result = run("compact", path, "--keep-recent-tokens", "2000", env=SEEDS)
    assert result.code == 0, result.stderr
    assert (tmp_path / "v2.jsonl.bak").read_bytes() == original
    assert "migrated the v2 file" in result.stderr
    assert load_session(path).original_version == 3

    other = tmp_path / "other.jsonl"
    other.write_bytes(original)
    result = run("compact", other, "--keep-recent-tokens", "2000", "--no-backup", env=SEEDS)
    assert result.code == 0
    assert not (tmp_path / "other.jsonl.bak").exists()


def test_missing_final_newline_is_supplied(tmp_path):
    path = _session(tmp_path)
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    result = _compact(path)
    assert result.code == 0, result.stderr
    assert "without a newline" in result.stderr
    session = load_session(path)
    assert not session.diagnostics
    assert [e.type for e in session.entries[-2:]] == ["compaction", "custom_message"]


def test_torn_last_line_needs_repair(tmp_path):
    path = _session(tmp_path)
    torn = path.read_bytes() + b'{"type":"message","id":"torn'
    path.write_bytes(torn)
    written_long_ago(path)
    refused = _compact(path)
    assert refused.code == 2
    assert "--repair" in refused.stderr
    assert path.read_bytes() == torn
    repaired = _compact(path, "--repair")
    assert repaired.code == 0, repaired.stderr
    assert path.read_bytes().startswith(torn + b"\n")
    assert load_session(path).entries[-1].type == "custom_message"


# ---------------------------------------------------------------------------------------------------------------
# Errors and exit codes


@pytest.mark.parametrize(
    ("args", "names"),
    [
        (("--dry-run", "--output", "x.jsonl"), ("--dry-run", "--output")),
        (("--cap", "100", "--no-cap"), ("--cap", "--no-cap")),
        (("--json", "--output", "-"), ("--json", "--output")),
        (("--mode", "telepathy"), ("--mode",)),
    ],
)
def test_clashing_or_bad_flags_are_usage_errors_naming_the_flags(tmp_path, args, names):
    path = _session(tmp_path)
    before = path.read_bytes()
    result = _compact(path, *args)
    assert result.code == 2
    for name in names:
        assert name in result.stderr
    assert path.read_bytes() == before


def test_nothing_to_compact_is_exit_2_with_the_reason(tmp_path):
    path = _session(tmp_path)
    before = path.read_bytes()
    result = run("compact", path, env=SEEDS)  # keepRecentTokens 20000 keeps everything
    assert result.code == 2
    assert "nothing to compact" in result.stderr
    assert path.read_bytes() == before
    as_json = run("compact", path, "--json", env=SEEDS)
    assert as_json.code == 2 and "nothing to compact" in as_json.json["error"]["message"]


def test_a_compaction_that_would_not_shrink_the_context_is_refused(tmp_path):
    # A short conversation: the checkpoint's fixed parts are bigger than the history they would replace.
    path = simple_session(turns=3, size=100, usage=False).write(tmp_path / "short.jsonl")
    before = path.read_bytes()
    refused = run("compact", path, "--keep-recent-tokens", "100", env=SEEDS)
    assert refused.code == 2 and "would not shrink" in refused.stderr
    assert path.read_bytes() == before
    dry = run("compact", path, "--keep-recent-tokens", "100", "--dry-run", "--json", env=SEEDS)
    assert dry.code == 0 and dry.json["stats"]["freed_tokens"] <= 0
    assert any("would not shrink" in w for w in dry.json["warnings"])


def test_missing_session_is_exit_2(tmp_path):
    result = run("compact", tmp_path / "missing.jsonl")
    assert result.code == 2 and "missing.jsonl" in result.stderr


def test_negative_cap_is_a_usage_error(tmp_path):
    result = _compact(_session(tmp_path), "--cap", "-5")
    assert result.code == 2 and "--cap" in result.stderr


@pytest.mark.process
def test_a_lock_held_by_another_writer_gives_exit_3_and_nothing_written(tmp_path):
    path = _session(tmp_path)
    before = path.read_bytes()
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        result = _compact(path, env={"PICOMPACT_LOCK_TIMEOUT": "0.2"})
    finally:
        os.close(fd)
    assert result.code == 3
    assert "lock" in result.stderr
    assert path.read_bytes() == before


def _start_paused(path: Path) -> subprocess.Popen:
    """Start ``compact`` with the test hook that pauses inside the lock, and wait until it holds the lock."""
    env = {**os.environ, **SEEDS, "PICOMPACT_TEST_PAUSE_IN_LOCK": "60"}
    proc = start_interruptible(
        [*hooked_exe(), "compact", str(path), *KEEP],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    fd = os.open(path, os.O_RDONLY)
    try:
        for _ in range(6000):  # until picompact holds the lock (or gives up)
            if proc.poll() is not None:
                raise AssertionError(proc.stderr.read().decode())
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return proc
            fcntl.flock(fd, fcntl.LOCK_UN)
            time.sleep(0.01)
    finally:
        os.close(fd)
    proc.kill()
    raise AssertionError("picompact never took the lock")


def test_ctrl_c_exits_130_with_the_file_untouched(tmp_path):
    path = _session(tmp_path)
    before = path.read_bytes()
    proc = _start_paused(path)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130
    assert b"nothing was written" in err
    assert path.read_bytes() == before
    assert _compact(path).code == 0  # the lock went with the process


def test_killed_inside_the_lock_leaves_the_file_loading_and_unlocked(tmp_path):
    path = _session(tmp_path)
    before = path.read_bytes()
    proc = _start_paused(path)
    proc.kill()
    proc.wait(timeout=60)
    assert path.read_bytes() == before
    assert load_session(path).entries
    assert _compact(path).code == 0


def test_without_session_argument_the_most_recent_session_of_the_directory_is_compacted(tmp_path):
    from pi_compact.pi.sessions import session_dir_for_cwd

    project = tmp_path / "project"
    project.mkdir()
    sessions = session_dir_for_cwd(str(project))
    sessions.mkdir(parents=True)
    sb = simple_session(turns=6, size=400)
    sb.header["cwd"] = str(project)
    path = sb.write(sessions / "2026-01-01T00-00-00-000Z_0199aaaa-0000-7000-8000-000000000001.jsonl")
    before = path.read_bytes()
    result = run("compact", *KEEP, cwd=project, env=SEEDS)
    assert result.code == 0, result.stderr
    assert [e["type"] for e in _new_entries(path, before)] == ["compaction", "custom_message"]
