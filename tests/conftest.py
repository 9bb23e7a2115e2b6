"""Fixtures shared by every test: keep each test away from the real home directory, and serve provider requests
from a real HTTP server on 127.0.0.1. Helper functions live in ``tests.helpers`` (re-exported here for older
imports)."""

from __future__ import annotations

import gc
import os
import re
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings
from pytest_httpserver import HTTPServer

# Helpers live in tests.helpers; these names stay importable from here for older imports.
from tests.helpers.cli import Result, picompact_exe, run, run_process
from tests.helpers.fixtures import FIXTURES, PI_COMPACTION_KEYS, PI_FIXTURES
from tests.helpers.process import interrupt_when_arrived
from tests.helpers.providers import set_provider_keys
from tests.helpers.sessions import side_branch_session

__all__ = [
    "FIXTURES",
    "PI_COMPACTION_KEYS",
    "PI_FIXTURES",
    "Result",
    "interrupt_when_arrived",
    "picompact_exe",
    "run",
    "run_process",
    "set_provider_keys",
    "side_branch_session",
]

# CI runs must not flake: the same examples every time there; locally hypothesis explores freely.
settings.register_profile("ci", derandomize=True, deadline=None)
if os.environ.get("CI"):
    settings.load_profile("ci")

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


# Under `make test` (pytest-xdist, --dist loadscope --no-loadscope-reorder), a worker takes the next module (or class)
# from the front of this order as it runs short of work. The longest ones go first, so that the short ones fill in
# around them at the end, instead of one long unit running alone on one core while the other is idle. Only the order
# changes; a unit not named here keeps its place, after these, larger units (more tests) first.
LONGEST_FIRST = [
    "tests/extension/test_pi_e2e.py::TestIdle",  # real Pi sessions
    "tests/session/test_session_index.py",
    "tests/extension/test_pi_e2e.py::TestMidRun",
    "tests/extension/test_provider_keys_e2e.py",  # four real Pi sessions
    "tests/session/test_write_concurrency.py",  # real processes killed under the lock
    "tests/acceptance/test_hostile_corpus.py",
    "tests/extension/test_pi_e2e.py",
    "tests/ops/test_audit.py",
    "tests/acceptance/test_oracle_e2e.py",
    "tests/extension/test_extension_logic.py",  # node with hung fake processes
    "tests/test_packaging.py",  # a real editable install
    "tests/extension/test_one_copy.py",
    "tests/session/test_index_prefix_hash.py",
    "tests/ops/test_coverage.py",
    "tests/session/test_loader_hostile.py",
    "tests/archive/test_equivalence.py",
    "tests/llm/test_key_commands.py",
    "tests/search/test_rawregex.py",
    "tests/checkpoint/test_verbatim_golden.py",
    "tests/checkpoint/summary/test_pi_resume.py",
    "tests/cli/test_write_errors.py",
    # Units of a second or two: by size alone several would come last, one core's tail.
    "tests/session/test_index_trust.py",
    "tests/search/test_search.py",
    "tests/cli/test_compact_cli.py",
    "tests/test_architecture.py",
    "tests/cli/test_lazy_commands.py",
    "tests/cli/test_boundary.py",
    "tests/redact/test_sent.py",
    "tests/search/test_line_search.py",
    "tests/ops/test_lint.py",
    "tests/cli/test_sigint_ignored.py",
    "tests/lookup/test_agent.py",
    "tests/search/test_prefilter.py",
    "tests/session/test_torn_line_writer.py",
    "tests/session/test_mutation_facts.py",
    "tests/archive/test_search_cli.py",
    "tests/llm/test_thinking_parity.py",
    "tests/checkpoint/test_evidence_readtool_pi.py",
]


def pytest_collection_finish(session: pytest.Session) -> None:
    """What collection made (the test modules, their parameters, pytest's own) lives to the end of the run: frozen,
    so the collector's full passes during the tests do not walk it again and again."""
    gc.collect()
    gc.freeze()


def _scope(item: pytest.Item) -> str:
    """The unit --dist loadscope keeps together: the class for tests in a class, else the module."""
    parts = item.nodeid.split("::")
    return "::".join(parts[:2]) if len(parts) > 2 else parts[0]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return
    sizes: dict[str, int] = {}
    for item in items:
        sizes[_scope(item)] = sizes.get(_scope(item), 0) + 1
    rank = {scope: n for n, scope in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: (rank.get(_scope(item), len(rank)), -sizes[_scope(item)]))  # stable: in-unit order


@pytest.fixture(scope="session")
def _homes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where each test's home directory is made: one directory, so that making a home costs the same for the last
    test as for the first (pytest's numbered directories are numbered by listing their parent)."""
    return tmp_path_factory.mktemp("homes")


@pytest.fixture(autouse=True)
def isolated_home(_homes: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point HOME, PI_CODING_AGENT_DIR and XDG_CACHE_HOME at a temp dir so no test reads or writes the real ~/.pi
    or ~/.cache."""
    home = Path(tempfile.mkdtemp(prefix="home", dir=_homes))
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(home / ".pi" / "agent"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))  # the index picompact keeps of session files
    for var in (
        "OPENAI_API_KEY",
        "ANTHROPIC_API_KEY",
        "OPENROUTER_API_KEY",
        "PICOMPACT_MODEL",
        "NO_COLOR",
        "PI_CODING_AGENT_SESSION_DIR",
        "PICOMPACT_NO_CACHE",
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


@pytest.fixture
def cli() -> Any:
    """The ``run`` helper as a fixture."""
    return run
