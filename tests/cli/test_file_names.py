"""File names as they come: bytes that are not UTF-8 (``--json`` writes each as ``\\xNN`` instead of failing), control
characters (escaped on a terminal, exact in JSON and in a pipe), and directories that cannot be read (named on
stderr, exit 2, the rest still done)."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from pi_compact.cli import Environment, main
from pi_compact.cli.env import json_text, printable
from tests.helpers.cli import run
from tests.helpers.fixtures import PI_FIXTURES

FIXTURE = PI_FIXTURES / "gen-small-101.jsonl"
LATIN1 = os.fsdecode(b"caf\xe9.jsonl")  # what os.fsdecode makes of a name that is not UTF-8
ESCAPES = "x\x1b[31mred\x07.jsonl"


@pytest.fixture
def latin1(tmp_path: Path) -> Path:
    path = tmp_path / LATIN1
    shutil.copyfile(FIXTURE, path)
    return path


@pytest.mark.parametrize(
    ("args", "key"),
    [
        (("check", "--json"), ("session", "path")),
        (("lint", "--json"), ("files", 0, "path")),
        (("audit", "--json"), ("session",)),
        (("compact", "--mode", "verbatim", "--dry-run", "--json"), ("session",)),
    ],
    ids=["check", "lint", "audit", "compact"],
)
def test_json_names_a_file_that_is_not_utf8_with_escapes(
    args: tuple[str, ...], key: tuple[Any, ...], latin1: Path
) -> None:
    result = run(args[0], latin1, *args[1:])
    assert result.code in (0, 1), result.stderr
    value: Any = result.json
    for part in key:
        value = value[part]
    assert value == str(latin1.parent / "caf\\xe9.jsonl")  # the byte 0xE9 as the four characters \xe9


def test_one_name_that_is_not_utf8_does_not_fail_sessions_all(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    project = agent / "sessions" / "--project--"
    project.mkdir(parents=True)
    shutil.copyfile(FIXTURE, project / LATIN1)
    shutil.copyfile(FIXTURE, project / "plain.jsonl")
    result = run("sessions", "--all", "--json", env={"PI_CODING_AGENT_DIR": str(agent)})
    assert result.code == 0, result.stderr
    paths = sorted(s["path"] for s in result.json["sessions"])
    assert paths == [str(project / "caf\\xe9.jsonl"), str(project / "plain.jsonl")]


def test_json_text_and_printable() -> None:
    assert json_text(LATIN1) == "caf\\xe9.jsonl" and json_text("plain é") == "plain é"
    assert json_text("\ud800") == "\ufffd"  # not from a file name: no byte to show
    assert printable(ESCAPES) == "x\\e[31mred\\x07.jsonl"
    assert printable("a\nb\tc\x7f\x9b" + LATIN1) == "a\\nb\\tc\\x7f\\u009bcaf\\xe9.jsonl"
    assert printable("naïve 日本") == "naïve 日本"


def _tty_run(*args: str | Path) -> tuple[int, str, str]:
    """``picompact ARGS`` with stdout and stderr on a terminal."""
    env = Environment.captured(environ={**os.environ, "NO_COLOR": "1"}, tty=True)
    code = main([str(a) for a in args], env)
    return int(code), env.stdout_bytes().decode("utf-8", "surrogateescape"), env.stderr_bytes().decode()


def test_control_characters_of_a_name_are_escaped_on_a_terminal_only(tmp_path: Path) -> None:
    path = tmp_path / ESCAPES
    shutil.copyfile(FIXTURE, path)
    shown = str(tmp_path / "x\\e[31mred\\x07.jsonl")
    for args in (("check", path), ("lint", path), ("audit", path)):
        code, out, err = _tty_run(*args)
        assert code in (0, 1), err
        assert "\x1b[31m" not in out + err and "\x07" not in out + err
        assert shown in out + err
        piped = run(*args)  # in a pipe the name is written as it is
        assert str(path) in piped.stdout + piped.stderr
    assert run("check", path, "--json").json["session"]["path"] == str(path)  # JSON: exact
    empty = tmp_path / "e\x1b]0;title\x07.jsonl"
    empty.write_bytes(b"")
    code, out, err = _tty_run("check", empty)
    assert code == 2 and "\x1b" not in err and "e\\e]0;title\\x07.jsonl: empty file" in err


# ---------------------------------------------------------------------------------------------------------------
# Directories that cannot be read (the tests run as root, where chmod 000 hides nothing: os.scandir refuses instead)


@pytest.fixture
def locked(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    real = os.scandir

    def scandir(path: Any = ".") -> Any:
        if isinstance(path, (str, os.PathLike)) and os.path.basename(os.fspath(path)) == "locked":
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    yield


def _tree(root: Path) -> Path:
    for name in ("open", "locked"):
        (root / name).mkdir(parents=True)
        shutil.copyfile(FIXTURE, root / name / "s.jsonl")
    return root


@pytest.mark.usefixtures("locked")
@pytest.mark.parametrize("json_output", [False, True])
def test_lint_all_names_a_directory_it_cannot_read_and_exits_2(json_output: bool, tmp_path: Path) -> None:
    root = _tree(tmp_path / "tree")
    result = run("lint", "--all", root, "--jobs", "1", *(["--json"] if json_output else []))
    assert result.code == 2
    assert f"{root / 'locked'}: cannot read the directory (permission denied)" in result.stderr
    if json_output:
        records = result.jsonl
        assert [r["data"]["path"] for r in records if r["type"] == "file"] == [str(root / "open" / "s.jsonl")]
        assert records[-1]["type"] == "summary"
    else:
        assert f"{root / 'open' / 's.jsonl'}: clean" in result.stdout
        assert "1 directory unreadable" in result.stdout


@pytest.mark.usefixtures("locked")
@pytest.mark.parametrize("json_output", [False, True])
def test_sessions_all_names_a_directory_it_cannot_read_and_exits_2(json_output: bool, tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    _tree(agent / "sessions")
    result = run("sessions", "--all", *(["--json"] if json_output else []), env={"PI_CODING_AGENT_DIR": str(agent)})
    assert result.code == 2
    assert f"{agent / 'sessions' / 'locked'}: cannot read the directory (permission denied)" in result.stderr
    listed = str(agent / "sessions" / "open" / "s.jsonl")
    if json_output:
        assert [s["path"] for s in orjson.loads(result.stdout_bytes)["sessions"]] == [listed]
    else:
        assert listed in result.stdout
