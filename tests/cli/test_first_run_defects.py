"""Defects a new user meets early: a --since age past the year 1, the advice of an internal error, plurals."""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_compact.cli import core
from tests.helpers.cli import run
from tests.helpers.sessions import simple_session


def test_since_an_age_past_the_year_one_exits_2(tmp_path: Path) -> None:
    path = simple_session(turns=2, size=50).write(tmp_path / "s.jsonl")
    result = run("list", path, "--since", "99999999d")
    assert result.code == 2 and "before the year 1" in result.stderr


def test_the_internal_error_advice_runs_as_printed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The advice names --debug where picompact accepts it (before the command), and that command line works."""
    path = simple_session(turns=2, size=50).write(tmp_path / "s.jsonl")

    def boom(*args: object, **kwargs: object) -> object:
        raise RuntimeError("a bug")

    monkeypatch.setattr("pi_compact.ops.check.check_session", boom)
    result = run("check", path)
    assert result.code == 70
    assert f"run `picompact --debug check {path}` for the traceback" in result.stderr
    again = run("--debug", "check", path)
    assert again.code == 70 and "Traceback" in again.stderr and "RuntimeError: a bug" in again.stderr
    assert core._debug_command("picompact", ["grep", "-i", "x", "a", "b", "c"]) == "picompact --debug grep -i x …"


def test_audit_says_1_compaction(tmp_path: Path) -> None:
    sb = simple_session(turns=4, size=50)
    sb.add({"type": "compaction", "summary": "s", "firstKeptEntryId": sb.entries[-2]["id"], "tokensBefore": 1})
    path = sb.write(tmp_path / "s.jsonl")
    result = run("audit", path, "--context-window", "100000")
    assert result.code in (0, 1), result.stderr
    assert "1 compaction, 0 context edits" in result.stdout
