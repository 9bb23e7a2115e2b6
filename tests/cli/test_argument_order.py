"""grep, show and lookup take what to look for first and the session second, as grep takes PATTERN [FILE]; the
older SESSION-first order still works where it cannot mean anything else, with a one-line hint."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
import typer.main

from pi_compact.cli import app
from tests.helpers.cli import run
from tests.helpers.sessions import SessionBuilder

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
DEMO = "examples/demo-session.jsonl"


@pytest.fixture
def session(tmp_path: Path) -> tuple[Path, str]:
    sb = SessionBuilder()
    sb.user("the total is off by one cent")
    sb.assistant("found the off by one: a rounding error")
    path = sb.write(tmp_path / "s.jsonl")
    first = run("grep", "-l", "off by one", path).stdout.split()[0]
    return path, first


def test_the_pattern_comes_first_as_in_grep() -> None:
    grep = run("grep", "off by one", DEMO, cwd=ROOT)
    assert grep.code == 0 and grep.stderr == ""
    assert grep.stdout.startswith("aaad06b7:text:")
    show = run("show", "aaad06b7", DEMO, cwd=ROOT)
    assert show.code == 0 and show.stderr == ""
    assert show.stdout.startswith("ENTRY aaad06b7 user")


def test_the_older_order_still_works_with_a_one_line_hint(session: tuple[Path, str]) -> None:
    path, entry = session
    new = run("grep", "rounding", path)
    old = run("grep", path, "rounding")
    assert old.code == 0 and old.stdout == new.stdout
    assert old.stderr == (
        "picompact: hint: PATTERN comes first, SESSION second (as grep takes PATTERN FILE): "
        f"picompact grep rounding {shlex.quote(str(path))}\n"
    )
    shown = run("show", path, entry)
    assert shown.code == 0 and shown.stdout == run("show", entry, path).stdout
    assert shown.stderr.count("\n") == 1 and f"picompact show {entry} " in shown.stderr


def test_two_existing_files_are_read_in_grep_order(session: tuple[Path, str], tmp_path: Path) -> None:
    """Both arguments name files: PATTERN then SESSION, as grep reads them, no guessing."""
    path, _ = session
    other = tmp_path / "other.jsonl"
    other.write_bytes(path.read_bytes())
    result = run("grep", str(path), other)
    assert result.code == 1 and result.stderr == ""  # the path of s.jsonl is searched for in other.jsonl


def test_a_missing_session_is_named_as_such(tmp_path: Path) -> None:
    result = run("grep", "off by one", tmp_path / "nope.jsonl")
    assert result.code == 2
    assert "nope.jsonl" in result.stderr and "off by one" not in result.stderr


def test_stdin_session_in_either_order(session: tuple[Path, str]) -> None:
    path, _ = session
    data = path.read_bytes()
    new = run("grep", "rounding", "-", input=data)
    assert new.code == 0 and new.stderr == "" and "rounding" in new.stdout
    old = run("grep", "-", "rounding", input=data)
    assert old.stdout == new.stdout and "hint:" in old.stderr


def test_f_reads_patterns_from_a_file_one_a_line(session: tuple[Path, str], tmp_path: Path) -> None:
    path, _ = session
    patterns = tmp_path / "patterns.txt"
    patterns.write_text("rounding\ncent\n")
    result = run("grep", "-f", patterns, path)
    assert result.code == 0, result.stderr
    assert [line.split(":", 3)[3] for line in result.stdout.splitlines()] == [
        "the total is off by one cent",
        "found the off by one: a rounding error",
    ]
    both = run("grep", "-f", patterns, "-e", "total", path)
    assert both.code == 0 and len(both.stdout.splitlines()) == 2
    piped = run("grep", "-f", "-", path, input=b"rounding\n")
    assert piped.code == 0 and piped.stdout.splitlines() == [result.stdout.splitlines()[1]]


def test_f_errors_are_usage_errors(session: tuple[Path, str], tmp_path: Path) -> None:
    path, _ = session
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    assert run("grep", "-f", empty, path).code == 2
    missing = run("grep", "-f", tmp_path / "missing.txt", path)
    assert missing.code == 2 and "missing.txt" in missing.stderr
    clash = run("grep", "-f", "-", "-", input=path.read_bytes())
    assert clash.code == 2 and "clash" in clash.stderr
    extra = run("grep", "-f", empty, path, "more")
    assert extra.code == 2 and "only argument is SESSION" in extra.stderr


def test_the_readme_and_examples_use_the_grep_order() -> None:
    """No command in the README, the docs or examples/ puts the session before the pattern or the id."""
    texts = [
        README,
        *(p.read_text() for p in sorted([*(ROOT / "docs").glob("*.md"), *(ROOT / "examples").glob("*.sh")])),
    ]
    old = re.compile(r"picompact (grep|show|lookup) (\"?\$session\"?|SESSION|FILE|\S+\.jsonl)\b")
    found = [m.group(0) for text in texts for m in old.finditer(text)]
    allowed = {"picompact grep SESSION", "picompact show SESSION"}  # where the README describes the older order
    assert set(found) <= allowed, found


def test_help_spells_the_session_argument_one_way() -> None:
    group = typer.main.get_command(app)
    usages = []
    for name in sorted(group.commands):  # type: ignore[attr-defined]
        result = run(name, "--help")
        usages.append(result.stdout.splitlines()[0])
    for sub in ("checkpoint", "tool", "install"):
        usages.append(run("pi", sub, "--help").stdout.splitlines()[0])
    for usage in usages:
        assert "[session" not in usage and "{" not in usage, usage
    assert "Usage: picompact grep [OPTIONS] [PATTERN [SESSION]]" in usages
    assert "Usage: picompact show [OPTIONS] ENTRY_ID [SESSION]" in usages
    assert "Usage: picompact check [OPTIONS] [SESSION]" in usages
    assert "Usage: picompact pi checkpoint [OPTIONS] SESSION" in usages
