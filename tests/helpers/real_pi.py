"""The real Pi 1.6 CLI from a test, in a private agent dir: the local model (``tools/pi/e2e/model.py``) on
127.0.0.1, and Pi in RPC mode with a list of commands."""

from __future__ import annotations

import contextlib
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.oracle import DRIVE, MODEL, NODE22, PACKAGE

# Nothing of the user's is loaded (skills, templates, themes, context files, MCP servers) and nothing is fetched.
QUIET = ["--no-skills", "--no-prompt-templates", "--no-themes", "--no-context-files", "--no-mcp", "--no-approve"]


def wait_for(probe: Callable[[], Any], timeout: float = 30) -> Any:
    """``probe()``'s first true value, asked every 50 ms; an AssertionError after ``timeout`` seconds."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        value = probe()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError("timed out")


@contextlib.contextmanager
def local_model(run_dir: Path, lifetime: int = 120) -> Iterator[int]:
    """The plain local model on 127.0.0.1 for ``lifetime`` seconds at most, logging its requests to
    ``run_dir/requests.jsonl``; yields its port, stops it after."""
    log, port_file = run_dir / "requests.jsonl", run_dir / "model.port"
    server = subprocess.Popen(
        [sys.executable, str(MODEL), "--port-file", str(port_file), "--log", str(log), "--lifetime", str(lifetime)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield int(wait_for(lambda: port_file.exists() and port_file.read_text().strip()))
    finally:
        server.terminate()
        server.wait(10)


def logged_requests(run_dir: Path) -> list[dict[str, Any]]:
    """What the local model of ``local_model(run_dir)`` logged, in order."""
    log = run_dir / "requests.jsonl"
    return [orjson.loads(line) for line in log.read_bytes().split(b"\n") if line.strip()] if log.exists() else []


def pi_env(root: Path) -> dict[str, str]:
    """Pi's environment in the sandbox ``root`` (``agent/``, ``home/``, ``run/``): nothing else, no API key."""
    return {
        "PATH": f"{NODE22.parent}:/usr/bin:/bin",
        "HOME": str(root / "home"),
        "TERM": "dumb",
        "LANG": "C.UTF-8",
        "TMPDIR": str(root / "run"),
        "PI_CODING_AGENT_DIR": str(root / "agent"),
        "PI_OFFLINE": "1",
        "PI_SKIP_VERSION_CHECK": "1",
        "PI_TELEMETRY": "0",
    }


def pi_rpc(
    args: list[str],
    env: dict[str, str],
    cwd: Path,
    commands: list[dict[str, Any]],
    stderr: Path,
    timeout: float = 60,
    *,
    approve: bool = False,
) -> list[dict[str, Any]]:
    """Run Pi (``args``: model, session options) in RPC mode: each prompt of ``commands`` waits for
    ``agent_settled``, any other command for its response. Returns every event Pi printed; its stderr goes to
    ``stderr``. ``approve``: Pi trusts the project (``--approve``), as a user who said yes to it."""
    quiet = [("--approve" if a == "--no-approve" else a) for a in QUIET] if approve else QUIET
    argv = [str(NODE22), str(PACKAGE / "dist" / "bundle" / "cli.js"), "--mode", "rpc", *args, *quiet, "--offline"]
    with open(stderr, "wb") as err:
        proc = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err)
    events: list[dict[str, Any]] = []

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            with contextlib.suppress(orjson.JSONDecodeError):
                events.append(orjson.loads(line))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert proc.stdin is not None
    try:
        for command in commands:
            start = len(events)
            proc.stdin.write(orjson.dumps(command) + b"\n")
            proc.stdin.flush()

            def done(start: int = start, command: dict[str, Any] = command) -> bool:
                if command["type"] == "prompt":
                    return any(e.get("type") == "agent_settled" for e in events[start:])
                return any(e.get("type") == "response" and e.get("id") == command["id"] for e in events)

            wait_for(done, timeout)
    finally:
        proc.stdin.close()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        reader.join(5)
    return list(events)


@contextlib.contextmanager
def drive_session(
    factory: pytest.TempPathFactory,
    name: str,
    *args: str,
    seed: int,
    prompts: int,
    context_window: int,
    setup: str,
) -> Iterator[dict[str, Any]]:
    """One Pi session driven by the scripted model (``tools/pi/e2e/drive.py session``: reserve 4096, keep 4000,
    ``setup`` run in the agent dir first, ``args`` passed on); yields its manifest, ``file`` naming the session
    file. The sandbox (kept with --keep for the tests) is removed after."""
    out = factory.mktemp(name)
    proc = subprocess.run(
        [
            sys.executable,
            str(DRIVE),
            "session",
            "--name",
            name,
            "--seed",
            str(seed),
            "--prompts",
            str(prompts),
            "--context-window",
            str(context_window),
            *args,
            "--reserve-tokens",
            "4096",
            "--keep-recent-tokens",
            "4000",
            "--discover-extensions",
            "--agent-setup",
            setup,
            "--keep",
            "--out",
            str(out),
        ],
        capture_output=True,
        timeout=600,
        check=False,
    )
    manifest = out / f"{name}.manifest.json"
    assert manifest.exists(), proc.stderr.decode("utf-8", "replace")[-2000:]
    data = orjson.loads(manifest.read_bytes())
    data["file"] = out / f"{name}.jsonl"
    try:
        yield data
    finally:
        shutil.rmtree(data["tempDir"], ignore_errors=True)
