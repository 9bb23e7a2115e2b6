"""An incomplete last line: torn (a crash) only when it has stopped changing; while another program is still
writing it, compact says "the file is changing" (exit 3) and never writes, --repair included, so the other
writer's line is never split. Nothing here measures time: the growing line is appended to until picompact ends."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.helpers.hooked import hooked_exe
from tests.helpers.sessions import simple_session

pytestmark = pytest.mark.process  # these run picompact as real processes, alongside other writers

FLAGS = ("--keep-recent-tokens", "1000", "--context-window", "100000")
PARTIAL = b'{"type":"message","id":"feedf00d","parentId":null,"message":{"role":"user","content":"half'


def torn_session(tmp_path: Path) -> Path:
    path = tmp_path / "s.jsonl"
    path.write_bytes(simple_session(turns=8, size=2000).to_bytes() + PARTIAL)
    return path


def compact(path: Path, *extra: str, quiet: str) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PICOMPACT_TORN_QUIET": quiet, "PICOMPACT_FIXED_TIME": "2026-01-01T00:00:00Z"}
    env.pop("PICOMPACT_DEBUG", None)
    return subprocess.Popen(
        [*hooked_exe(), "compact", str(path), *FLAGS, *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )


def test_a_line_that_stopped_changing_is_torn_and_repair_is_offered(tmp_path: Path) -> None:
    path = torn_session(tmp_path)
    os.utime(path, (1_700_000_000, 1_700_000_000))  # unchanged for a long time
    before = path.read_bytes()
    proc = compact(path, quiet="2")
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, err
    message = err.decode()
    assert "is incomplete and has not changed for 2s" in message and "--repair" in message
    line = before.count(b"\n") + 1
    assert f"{path}:{line}:" in message
    assert path.read_bytes() == before
    repaired = compact(path, "--repair", quiet="2")
    _, err = repaired.communicate(timeout=120)
    assert repaired.returncode == 0, err
    assert path.read_bytes().startswith(before + b"\n")


@pytest.mark.parametrize("repair", [False, True])
def test_a_line_still_being_written_is_the_file_changing(tmp_path: Path, repair: bool) -> None:
    path = torn_session(tmp_path)
    written = b""
    proc = compact(path, *(["--repair"] if repair else []), quiet="600")
    with open(path, "ab") as other_writer:
        while proc.poll() is None:
            other_writer.write(b"x")
            other_writer.flush()
            written += b"x"
            time.sleep(0.05)
    err = proc.stderr.read().decode() if proc.stderr else ""
    assert proc.returncode == 3, err
    assert "the file is changing" in err and "Traceback" not in err
    data = path.read_bytes()
    assert data.endswith(PARTIAL + written)  # the other writer's line is whole: nothing was written into it
    assert data.count(b"\n") == simple_session(turns=8, size=2000).to_bytes().count(b"\n")
