"""Fixtures shared by every test: keep each test away from the real home directory, and serve provider requests
from a real HTTP server on 127.0.0.1. Helper functions live in ``tests.helpers`` (re-exported here for older
imports)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from pytest_httpserver import HTTPServer

from tests.helpers.cli import Result, picompact_exe, run, run_process

__all__ = ["Result", "picompact_exe", "run", "run_process"]

# CI runs must not flake: the same examples every time there; locally hypothesis explores freely.
settings.register_profile("ci", derandomize=True, deadline=None)
if os.environ.get("CI"):
    settings.load_profile("ci")

FIXTURES = Path(__file__).parent / "fixtures"
PI_FIXTURES = FIXTURES / "pi"

# The keys of a compaction entry as Pi writes them, in its order.
PI_COMPACTION_KEYS = [
    "type",
    "id",
    "parentId",
    "timestamp",
    "summary",
    "firstKeptEntryId",
    "tokensBefore",
    "details",
    "usage",
    "fromHook",
]


# Where Pi must be present (CI sets PICOMPACT_REQUIRE_PI=1), a test skipped for want of Pi fails the run instead.
_PI_SKIP = re.compile(r"\bPi\b|oracle")
_pi_skips: list[str] = []


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.skipped and os.environ.get("PICOMPACT_REQUIRE_PI") == "1":
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        if _PI_SKIP.search(reason):
            _pi_skips.append(f"{report.nodeid}: {reason}")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _pi_skips:
        sys.stderr.write("\nPICOMPACT_REQUIRE_PI=1 but tests skipped for want of Pi:\n")
        for line in _pi_skips[:20]:
            sys.stderr.write(f"  {line}\n")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point HOME and PI_CODING_AGENT_DIR at a temp dir so no test reads or writes the real ~/.pi."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(home / ".pi" / "agent"))
    for var in (
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "OPENROUTER_API_KEY",
        "PICOMPACT_MODEL",
        "NO_COLOR",
        "PI_CODING_AGENT_SESSION_DIR",
    ):
        monkeypatch.delenv(var, raising=False)
    return home


@pytest.fixture
def agent(isolated_home: Path) -> Path:
    """Pi's agent dir (``PI_CODING_AGENT_DIR``) inside the isolated home, created."""
    path = Path(os.environ["PI_CODING_AGENT_DIR"])
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="session")
def _shared_server() -> Iterator[HTTPServer]:
    """One threaded server for the session (stopping one takes half a second), so concurrent
    requests and a slow handler do not block each other."""
    srv = HTTPServer(host="127.0.0.1", port=0, threaded=True)
    srv.start()
    yield srv
    srv.clear()
    if srv.is_running():
        srv.stop()


@pytest.fixture
def server(_shared_server: HTTPServer) -> Iterator[HTTPServer]:
    """The shared server with no expectations and an empty log."""
    _shared_server.clear()
    yield _shared_server
    _shared_server.clear()


def side_branch_session(path: Path, question: str) -> tuple[Path, str]:
    """Six plain turns, then ``question`` (and an answer) branching off the second turn's last reply, so the file
    ends on the side branch. Returns the written file and the id of the main branch's tip."""
    from tests.sessionkit import simple_session

    sb = simple_session(turns=6, size=400)
    main_tip = sb.leaf
    sb.user(question, parent=sb.entries[8]["id"])
    sb.assistant("side answer")
    return sb.write(path), main_tip


def set_provider_keys(monkeypatch: pytest.MonkeyPatch, openai_key: str, anthropic_key: str) -> dict[str, str]:
    """Put fake OpenAI and Anthropic keys in the environment; returns them by variable name."""
    keys = {"OPENAI_API_KEY": openai_key, "ANTHROPIC_API_KEY": anthropic_key}
    for name, value in keys.items():
        monkeypatch.setenv(name, value)
    return keys


@pytest.fixture
def cli() -> Any:
    """The ``run`` helper as a fixture."""
    return run


def interrupt_when_arrived(
    proc: subprocess.Popen[bytes], arrived: threading.Event, release: threading.Event
) -> tuple[bytes, bytes]:
    """Press Ctrl-C on ``proc`` once its request reached the server; then let the handler go and reap the process.

    Returns what the process wrote (stdout, stderr)."""
    try:
        assert arrived.wait(60), "the request never reached the server"
        proc.send_signal(signal.SIGINT)
        return proc.communicate(timeout=60)
    finally:
        release.set()
        if proc.poll() is None:
            proc.kill()
            proc.wait()
