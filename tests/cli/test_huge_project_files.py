"""A repository's files cannot decide how much memory a command takes: an AGENTS.md, a ``.git`` file or a
``.pi/settings.json`` larger than the address space (sparse files: their NULs cost no disk) is not read whole;
every command still answers, the settings file ignored with a warning naming it."""

from __future__ import annotations

import resource
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.process import run_capped
from tests.helpers.sessions import SessionBuilder

LIMIT_AS = 1024 * 1024 * 1024
HUGE = 1200 * 1024 * 1024

pytestmark = pytest.mark.skipif(
    not hasattr(resource, "RLIMIT_AS") or sys.platform != "linux", reason="RLIMIT_AS on Linux"
)


def _capped(args: list[str], home: Path, cwd: Path) -> subprocess.CompletedProcess[bytes]:
    return run_capped(args, home, LIMIT_AS, cwd=cwd)


def _sparse(path: Path, head: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(HUGE)


@pytest.mark.parametrize("planted", ["AGENTS.md", "CLAUDE.md", ".git", ".pi/settings.json"])
def test_a_huge_file_in_the_project_is_not_read_whole(tmp_path: Path, planted: str) -> None:
    home = tmp_path / "home"
    project = tmp_path / "proj"
    project.mkdir(parents=True)
    head = {".git": b"gitdir: ", ".pi/settings.json": b'{"compaction": {"x": "'}.get(planted, b"# Rules\n")
    _sparse(project / planted, head)
    sb = SessionBuilder(cwd=str(project))
    for n in range(30):
        sb.user(f"question {n} " + "word " * 300)
        sb.assistant("answer " * 200, usage=5000 + 3000 * n)
    session = sb.write(tmp_path / "s.jsonl")
    for command in (
        ["check", str(session)],
        ["compact", str(session), "--dry-run"],
        ["context", str(session)],
        ["prune", str(session), "--dry-run"],
        ["sessions"],
        ["rules"],
        ["pi", "config"],
    ):
        done = _capped(command, home, project)
        assert done.returncode in (0, 1), (command, done.stderr[-2000:])
        assert b"MemoryError" not in done.stderr and b"internal error" not in done.stderr, command
        if planted == ".pi/settings.json" and command[0] in ("check", "pi"):
            assert b"settings.json: project settings larger than" in done.stderr, done.stderr
            assert b"Pi reads it" in done.stderr
