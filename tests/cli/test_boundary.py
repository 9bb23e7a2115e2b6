"""The boundary between the command line and the library: every outcome of every command leaves through
``main(argv, env)``, with the documented exit code and error format."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
import typer.main

from pi_compact.cli import Environment, app, main
from pi_compact.cli.env import SCHEMA_VERSION
from pi_compact.errors import ExitCode
from tests.helpers.cli import picompact_exe, run, run_process
from tests.helpers.sessions import simple_session

README = (Path(__file__).resolve().parents[2] / "docs" / "json.md").read_text()  # the exit codes


@pytest.fixture
def session(tmp_path: Path) -> Path:
    return simple_session(turns=6, size=400).write(tmp_path / "s.jsonl")


def command_names() -> list[str]:
    group = typer.main.get_command(app)
    return sorted(group.commands)  # type: ignore[attr-defined]


def assert_one_error_line(result, code: int = 2) -> str:
    assert result.code == code, (result.code, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("picompact: error: "), result.stderr
    assert result.stderr.count("\n") == 1, result.stderr
    assert "None" not in result.stderr
    return result.stderr


# -- main(argv, env) ------------------------------------------------------------------------------------------------


def test_main_returns_the_exit_code_and_writes_to_the_environment_it_was_given(session: Path) -> None:
    env = Environment.captured()
    code = main(["check", str(session), "--context-window", "200000", "--json"], env)
    assert code == ExitCode.OK and isinstance(code, ExitCode)
    doc = orjson.loads(env.stdout_bytes())
    assert doc["schema_version"] == SCHEMA_VERSION and doc["should_compact"] is False
    needs = Environment.captured()
    assert main(["check", str(session), "--context-window", "5000"], needs) == ExitCode.NO
    assert b"YES" in needs.stdout_bytes()


# -- usage errors found by click: the documented one-line format --------------------------------------------------


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["check", "--bogus"], "No such option: --bogus"),
        (["check", "--context-window", "big"], "'big' is not a valid int"),
        (["show"], "Missing argument"),
        (["bogus-command"], "No such command 'bogus-command'"),
        (["compact", "--cap"], "--cap"),
    ],
)
def test_usage_errors_are_one_line_and_name_the_help(args: list[str], needle: str) -> None:
    result = run(*args)
    line = assert_one_error_line(result)
    assert needle in line
    assert "--help'" in line
    assert result.stdout == ""


@pytest.mark.parametrize("name", ["check", "compact", "list", "show", "context", "sessions", "lint"])
def test_usage_error_with_json_is_one_json_line(name: str) -> None:
    result = run(name, "--json", "--no-such-flag")
    assert_one_error_line(result)
    assert result.stdout_bytes.count(b"\n") == 1
    doc = orjson.loads(result.stdout_bytes)
    assert doc == {
        "schema_version": SCHEMA_VERSION,
        "error": {"message": result.stderr.removeprefix("picompact: error: ").rstrip("\n"), "exit_code": 2},
    }


def test_json_lines_command_reports_errors_as_a_record_in_its_envelope(tmp_path: Path) -> None:
    for args in (
        ["grep", str(tmp_path / "missing.jsonl"), "x", "--json"],
        ["grep", "--json", "--bogus", "x"],
        ["lint", "--all", "--json", "--bogus"],  # lint is JSON Lines with --all only
    ):
        result = run(*args)
        assert_one_error_line(result)
        records = result.jsonl
        assert len(records) == 1 and result.stdout_bytes.count(b"\n") == 1
        assert records[0]["type"] == "error" and records[0]["version"] == SCHEMA_VERSION
        assert records[0]["data"]["exit_code"] == 2
        assert records[0]["data"]["message"] in result.stderr


def test_library_errors_keep_file_and_line_and_their_code(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b"not json at all\n")
    result = run("check", bad, "--json")
    line = assert_one_error_line(result)
    assert str(bad) in line
    assert orjson.loads(result.stdout_bytes)["error"]["exit_code"] == 2


def test_no_arguments_prints_the_help_and_exits_2() -> None:
    result = run()
    assert result.code == 2
    assert "Usage:" in result.stderr and "check" in result.stderr


# -- unexpected exceptions: their own exit code ----------------------------------------------------------------------


def _break_check(monkeypatch: pytest.MonkeyPatch, exc: BaseException) -> None:
    import pi_compact.ops.check

    def broken(*args: object, **kwargs: object) -> None:
        raise exc

    monkeypatch.setattr(pi_compact.ops.check, "check_session", broken)


def test_an_unexpected_exception_is_an_internal_error_with_its_own_code(
    session: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _break_check(monkeypatch, RuntimeError("secret text from the session"))
    result = run("check", session)
    assert result.code == ExitCode.INTERNAL == 70
    hint = f"; run `picompact --debug check {session}` for the traceback"  # --debug where it is accepted
    assert result.stderr == f"picompact: error: internal error (RuntimeError){hint}\n"
    assert "secret" not in result.stderr + result.stdout
    as_json = run("check", session, "--json")
    assert as_json.code == 70
    assert orjson.loads(as_json.stdout_bytes)["error"]["exit_code"] == 70
    assert "70" in README.split("## Exit codes", 1)[1].split("##", 1)[0]


def test_debug_shows_the_traceback_without_changing_the_process_environment(
    session: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _break_check(monkeypatch, RuntimeError("boom"))
    before = dict(os.environ)
    env = Environment.captured()
    code = main(["--debug", "check", str(session)], env)
    assert dict(os.environ) == before
    err = env.stderr_bytes().decode()
    assert code == 70
    assert "Traceback (most recent call last)" in err and "RuntimeError: boom" in err
    assert err.rstrip("\n").endswith("picompact: error: internal error (RuntimeError)")
    by_variable = run("check", session, env={"PICOMPACT_DEBUG": "1"})  # run() drops it: a user would set it
    assert "Traceback" not in by_variable.stderr
    env = Environment.captured(environ={**os.environ, "PICOMPACT_DEBUG": "1"})
    assert main(["check", str(session)], env) == 70
    assert "Traceback" in env.stderr_bytes().decode()


def test_ctrl_c_is_130_and_says_nothing_was_written(session: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _break_check(monkeypatch, KeyboardInterrupt())
    result = run("check", session)
    assert result.code == 130
    assert result.stderr == "picompact: interrupted; nothing was written\n"


# -- --version and completion --------------------------------------------------------------------------------------


def test_version_and_completion_are_offered() -> None:
    from pi_compact import __version__

    for flag in ("--version", "-V"):
        result = run(flag)
        assert result.code == 0 and result.stdout == f"picompact {__version__}\n"
    shown = run("--show-completion", env={"SHELL": "/bin/bash"})
    assert shown.code == 0, shown.stderr
    assert "_PICOMPACT_COMPLETE" in shown.stdout
    assert "--install-completion" in run("--help").stdout


# -- a reader that goes away: quiet exit 0, for every command (real processes) ----------------------------------------


def reader_gone_runs(session: Path) -> list[list[str | Path]]:
    entry = orjson.loads(session.read_bytes().split(b"\n")[3])["id"]
    keep = ["--keep-recent-tokens", "500"]
    return [
        ["check", session],
        ["check", session, "--json"],
        ["check", session, "--context-window", "5000"],  # exit 1 normally: the answer is lost with the reader
        ["compact", session, *keep, "--dry-run"],
        ["compact", session, *keep, "--dry-run", "--json"],
        ["compact", session, *keep, "--output", "-"],
        ["compact", session, "--mode", "summary", "--model", "openai/gpt-4.1-mini", *keep, "--dry-run"],
        ["list", session],
        ["list", session, "--json"],
        ["grep", session, "Turn"],
        ["grep", session, "Turn", "--json"],
        ["show", session, entry],
        ["show", session, entry, "--raw"],
        ["show", session, entry, "--json"],
        ["context", session],
        ["context", session, "--json"],
        ["sessions", "--all", "--json"],
        ["lint", session],
        ["lint", session, "--json"],
        ["audit", session],
        ["audit", session, "--json"],
        ["pi", "status"],  # exit 1 normally (not installed)
        ["--help"],
        ["--version"],
        *[[name, "--help"] for name in command_names()],
    ]


def test_every_command_ends_quietly_when_its_reader_goes_away(session: Path, tmp_path: Path) -> None:
    compacted = tmp_path / "compacted.jsonl"
    compacted.write_bytes(session.read_bytes())
    assert run("compact", compacted, "--keep-recent-tokens", "500").code == 0
    before = session.read_bytes()
    runs = [*reader_gone_runs(session), ["coverage", compacted], ["coverage", compacted, "--json"]]
    for args in runs:
        result = run(*args, reader_gone=True)
        assert result.code == 0, (args, result.stderr)
        assert "error" not in result.stderr and "Exception" not in result.stderr, (args, result.stderr)
    assert session.read_bytes() == before


def _closed_pipe_run(*args: str | os.PathLike[str]) -> subprocess.CompletedProcess[bytes]:
    """Run picompact with a stdout whose reader has already gone: the first write fails with EPIPE."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        env = {k: v for k, v in os.environ.items() if k != "PICOMPACT_DEBUG"}
        return subprocess.run(
            [*picompact_exe(), *map(str, args)], stdout=write_end, stderr=subprocess.PIPE, env=env, check=False
        )
    finally:
        os.close(write_end)


@pytest.mark.process
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX pipes")
def test_a_real_closed_pipe_ends_the_process_quietly(session: Path) -> None:
    """The process as a whole: no 'Exception ignored' at exit, exit 0 even where the answer would be 1."""
    for args in (["check", session, "--context-window", "5000"], ["grep", session, "Turn", "--json"], ["--help"]):
        proc = _closed_pipe_run(*args)
        assert proc.returncode == 0, (args, proc.stderr)
        assert b"Exception" not in proc.stderr and b"error" not in proc.stderr, args


@pytest.mark.process
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell")
def test_dry_run_into_head_is_not_read_as_compaction_needed(session: Path) -> None:
    exe = " ".join(picompact_exe())
    script = f"set -o pipefail; {exe} compact {session} --keep-recent-tokens 500 --dry-run | head -1"
    proc = subprocess.run(["bash", "-c", script], capture_output=True, check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.count(b"\n") == 1


@pytest.mark.process
def test_the_console_script_reports_errors_and_codes_like_main(session: Path, tmp_path: Path) -> None:
    missing = run_process("check", tmp_path / "missing.jsonl", "--json")
    assert missing.code == 2
    assert missing.stderr.startswith("picompact: error: ") and missing.stderr.count("\n") == 1
    assert missing.stdout == run("check", tmp_path / "missing.jsonl", "--json").stdout
    needed = run_process("check", session, "--context-window", "5000")
    assert needed.code == 1
    module = subprocess.run(
        [sys.executable, "-m", "pi_compact", "check", str(session), "--context-window", "5000"],
        capture_output=True,
        check=False,
    )
    assert module.returncode == 1


@pytest.mark.process
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX shell")
def test_grep_old_error_example_does_not_traceback_on_a_missing_file(tmp_path: Path) -> None:
    script = Path(__file__).resolve().parents[2] / "examples" / "grep-old-error.sh"
    bindir = Path(picompact_exe()[0]).parent
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}"}
    proc = subprocess.run(["sh", str(script), str(tmp_path / "missing.jsonl")], capture_output=True, env=env)
    assert proc.returncode == 2
    assert b"Traceback" not in proc.stderr
    assert proc.stderr.startswith(b"picompact: error: ") and b"missing.jsonl" in proc.stderr


def test_a_session_that_names_no_model_gets_messages_without_none(tmp_path: Path) -> None:
    sb = simple_session(turns=2, size=10)
    sb.add({"type": "model_change"})  # the latest model change names neither provider nor id
    path = sb.write(tmp_path / "s.jsonl")
    for args in (["check", path], ["compact", path, "--mode", "summary", "--dry-run"], ["lookup", "why?", path]):
        result = run(*args)
        line = assert_one_error_line(result)
        assert "model" in line


def test_colour_only_on_a_terminal_and_never_with_no_color(session: Path) -> None:
    def check_output(tty: bool, **environ: str) -> bytes:
        env = Environment.captured(tty=tty, environ={**os.environ, **environ})
        assert main(["check", str(session), "--context-window", "5000"], env) == ExitCode.NO
        return env.stdout_bytes()

    coloured = check_output(True)
    assert b"\x1b[1;31mYES:" in coloured and b"\x1b[1msession" in coloured
    for plain in (check_output(False), check_output(True, NO_COLOR="1"), check_output(True, TERM="dumb")):
        assert b"\x1b[" not in plain
        assert plain.startswith(b"session ")
