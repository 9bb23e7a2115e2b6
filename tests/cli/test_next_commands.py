"""Every "next page" command picompact prints runs as printed, page after page, to the end."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.helpers.cli import run
from tests.helpers.sessions import SessionBuilder, simple_session

NEXT = re.compile(r"next(?: page)?: (picompact .*)$", re.M)


def follow(*args: str, limit: int = 50) -> list[str]:
    """Run the command, then each printed next command; return the stdout of every page."""
    pages: list[str] = []
    command = [str(a) for a in args]
    for _ in range(limit):
        result = run(*command)
        assert result.code == 0, (command, result.stderr)
        pages.append(result.stdout)
        found = NEXT.search(result.stderr)
        if not found:
            return pages
        printed = shlex.split(found.group(1))
        assert printed[0] == "picompact"
        command = printed[1:]
    raise AssertionError("the pages never ended")


@pytest.fixture
def session(tmp_path: Path) -> Path:
    sb = simple_session(turns=30, size=300)
    sb.tool_result("call_0", "read", "\n".join(f"long line {i} " + "w" * 200 for i in range(400)))
    return sb.write(tmp_path / "s.jsonl")


def long_entry(session: Path) -> str:
    listed = run("list", session, "--json", "--limit", "1000").json["entries"]
    return max(listed, key=lambda e: e["size"])["id"]


def test_list_pages_chain(session: Path) -> None:
    pages = follow("list", session, "--limit", "7")
    ids = [line.split()[0] for page in pages for line in page.splitlines()]
    every = run("list", session, "--limit", "1000").stdout.splitlines()
    assert len(pages) > 3 and len(ids) == len(set(ids)) == len(every)


@pytest.mark.parametrize("extra", [(), ("-C", "1"), ("--max-chars", "2000")])
def test_grep_pages_chain(session: Path, extra: tuple[str, ...]) -> None:
    pages = follow("grep", session, "Turn", "--max-count", "4", *extra)
    assert len(pages) > 3
    context = extra if extra[:1] == ("-C",) else ()
    everything = run("grep", session, "Turn", "--max-count", "100000", "--max-chars", "100000000", *context).stdout
    matches = [line for page in pages for line in page.splitlines() if ":" in line.split("-", 1)[0]]
    assert matches == [line for line in everything.splitlines() if ":" in line.split("-", 1)[0]]


def test_grep_next_command_keeps_option_values_that_look_like_options(session: Path) -> None:
    sb = SessionBuilder()
    for i in range(12):
        sb.user(f"flag --page {i} and --cursor too")
    path = sb.write(session.parent / "flags.jsonl")
    pages = follow("grep", path, "-e", "--page", "-e", "--cursor", "--max-count", "5", "-F")
    assert sum(len(p.splitlines()) for p in pages) == 12


@pytest.mark.parametrize("start", [("--page", "1"), ("--page=2",), ()])
def test_show_pages_chain_from_a_page_or_a_cursor(session: Path, start: tuple[str, ...]) -> None:
    entry = long_entry(session)
    pages = follow("show", session, entry, *start)
    whole = run("show", session, entry, "--json").json
    assert whole["pages"] > 2
    first = int(start[0].split("=")[1]) if start and "=" in start[0] else int(start[1]) if start else 1
    assert len(pages) == whole["pages"] - first + 1
