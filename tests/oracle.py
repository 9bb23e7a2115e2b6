"""Where the tests find Pi (Pi 1.6's npm package and the node 22 it needs, installed by ``make pi`` and linked as
``tools/pi/node_modules``), and running a node script against it: the oracle (``tools/pi/oracle.mjs``, Pi's own
answers for a session file) and the end-to-end harness (``tools/pi/e2e/``, the real Pi CLI).

Tests that use Pi skip cleanly when it is not installed, and fail instead where it is required (CI sets
PICOMPACT_REQUIRE_PI=1)."""

from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

# Resolved at import, before the autouse fixture points HOME at a temp dir.
PI_TOOLS = Path(__file__).resolve().parent.parent / "tools" / "pi"
MODULES = Path(os.environ.get("PICOMPACT_PI_MODULES") or PI_TOOLS / "node_modules")
PACKAGE = MODULES / "@earendil-works" / "pi-coding-agent"
NODE22 = (MODULES / ".bin" / "node").resolve()  # node-linux-<cpu>/bin/node, the npm package's binary
ORACLE_SCRIPT = PI_TOOLS / "oracle.mjs"
E2E = PI_TOOLS / "e2e"
DRIVE = E2E / "drive.py"  # the real Pi CLI, many prompts, against a scripted model
RESUME = E2E / "resume.py"  # the real Pi CLI resumes a session once: what the model is sent
MODEL = E2E / "model.py"  # the local model server (plain or scripted)
NOT_INSTALLED = "Pi 1.6 (make pi: tools/pi, needs npm) is not installed"


def pi_installed() -> bool:
    """Pi's package and its node 22 are there."""
    return NODE22.is_file() and (PACKAGE / "package.json").is_file()


def oracle_installed() -> bool:
    """The oracle can run: Pi and its node are installed."""
    return pi_installed() and ORACLE_SCRIPT.is_file()


def oracle_for_comparison() -> bool:
    """For a test whose own assertions stand without Pi and which also compares with Pi when it can: whether the
    oracle is there. Where Pi is required (CI sets PICOMPACT_REQUIRE_PI=1) its absence fails the test instead of
    dropping the comparison silently."""
    if oracle_installed():
        return True
    if os.environ.get("PICOMPACT_REQUIRE_PI") == "1":
        pytest.fail(f"Pi is required (PICOMPACT_REQUIRE_PI=1) but not installed in {MODULES} (make pi)")
    return False


@dataclass(frozen=True)
class OracleRun:
    """What ``node oracle.mjs ARGS`` printed on stdout, and its exit status."""

    returncode: int
    stdout: bytes

    @property
    def json(self) -> Any:
        return orjson.loads(self.stdout) if self.stdout.strip() else {}


def _run(answer: dict[str, Any]) -> OracleRun:
    # node writes a lone surrogate as U+FFFD
    text = answer["stdout"].encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return OracleRun(answer["status"], text.encode("utf-8"))


_served: list[subprocess.Popen[bytes]] = []  # the node process of ask_oracle(), once started
_serving = threading.Lock()


def ask_oracle(*args: str | os.PathLike[str]) -> OracleRun:
    """``node tools/pi/oracle.mjs ARGS`` (``analyze|context|append-compaction FILE [options]``): the same output and
    exit status as that process, but answered by one node process (``oracle.mjs serve``) that this test process starts
    on first use and that ends with it (its stdin closes), so node and Pi's modules load once, not once per file."""
    argv = [str(arg) for arg in args]
    if argv[0] not in ("analyze", "context", "append-compaction"):
        raise ValueError(f"the oracle answers analyze, context and append-compaction, not: {argv}")
    with _serving:
        if not _served:
            proc = subprocess.Popen(
                [str(NODE22), str(ORACLE_SCRIPT), "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE
            )
            atexit.register(_stop, proc)
            _served.append(proc)
        proc = _served[0]
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(argv).encode() + b"\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
        assert line, f"the oracle process failed (exit {proc.poll()})"
        return _run(json.loads(line))


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.stdin is not None:
        proc.stdin.close()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def node_binary() -> str | None:
    """``$PICOMPACT_PI_NODE`` (a file or a command on PATH), else Pi's node 22 (tools/pi), else ``node`` on PATH."""
    chosen = os.environ.get("PICOMPACT_PI_NODE")
    if chosen:
        found = chosen if Path(chosen).is_file() else shutil.which(chosen)
        if found:
            return found
    if NODE22.is_file():
        return str(NODE22)
    return shutil.which("node")


def run_pi_script(tmp_path: Path, name: str, script: str, module: str, jobs: Any, what: str) -> Any:
    """Run the ES module ``script`` (written to ``tmp_path / name``) as ``node NAME PACKAGE jobs.json`` in
    ``tmp_path``; its stdout is JSON. Skips when node or Pi's ``module`` (a path inside the package) is missing,
    or when the script fails (``what`` names the piece of Pi in the skip reason)."""
    node = node_binary()
    if node is None or not (PACKAGE / module).is_file():
        pytest.skip(NOT_INSTALLED)
    script_file = tmp_path / name
    script_file.write_text(script)
    jobs_file = tmp_path / "jobs.json"
    jobs_file.write_text(json.dumps(jobs))
    proc = subprocess.run(
        [node, str(script_file), str(PACKAGE), str(jobs_file)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        pytest.skip(f"{what} could not run here: {proc.stderr.strip()[:200]}")
    return json.loads(proc.stdout)
