"""compact --output to odd targets: a FIFO or device is written to as a shell redirection would (never renamed
over), an unusable name is a clear error naming it, and the session is never touched."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path

from tests.helpers.cli import run
from tests.helpers.sessions import simple_session

FLAGS = ("--keep-recent-tokens", "500", "--context-window", "100000")
ENV = {"PICOMPACT_FIXED_TIME": "2026-02-03T04:05:06.000Z", "PICOMPACT_ID_SEED": "t"}


def test_output_to_a_fifo_writes_through_it(tmp_path: Path) -> None:
    session = simple_session(turns=6, size=2000).write(tmp_path / "s.jsonl")
    before = session.read_bytes()
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    result = run("compact", session, *FLAGS, "--output", fifo, env=ENV)
    reader.join(timeout=60)
    assert result.code == 0, result.stderr
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # still the FIFO, not a file renamed over it
    expected = run("compact", session, *FLAGS, "--output", "-", env=ENV).stdout_bytes
    assert received == [expected] and expected.startswith(before)
    assert session.read_bytes() == before


def test_output_name_too_long_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    session = simple_session(turns=6, size=2000).write(tmp_path / "s.jsonl")
    target = tmp_path / ("x" * 300 + ".jsonl")
    result = run("compact", session, *FLAGS, "--output", target, env=ENV)
    assert result.code == 2, result.stderr
    assert "File name too long" in result.stderr and str(target) in result.stderr
    assert "internal error" not in result.stderr


def test_a_nan_lock_timeout_is_refused(tmp_path: Path) -> None:
    session = simple_session(turns=6, size=2000).write(tmp_path / "s.jsonl")
    before = session.read_bytes()
    for value in ("nan", "-1", "soon"):
        result = run("compact", session, *FLAGS, env={**ENV, "PICOMPACT_LOCK_TIMEOUT": value})
        assert result.code == 2 and "PICOMPACT_LOCK_TIMEOUT" in result.stderr, result.stderr
    assert session.read_bytes() == before
