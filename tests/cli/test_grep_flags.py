"""What grep and ripgrep users type: -e, -w, -v, -c, -l, --color, "-" for stdin; picompact's own lines only
on request (--section header / meta)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.helpers.cli import run
from tests.helpers.sessions import SessionBuilder

ANSI = re.compile(r"\x1b\[[0-9;]*m")


@pytest.fixture
def session(tmp_path: Path) -> Path:
    sb = SessionBuilder()
    sb.user("the assistant should fix -rf handling\nsecond line about catalog")
    sb.assistant("I am the assistant; cat the log", tool_calls=[("c1", "bash", {"command": "cat log"})])
    sb.tool_result("c1", "bash", "boom: error\nno problem here", is_error=True)
    sb.assistant("category done, no cat left")
    return sb.write(tmp_path / "s.jsonl")


def lines(result) -> list[str]:
    return result.stdout.splitlines()


def test_synthetic_lines_only_on_request(session: Path) -> None:
    said = lines(run("grep", session, "assistant"))
    assert said and all(":header:" not in line for line in said)  # what was said, not the headers
    assert {line.split(":")[1] for line in said} == {"text"}
    headers = lines(run("grep", session, "assistant", "--section", "header"))
    assert len(headers) == 2 and all(":header:1:ENTRY " in line for line in headers)
    assert run("grep", session, r"\[toolResult\] bash").code == 1
    meta = lines(run("grep", session, r"\[toolResult\] bash id=c1 error", "--section", "meta"))
    assert len(meta) == 1


def test_e_is_repeatable_and_takes_patterns_starting_with_a_dash(session: Path) -> None:
    result = run("grep", session, "-e", "-rf", "-e", "boom")
    assert result.code == 0, result.stderr
    texts = [line.split(":", 3)[3] for line in lines(result)]
    assert texts == ["the assistant should fix -rf handling", "boom: error"]
    assert run("grep", "-e", "boom", session).code == 0  # with -e the argument is SESSION
    bad = run("grep", session, "-e", "ok", "-e", "(")
    assert bad.code == 2 and "'('" in bad.stderr


def test_w_matches_whole_words(session: Path) -> None:
    plain = {line.split(":", 3)[3] for line in lines(run("grep", session, "cat"))}
    words = {line.split(":", 3)[3] for line in lines(run("grep", session, "-w", "cat"))}
    assert "second line about catalog" in plain and "second line about catalog" not in words
    assert words == {"I am the assistant; cat the log", "command: cat log", "category done, no cat left"}
    assert {line.split(":", 3)[3] for line in lines(run("grep", session, "-w", "-F", "-e", "cat", "-e", "boom"))} == (
        words | {"boom: error"}
    )


def test_v_selects_the_lines_that_do_not_match(session: Path) -> None:
    every = lines(run("grep", session, "", "--max-count", "1000"))
    matching = lines(run("grep", session, "cat", "--max-count", "1000"))
    inverted = lines(run("grep", session, "-v", "cat", "--max-count", "1000"))
    assert sorted(matching + inverted) == sorted(every)
    assert inverted and all("cat" not in line.split(":", 3)[3] for line in inverted)
    assert all(":header:" not in line for line in inverted)
    assert run("grep", session, "-v", "").code == 1


def test_c_and_l(session: Path) -> None:
    matching = lines(run("grep", session, "o", "--max-count", "1000"))
    per_entry: dict[str, int] = {}
    for line in matching:
        per_entry[line.split(":")[0]] = per_entry.get(line.split(":")[0], 0) + 1
    counts = lines(run("grep", session, "-c", "o"))
    assert counts == [f"{entry}:{n}" for entry, n in per_entry.items()]
    assert lines(run("grep", session, "-l", "o")) == list(per_entry)
    records = run("grep", session, "-c", "o", "--json").jsonl
    assert [(r["type"], r["data"]["id"], r["data"]["count"]) for r in records[:-1]] == [
        ("count", e, n) for e, n in per_entry.items()
    ]
    assert records[-1]["type"] == "summary" and records[-1]["data"]["matches"] == len(matching)
    assert run("grep", session, "-c", "nothing-like-this").code == 1
    clash = run("grep", session, "-c", "-l", "o")
    assert clash.code == 2 and "-c and -l clash" in clash.stderr


def test_color(session: Path) -> None:
    plain = run("grep", session, "error", "-C", "1")
    always = run("grep", session, "error", "-C", "1", "--color=always")
    never = run("grep", session, "error", "-C", "1", "--color", "never")
    assert "\x1b[" in always.stdout and "\x1b[" not in plain.stdout
    assert ANSI.sub("", always.stdout) == plain.stdout == never.stdout
    assert run("grep", session, "error", "--color", "sometimes").code == 2


def test_a_session_on_stdin(session: Path) -> None:
    data = session.read_bytes()
    for args in (("grep", "-", "error", "-C", "1"), ("grep", "-c", "-", "o"), ("list", "-")):
        from_file = run(*[str(session) if a == "-" else a for a in args])
        from_stdin = run(*args, input=data)
        assert from_stdin.code == from_file.code == 0, from_stdin.stderr
        assert from_stdin.stdout == from_file.stdout
    show = run("show", "-", "a0000003", "--raw", input=data)
    assert show.code == 0 and show.stdout_bytes in data
    empty = run("grep", "-", "x", input=b"")
    assert empty.code == 2 and "<stdin>" in empty.stderr


def test_metadata_values_stay_searchable(tmp_path: Path) -> None:
    sb = SessionBuilder()
    target = sb.user("hello")
    sb.add({"type": "label", "targetId": target, "label": "bug repro"})
    sb.message({"role": "assistant", "content": [], "stopReason": "error", "errorMessage": "rate limit exceeded"})
    path = sb.write(tmp_path / "s.jsonl")
    found = lines(run("grep", path, "bug repro|rate limit"))
    assert [line.split(":", 3)[3] for line in found] == ["label: bug repro", "rate limit exceeded"]
    assert run("grep", path, r"^\[stop\] error").code == 1  # the marker is picompact's
    assert run("grep", path, r"^\[stop\] error", "--section", "meta").code == 0
