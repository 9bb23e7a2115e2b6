"""``compact --context-file``: a path that is not a readable regular file is a usage error saying what it is."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers.cli import run
from tests.helpers.sessions import simple_session


def _refused(tmp_path: Path, target: Path) -> str:
    session = simple_session(turns=6, size=400).write(tmp_path / "s.jsonl")
    before = session.read_bytes()
    result = run("compact", session, "--keep-recent-tokens", "200", "--context-file", target)
    assert result.code == 2, result.stderr
    assert session.read_bytes() == before
    errors = [line for line in result.stderr.splitlines() if line.startswith("picompact: error: ")]
    assert len(errors) == 1 and str(target) in errors[0] and "--context-file" in errors[0], result.stderr
    return errors[0]


def test_a_fifo_is_not_a_regular_file_and_is_never_opened(tmp_path: Path) -> None:
    fifo = tmp_path / "AGENTS.md"
    os.mkfifo(fifo)  # opening it would wait for a writer forever
    error = _refused(tmp_path, fifo)
    assert "not a regular file (a FIFO)" in error and "no such file" not in error


def test_a_directory_is_named_as_one(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    assert "is a directory" in _refused(tmp_path, tmp_path / "docs")


def test_a_missing_file_is_no_such_file(tmp_path: Path) -> None:
    assert "no such file" in _refused(tmp_path, tmp_path / "nope.md")


@pytest.mark.skipif(not Path("/dev/null").exists(), reason="no /dev/null")
def test_a_device_is_not_a_regular_file(tmp_path: Path) -> None:
    link = tmp_path / "AGENTS.md"
    link.symlink_to("/dev/null")
    assert "not a regular file (a device)" in _refused(tmp_path, link)
