"""picompact's own output on a full disk: exit 3 with "write error: No space left on device", never a success.

``/dev/full`` answers every write with ENOSPC, as a full disk does."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.helpers.cli import picompact_exe
from tests.helpers.hooked import hooked_exe
from tests.helpers.sessions import simple_session

pytestmark = [
    pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full"),
    pytest.mark.process,  # a real stdout on /dev/full
]

COMMANDS = [
    ("check", "{s}", "--context-window", "100000"),
    ("check", "{s}", "--context-window", "100000", "--json"),
    ("list", "{s}"),
    ("list", "{s}", "--json"),
    ("grep", "{s}", "Turn"),
    ("grep", "{s}", "Turn", "--json"),
    ("show", "{s}", "a0000002"),
    ("show", "{s}", "a0000002", "--raw"),
    ("context", "{s}"),
    ("compact", "{s}", "--output", "-", "--keep-recent-tokens", "1000", "--context-window", "100000"),
    ("compact", "{s}", "--dry-run", "--keep-recent-tokens", "1000", "--context-window", "100000"),
]


@pytest.mark.parametrize("args", COMMANDS, ids=[" ".join(a[:1] + a[2:]) for a in COMMANDS])
def test_output_to_a_full_disk_is_exit_3(tmp_path: Path, args: tuple[str, ...]) -> None:
    session = simple_session(turns=8, size=2000).write(tmp_path / "s.jsonl")
    before = session.read_bytes()
    with open("/dev/full", "wb") as full:
        proc = subprocess.run(
            [*hooked_exe(), *(a.format(s=session) for a in args)],
            stdout=full,
            stderr=subprocess.PIPE,
            check=False,
            env={**os.environ, "PICOMPACT_FIXED_TIME": "2026-01-01T00:00:00Z"},
        )
    stderr = proc.stderr.decode()
    assert proc.returncode == 3, stderr
    assert "write error: No space left on device" in stderr
    assert "Traceback" not in stderr and "internal error" not in stderr
    errors = [line for line in stderr.splitlines() if line.startswith("picompact: error:")]
    assert len(errors) == 1 and errors[0].startswith("picompact: error: <stdout>: write error: No space left")
    assert session.read_bytes() == before


def test_an_unwritable_stderr_changes_nothing_but_the_messages(tmp_path: Path) -> None:
    data = simple_session(turns=2).to_bytes()
    session = tmp_path / "s.jsonl"
    session.write_bytes(data.replace(b"\n", b"\n{broken\n", 3))  # three warnings to print
    cases = [(("list", str(session)), 0, True), (("check", str(tmp_path / "missing.jsonl")), 2, False)]
    for args, code, output in cases:
        with open("/dev/full", "wb") as full:
            proc = subprocess.run([*picompact_exe(), *args], stdout=subprocess.PIPE, stderr=full, check=False)
        assert proc.returncode == code
        assert bool(proc.stdout) == output
