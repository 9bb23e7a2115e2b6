"""A "!command" API key (models.json ``apiKey``, auth.json ``key``) is run only by the call that sends a request with
it. Whether a key is available is decided as Pi decides it (``isConfigValueConfigured``: configured, not run), so
``pi config``, a verbatim checkpoint and a dry run never start the helper; a helper that hangs is stopped after its
timeout, with every process it started."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer

from pi_compact.llm import keys
from pi_compact.llm.choice import find_api_key, has_api_key, model_available
from pi_compact.llm.providers import resolve_model
from tests.checkpoint.summary.conftest import GOOD_SUMMARY, OPENAI_PATH, openai_reply, settle
from tests.helpers.cli import picompact_exe, run, run_process
from tests.helpers.sessions import SessionBuilder

MODEL = ("local", "coder-7b")  # a provider that only models.json defines
KEY = "sk-from-the-helper-0123456789"


def _helper(tmp_path: Path, *, sleep: float = 1, hang: bool = False) -> tuple[Path, Path]:
    """A key helper that leaves a mark each time it runs, sleeps, then prints the key (or, with ``hang``, starts a
    child that writes its pid, and both sleep far beyond any timeout). Returns (script, mark file)."""
    mark = tmp_path / "helper-ran"
    script = tmp_path / "key-helper"
    if hang:
        body = f'echo run >> "{mark}"\nsleep 300 &\necho $! > "{tmp_path / "child.pid"}"\nsleep 300\n'
    else:
        body = f'echo run >> "{mark}"\nsleep {sleep}\necho {KEY}\n'
    script.write_text("#!/bin/sh\n" + body)
    script.chmod(0o755)
    return script, mark


def _models_json(agent_dir: Path, server_url: str, api_key: str) -> None:
    entry = {
        "baseUrl": server_url,
        "api": "openai-completions",
        "apiKey": api_key,
        "models": [{"id": "coder-7b", "contextWindow": 32000}],
    }
    (agent_dir / "models.json").write_text(json.dumps({"providers": {"local": entry}}))


def _session(path: Path) -> tuple[Path, str]:
    """Six turns with the models.json provider as the session's model."""
    sb = SessionBuilder()
    sb.add({"type": "model_change", "provider": MODEL[0], "modelId": MODEL[1]})
    for i in range(6):
        sb.user(f"Turn {i}: please look at src/mod{i}.py " + "x" * 400)
        call = (f"call_{i}", "read", {"path": f"/repo/src/mod{i}.py"})
        sb.assistant(f"Reading mod{i}", tool_calls=[call], model=MODEL)
        sb.tool_result(f"call_{i}", "read", f"contents of mod{i}\n" + "y" * 400)
        sb.assistant(f"Done with turn {i}", usage=1000 * (i + 1), model=MODEL)
    sb.write(path)
    assert sb.leaf is not None
    return path, sb.leaf


def _runs(mark: Path) -> int:
    return len(mark.read_text().splitlines()) if mark.exists() else 0


def test_nothing_that_sends_no_request_runs_the_key_helper(agent_dir: Path, server: HTTPServer, tmp_path: Path) -> None:
    """Each command runs as its own process (as the extension runs it): no key cached from an earlier one."""
    script, mark = _helper(tmp_path)
    _models_json(agent_dir, server.url_for("/v1"), f"!{script}")
    path, leaf = _session(tmp_path / "s.jsonl")
    window = ["--context-window", "32000", "--keep-recent-tokens", "400"]

    config = run_process(
        "pi", "config", "--json", "--cwd", tmp_path, "--untrusted", "--session-model", "local/coder-7b"
    )
    assert config.code == 0, config.stderr
    assert config.json["lookupAvailable"] is True
    assert _runs(mark) == 0, "pi config ran the key helper"

    dry = run_process("compact", path, "--mode", "verbatim", "--dry-run", "--json", *window)
    assert dry.code == 0, dry.stderr
    assert "picompact lookup" in dry.json["entries"][0]["summary"]  # lookup is advertised: a key is configured
    assert _runs(mark) == 0, "compact --mode verbatim --dry-run ran the key helper"

    checkpoint = run_process("pi", "checkpoint", path, "--leaf", leaf, "--reserve-tokens", "4096", *window)
    assert checkpoint.code == 0, checkpoint.stderr
    assert "picompact lookup" in checkpoint.json["summary"]
    assert _runs(mark) == 0, "pi checkpoint ran the key helper"

    preview = run_process("compact", path, "--mode", "summary", "--dry-run", "--json", *window)
    assert preview.code == 0, preview.stderr
    assert preview.json["model"]["api_key_available"] is True
    assert "models.json" in preview.json["model"]["api_key_source"]
    assert _runs(mark) == 0, "compact --mode summary --dry-run ran the key helper"

    written = run_process("compact", path, "--mode", "verbatim", *window)
    assert written.code == 0, written.stderr
    assert _runs(mark) == 0, "compact --mode verbatim ran the key helper"
    assert not server.log

    # The library's own answer: available (a command counts as configured), without running it.
    model = resolve_model("local/coder-7b")
    assert has_api_key(model) and model_available(("local", "coder-7b"))
    assert _runs(mark) == 0


def test_a_request_that_needs_the_key_runs_the_helper_once(agent_dir: Path, server: HTTPServer, tmp_path: Path) -> None:
    script, mark = _helper(tmp_path, sleep=0)
    _models_json(agent_dir, server.url_for("/v1"), f"!{script}")
    path, _leaf = _session(tmp_path / "s.jsonl")
    server.expect_request(OPENAI_PATH, method="POST").respond_with_response(openai_reply(GOOD_SUMMARY))
    result = run("compact", path, "--mode", "summary", "--keep-recent-tokens", "400")
    assert result.code == 0, result.stderr
    settle(server, 1)
    assert _runs(mark) == 1
    assert all(request.headers["Authorization"] == f"Bearer {KEY}" for request, _ in server.log)
    assert KEY not in result.stdout + result.stderr


def test_an_auth_file_command_counts_as_configured_without_running(agent_dir: Path, tmp_path: Path) -> None:
    script, mark = _helper(tmp_path, sleep=0)
    (agent_dir / "auth.json").write_text(json.dumps({"deepseek": {"type": "api_key", "key": f"!{script}"}}))
    model = resolve_model("deepseek/chat")
    assert has_api_key(model) and model_available(("deepseek", "chat"))
    assert _runs(mark) == 0
    found = find_api_key(model)
    assert found is not None and found.reveal() == KEY and _runs(mark) == 1


def _gone(pid: int) -> bool:
    """The process has exited (a zombie waiting for a parent that does not reap counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


def _kill_leftovers(pid: int) -> None:
    """After a failure: what the helper left running (its process group), so that nothing outlives the test."""
    if not _gone(pid):
        os.killpg(os.getpgid(pid), signal.SIGKILL)


def _wait_gone(pid: int) -> bool:
    deadline = time.monotonic() + 10
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return _gone(pid)


def test_a_helper_that_hangs_is_stopped_with_its_whole_process_group(
    agent_dir: Path, server: HTTPServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script, mark = _helper(tmp_path, hang=True)
    monkeypatch.setattr(keys, "KEY_COMMAND_TIMEOUT", 0.5)
    _models_json(agent_dir, server.url_for("/v1"), f"!{script}")
    path, _leaf = _session(tmp_path / "s.jsonl")
    result = run("compact", path, "--mode", "summary", "--keep-recent-tokens", "400")
    assert result.code == 2, result.stderr
    assert "gave no key" in result.stderr and "did not finish within 0.5 s" in result.stderr
    assert _runs(mark) == 1 and not server.log
    child = int((tmp_path / "child.pid").read_text())
    try:
        assert _wait_gone(child), "the helper's child is still running"
    finally:
        _kill_leftovers(child)


def test_the_timeout_can_be_given_per_call(tmp_path: Path) -> None:
    script, mark = _helper(tmp_path, hang=True)
    assert keys.run_key_command(str(script), timeout=0.3) is None
    assert _runs(mark) == 1
    child = int((tmp_path / "child.pid").read_text())
    try:
        assert _wait_gone(child)
    finally:
        _kill_leftovers(child)


def test_a_sigterm_while_the_helper_runs_stops_the_helper_too(
    agent_dir: Path, server: HTTPServer, tmp_path: Path
) -> None:
    """The extension gives up on a picompact with SIGTERM: the helper it was waiting for goes with it."""
    script, mark = _helper(tmp_path, hang=True)
    _models_json(agent_dir, server.url_for("/v1"), f"!{script}")
    path, _leaf = _session(tmp_path / "s.jsonl")
    pid_file = tmp_path / "child.pid"
    proc = subprocess.Popen(
        [*picompact_exe(), "compact", str(path), "--mode", "summary", "--keep-recent-tokens", "400"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while not (pid_file.exists() and pid_file.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert pid_file.exists(), "the helper never started"
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == -signal.SIGTERM
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    child = int(pid_file.read_text())
    try:
        assert _wait_gone(child), "the helper's child is still running"
    finally:
        _kill_leftovers(child)
    assert _runs(mark) == 1 and not server.log
