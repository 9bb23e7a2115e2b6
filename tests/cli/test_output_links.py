"""``compact --output`` never writes through a link, whatever the link's shape: to a file, to nothing (absolute or
relative), to a link to nothing, to a directory; only the names of an open descriptor (``/dev/stdout``) are
written as a shell redirection would."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.helpers.cli import run
from tests.helpers.sessions import simple_session

FLAGS = ("--keep-recent-tokens", "500", "--context-window", "100000")


@pytest.mark.parametrize(
    "shape", ["dangling absolute", "dangling relative", "dangling up", "chain to nothing", "to a file", "to a dir"]
)
def test_output_onto_any_link_is_refused_and_nothing_is_made(tmp_path: Path, shape: str) -> None:
    session = simple_session(turns=6, size=2000).write(tmp_path / "s.jsonl")
    before = session.read_bytes()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "out" / "copy.jsonl"
    out.parent.mkdir()
    existing = elsewhere / "bashrc"
    existing.write_text("x\n")
    if shape == "dangling absolute":
        out.symlink_to(elsewhere / "made.jsonl")
    elif shape == "dangling relative":
        out.symlink_to("made.jsonl")
    elif shape == "dangling up":
        out.symlink_to("../elsewhere/made.jsonl")
    elif shape == "chain to nothing":
        (elsewhere / "hop").symlink_to(elsewhere / "made.jsonl")
        out.symlink_to(elsewhere / "hop")
    elif shape == "to a file":
        out.symlink_to(existing)
    else:
        out.symlink_to(elsewhere)
    result = run("compact", session, *FLAGS, "--output", out)
    assert result.code == 2, result.stderr
    assert "link" in result.stderr or "directory" in result.stderr
    assert "internal error" not in result.stderr
    assert out.is_symlink()
    assert sorted(p.name for p in elsewhere.iterdir()) == sorted(
        ["bashrc", *(["hop"] if shape == "chain to nothing" else [])]
    )
    assert existing.read_text() == "x\n" and session.read_bytes() == before
    assert sorted(os.listdir(out.parent)) == ["copy.jsonl"]  # no temporary file either


def test_output_to_a_new_plain_name_still_writes(tmp_path: Path) -> None:
    session = simple_session(turns=6, size=2000).write(tmp_path / "s.jsonl")
    out = tmp_path / "copy.jsonl"
    result = run("compact", session, *FLAGS, "--output", out)
    assert result.code == 0, result.stderr
    assert out.read_bytes().startswith(session.read_bytes()) and not out.is_symlink()
