"""A line longer than the limit (``source.max_line_bytes()``: 128 MiB, ``PICOMPACT_MAX_LINE_BYTES``; small here), or
longer than a chunk and no JSON (NULs a crash left), is read past and never held: the rest of the file is read as
Pi reads it, the line is named in a warning, and memory stays bounded whatever the file's size (checked under an
address-space limit, on sparse files that cost no disk)."""

from __future__ import annotations

import io
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from pi_compact.session.load import load_session
from pi_compact.session.source import MAX_LINE_ENV, SkippedLine, read_lines
from tests.helpers.cli import run
from tests.helpers.process import run_capped

HEADER = b'{"type":"session","version":3,"id":"s","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/x"}\n'
FIRST = b'{"type":"message","id":"a1","parentId":null,"message":{"role":"user","content":"first WORDA"}}\n'
AFTER = b'{"type":"message","id":"a3","parentId":"a1","message":{"role":"user","content":"after WORDB"}}\n'
BOUND = 1000


class Counting(io.RawIOBase):
    """``size`` bytes of ``fill`` and no newline."""

    def __init__(self, size: int, fill: bytes = b"x") -> None:
        self.left = size
        self.fill = fill

    def readinto(self, buf: bytearray) -> int:  # type: ignore[override]
        n = min(len(buf), self.left)
        buf[:n] = self.fill * n
        self.left -= n
        return n


def test_a_line_over_the_limit_is_read_past_and_counted_whole() -> None:
    size = 10 * 1024 * 1024
    lines = list(read_lines(Counting(size, b"{"), chunk=256, max_line=BOUND))
    assert len(lines) == 1 and type(lines[0]) is SkippedLine
    assert (lines[0].size, lines[0].too_long, lines[0].tail) == (size, True, b"{" * 64)


@pytest.mark.parametrize("newline", [True, False])
def test_lines_up_to_the_limit_are_read_and_longer_ones_skipped(newline: bool) -> None:
    end = b"\n" if newline else b""
    exact = b"t" * (BOUND - len(end)) + end
    assert list(read_lines(io.BytesIO(HEADER + exact), chunk=64, max_line=BOUND)) == [HEADER, exact]
    header, longer, *rest = read_lines(
        io.BytesIO(HEADER + b"t" + exact + (AFTER if newline else b"")), chunk=64, max_line=BOUND
    )
    assert header == HEADER and type(longer) is SkippedLine and longer.size == BOUND + 1
    assert longer.endswith(b"\n") is newline and rest == ([AFTER] if newline else [])


def test_a_long_line_that_is_no_json_is_skipped_below_the_limit() -> None:
    data = HEADER + b"\x00" * 5000 + b"\n" + AFTER
    header, nuls, after = read_lines(io.BytesIO(data), chunk=256, max_line=10**9)
    assert (header, after) == (HEADER, AFTER)
    assert type(nuls) is SkippedLine and not nuls.too_long and nuls.size == 5001
    # a long line that may be JSON is held
    text = b'  {"type":"custom","id":"c","data":"' + b"z" * 5000 + b'"}\n'
    assert list(read_lines(io.BytesIO(text), chunk=256, max_line=10**9)) == [text]


@pytest.fixture
def huge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(MAX_LINE_ENV, str(BOUND))
    path = tmp_path / "huge.jsonl"
    line = b'{"type":"custom","id":"a2","parentId":"a1","data":"' + b"z" * (20 * BOUND) + b'"}\n'
    path.write_bytes(HEADER + FIRST + line + AFTER)
    return path


def test_load_check_lint_and_grep_skip_a_line_over_the_limit_and_name_it(huge: Path) -> None:
    session = load_session(huge)
    assert [e.id for e in session.entries] == ["a1", "a3"]
    (warning,) = [d for d in session.diagnostics if d.code == "line-too-long"]
    assert warning.line == 3 and "line is 20,054 bytes, over picompact's limit of 1,000" in warning.message
    assert session.entries[1].offset == huge.stat().st_size - len(AFTER)  # offsets count the skipped bytes
    assert session.entries[1].raw["message"]["content"] == "after WORDB"  # read back at that offset
    check = run("check", huge, "--context-window", "200000", env={MAX_LINE_ENV: str(BOUND)})
    assert check.code in (0, 1) and f"{huge}:3: line is 20,054 bytes" in check.stderr
    lint = run("lint", huge, "--json", env={MAX_LINE_ENV: str(BOUND)})
    (report,) = lint.json["files"]
    assert report["readable"] and "line-too-long" in report["codes"]
    grep = run("grep", "WORDB", huge, "--json", env={MAX_LINE_ENV: str(BOUND)})
    assert grep.code == 0 and "a3" in grep.stdout


def test_the_line_number_counts_the_indexed_prefix(huge: Path) -> None:
    data = huge.read_bytes()
    huge.write_bytes(HEADER + FIRST)
    load_session(huge, cache=True)  # an index of the first two lines
    huge.write_bytes(data)
    for cache in (True, False):
        session = load_session(huge, cache=cache)
        assert [d.line for d in session.diagnostics if d.code == "line-too-long"] == [3]
        assert [e.id for e in session.entries] == ["a1", "a3"]


def test_a_file_that_is_one_line_over_the_limit_is_refused_with_the_reason(huge: Path) -> None:
    huge.write_bytes(b'{"type":"session",' + b" " * (3 * BOUND))
    check = run("check", huge, "--context-window", "200000", env={MAX_LINE_ENV: str(BOUND)})
    assert check.code == 2
    assert f"{huge}:1: line is longer than picompact's limit of 1,000 bytes" in check.stderr


# Memory independent of the input: each command runs in a process whose address space is capped below the file's
# size; the files are sparse (their NULs cost no disk) and the line limit is small, so each runs in about a second.
LIMIT_AS = 700 * 1024 * 1024
SPARSE = 800 * 1024 * 1024


def _capped(args: list[str], home: Path) -> subprocess.CompletedProcess[bytes]:
    return run_capped(args, home, LIMIT_AS, environ={MAX_LINE_ENV: str(16 * 1024 * 1024)})


def _sparse(path: Path, head: bytes, hole: int, end: bytes = b"") -> Path:
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(len(head) + hole)
        f.seek(0, os.SEEK_END)
        f.write(end)
    return path


@pytest.mark.skipif(not hasattr(resource, "RLIMIT_AS") or sys.platform != "linux", reason="RLIMIT_AS on Linux")
def test_huge_lines_cost_bounded_memory(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    # a valid session with a NUL tail far larger than the address space (what a crash can leave)
    tail = _sparse(tmp_path / "tail.jsonl", HEADER + FIRST, SPARSE)
    for command in (
        ["check", str(tail), "--context-window", "200000"],
        ["lint", str(tail)],
        ["grep", "WORDA", str(tail)],
    ):
        done = _capped(command, home)
        assert done.returncode in (0, 1), (command, done.stderr[-2000:])
        assert b"Traceback" not in done.stderr and b"MemoryError" not in done.stderr
    # one line that may be JSON and never ends: no MemoryError, a message naming the file and the line
    endless = _sparse(tmp_path / "endless.jsonl", HEADER + FIRST + b'{"type":"custom","data":"', SPARSE)
    done = _capped(["check", str(endless), "--context-window", "200000"], home)
    assert done.returncode in (0, 1) and f"{endless}:3: line is {SPARSE + 25:,} bytes".encode() in done.stderr
    # a file of NULs and a newline, searched with the other sessions of its folder
    sessions = tmp_path / "sessions"
    sessions.mkdir()
    _sparse(sessions / "nuls.jsonl", b"", SPARSE, b"\n")
    (sessions / "ok.jsonl").write_bytes(HEADER + FIRST + AFTER)
    done = _capped(["search", "WORDB", "--dir", str(sessions)], home)
    assert done.returncode == 0 and b"after WORDB" in done.stdout, done.stderr[-2000:]


@pytest.mark.skipif(not hasattr(resource, "RLIMIT_AS") or sys.platform != "linux", reason="RLIMIT_AS on Linux")
@pytest.mark.parametrize("shape", ["tail", "endless", "line"])
def test_every_command_on_a_file_larger_than_its_memory_ends_with_an_answer(tmp_path: Path, shape: str) -> None:
    home = tmp_path / "home"
    home.mkdir()
    project = tmp_path / "proj"
    project.mkdir()
    header = HEADER.replace(b'"cwd":"/x"', b'"cwd":"' + str(project).encode() + b'"')
    path = tmp_path / f"{shape}.jsonl"
    if shape == "tail":  # a valid session, then NULs (what a crash can leave)
        _sparse(path, header + FIRST, SPARSE)
    elif shape == "endless":  # a line that may be JSON and never ends
        _sparse(path, header + FIRST + b'{"type":"custom","data":"', SPARSE)
    else:  # a line of NULs past the limit, then a good entry
        _sparse(path, header + FIRST + b'{"type":"custom","data":"', SPARSE, b'"}\n' + AFTER)
    folder = home / "agent" / "sessions" / ("--" + str(project).strip("/").replace("/", "-") + "--")
    folder.mkdir(parents=True)
    os.link(path, folder / path.name)
    for command in (
        ["list", str(path)],
        ["show", "a1", str(path)],
        ["context", str(path)],
        ["audit", str(path), "--context-window", "200000"],
        ["coverage", str(path)],
        ["compact", str(path), "--dry-run", "--context-window", "200000"],
        ["prune", str(path), "--dry-run", "--context-window", "200000"],
        ["lint", "--all", str(folder)],
        ["grep", "-c", "WORDA", str(path)],
        ["sessions", "--all"],
        ["rules", "--cwd", str(project)],
        ["search", "WORDA", "--dir", str(folder)],
    ):
        done = _capped(command, home)
        assert done.returncode in (0, 1, 2), (command, done.returncode, done.stderr[-2000:])
        assert b"Traceback" not in done.stderr and b"MemoryError" not in done.stderr, command
        assert done.stderr.count(b"\n") <= 3, (command, done.stderr[-2000:])
        if command[0] in ("search", "grep", "sessions"):  # what the file holds before the long part is there
            found = {"search": b"first WORDA", "grep": b"a1:1\n", "sessions": b"first WORDA"}[command[0]]
            assert done.returncode == 0 and found in done.stdout, (command, done.stdout[-2000:])
