"""``picompact sessions`` and the omitted SESSION argument, found the way Pi finds the latest session."""

from __future__ import annotations

import os
from pathlib import Path

from tests.helpers.cli import run
from tests.helpers.sessions import simple_session


def project_dir(agent: Path, cwd: Path) -> Path:
    safe = "--" + str(cwd).lstrip("/").replace("/", "-") + "--"
    d = agent / "sessions" / safe
    d.mkdir(parents=True, exist_ok=True)
    return d


def test_check_without_session_uses_the_newest_session_of_the_cwd(tmp_path: Path, isolated_home: Path) -> None:
    agent = isolated_home / ".pi" / "agent"
    cwd = tmp_path / "proj"
    cwd.mkdir()
    folder = project_dir(agent, cwd)
    old = simple_session(turns=1)
    old.header["cwd"] = str(cwd)
    new = simple_session(turns=3)
    new.header["cwd"] = str(cwd)
    old_path = old.write(folder / "2026-01-01T00-00-00-000Z_old.jsonl")
    new_path = new.write(folder / "2026-01-02T00-00-00-000Z_new.jsonl")
    os.utime(old_path, (1_700_000_000, 1_700_000_000))
    os.utime(new_path, (1_800_000_000, 1_800_000_000))
    result = run("check", "--context-window", "200000", "--json", cwd=cwd)
    assert result.code == 0, result.stderr
    assert result.json["session"]["path"] == str(new_path)
    assert result.json["branch_length"] == len(new.entries)


def test_check_without_session_and_none_found(tmp_path: Path) -> None:
    result = run("check", cwd=tmp_path)
    assert result.code == 2
    assert "no Pi session found for this directory" in result.stderr


def test_sessions_lists_newest_first_with_metadata(tmp_path: Path, isolated_home: Path) -> None:
    agent = isolated_home / ".pi" / "agent"
    cwd = tmp_path / "proj"
    cwd.mkdir()
    folder = project_dir(agent, cwd)
    first = simple_session(turns=1)
    first.header["cwd"] = str(cwd)
    first.add({"type": "session_info", "name": "Refactor auth"})
    first.write(folder / "a.jsonl")
    (folder / "junk.jsonl").write_text("not a session\n")
    result = run("sessions", "--cwd", cwd, "--json")
    assert result.code == 0, result.stderr
    listed = result.json["sessions"]
    assert len(listed) == 1  # the junk file is not a session
    assert listed[0]["name"] == "Refactor auth"
    assert listed[0]["entries"] == len(first.entries)
    assert listed[0]["first_message"].startswith("Turn 0")
    human = run("sessions", "--cwd", cwd)
    assert "Refactor auth" in human.stdout and "a.jsonl" in human.stdout


def test_sessions_shows_both_times_and_marks_the_default(tmp_path: Path, isolated_home: Path) -> None:
    """Sorted by last message (Pi's picker); the default is the newest file (pi --continue), here another one."""
    agent = isolated_home / ".pi" / "agent"
    cwd = tmp_path / "proj"
    cwd.mkdir()
    folder = project_dir(agent, cwd)
    talked_last = simple_session(turns=1)  # its messages are the newest...
    talked_last.header["cwd"] = str(cwd)
    for entry in talked_last.entries:
        if entry["type"] == "message":
            entry["message"]["timestamp"] = 1_900_000_000_000
    touched_last = simple_session(turns=2)  # ...but this file was modified last
    touched_last.header["cwd"] = str(cwd)
    a = talked_last.write(folder / "a.jsonl")
    b = touched_last.write(folder / "b.jsonl")
    os.utime(a, (1_700_000_000, 1_700_000_000))
    os.utime(b, (1_800_000_000, 1_800_000_000))
    listed = run("sessions", "--cwd", cwd, "--json").json["sessions"]
    assert [s["path"] for s in listed] == [str(a), str(b)]
    assert [s["default"] for s in listed] == [False, True]
    assert listed[1]["file_modified"].startswith("2027-01-15T08:00:00")
    check = run("check", "--context-window", "200000", "--json", cwd=cwd)
    assert check.json["session"]["path"] == str(b)  # the marked row is what check uses
    text = run("sessions", "--cwd", cwd)
    rows = [line for line in text.stdout.splitlines() if line.endswith(".jsonl")]
    assert rows[0].startswith("  ") and rows[1].startswith("* ")
    assert "LAST MESSAGE" in text.stdout and "FILE MODIFIED" in text.stdout
    assert "pi --continue" in text.stderr


def test_sessions_says_where_it_looked(tmp_path: Path, isolated_home: Path) -> None:
    cwd = tmp_path / "empty"
    cwd.mkdir()
    result = run("sessions", "--cwd", cwd)
    assert result.code == 0
    expected = isolated_home / ".pi" / "agent" / "sessions" / ("--" + str(cwd).lstrip("/").replace("/", "-") + "--")
    assert f"no sessions found in {expected}; try --all" in result.stderr
    everywhere = run("sessions", "--all", cwd=cwd)
    assert f"no sessions found in {isolated_home / '.pi' / 'agent' / 'sessions'}" in everywhere.stderr
