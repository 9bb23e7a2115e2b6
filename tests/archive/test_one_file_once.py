"""One session file reached by several names (a hard link, a symlink, two roots) is searched once, under the same
name every time; two files that hold one session id (copies, or a forged header) stay two, and
``context_show_entry`` says which ones instead of opening the first."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest

from pi_compact.archive import session_files
from tests.helpers.cli import run
from tests.helpers.sessions import SessionBuilder


def _session(path: Path, session_id: str, text: str, cwd: str = "/work/app") -> tuple[Path, str]:
    path.parent.mkdir(parents=True, exist_ok=True)
    sb = SessionBuilder(cwd=cwd, session_id=session_id)
    sb.user("hello")
    entry = sb.tool("bash", {"command": "make"}, text)
    return sb.write(path), entry


@pytest.fixture
def folder(agent: Path) -> Path:
    return agent / "sessions" / "--work-app--"


@pytest.mark.parametrize(
    "names",
    [
        ["hard"],
        ["symlink"],
        ["hard", "symlink"],
        ["symlink first"],
        ["hard in another project", "relative symlink"],
    ],
)
def test_a_session_under_several_names_is_found_once(folder: Path, agent: Path, names: list[str]) -> None:
    real, _ = _session(folder / "b-real.jsonl", "sess-1", "walrus failed")
    for name in names:
        if name == "hard":
            os.link(real, folder / "c-hard.jsonl")
        elif name == "symlink":
            (folder / "d-link.jsonl").symlink_to(real)
        elif name == "symlink first":
            (folder / "a-link.jsonl").symlink_to(real)
        elif name == "hard in another project":
            (agent / "sessions" / "--work-lib--").mkdir(parents=True)
            os.link(real, agent / "sessions" / "--work-lib--" / "a.jsonl")
        elif name == "relative symlink":
            (folder / "e-rel.jsonl").symlink_to("b-real.jsonl")
    found = session_files().files
    assert len(found) == 1
    result = run("search", "walrus", "--json")
    assert result.code == 0, result.stderr
    sessions = [hit["session"] for hit in result.json["results"]]
    assert len(sessions) == 1
    assert sessions == [str(real)]  # the first name (in path order) that is not a link, every time
    assert [h["session"] for h in run("search", "walrus", "--json").json["results"]] == sessions


def test_a_session_under_two_roots_is_found_once(folder: Path) -> None:
    _session(folder / "a.jsonl", "sess-1", "walrus failed")
    result = run("search", "walrus", "--dir", folder, "--json")
    assert result.code == 0, result.stderr
    assert len(result.json["results"]) == 1


def test_two_files_with_one_session_id_are_named_not_guessed(folder: Path, tmp_path: Path) -> None:
    current, _ = _session(folder / "current.jsonl", "sess-here", "nothing")
    first, entry = _session(folder / "one.jsonl", "sess-dup", "walrus failed in the first")
    second = folder / "two.jsonl"
    shutil.copy(first, second)
    with open(second, "ab") as handle:  # a copy that went on differently
        handle.write(b"\n")
    search = run("pi", "tool", "context_search_sessions", current, "--args", json.dumps({"query": "walrus"}))
    text = search.json["text"]
    assert text.count("session sess-dup") == 2 and "shared by 2 files" in text
    by_id = run("pi", "tool", "context_show_entry", current, "--args", json.dumps({"id": entry, "session": "sess-dup"}))
    assert by_id.code == 2 and str(first) in by_id.stderr and str(second) in by_id.stderr
    for path in (first, second):
        by_file = run(
            "pi", "tool", "context_show_entry", current, "--args", json.dumps({"id": entry, "session": str(path)})
        )
        assert by_file.code == 0 and "command: make" in by_file.json["text"]
