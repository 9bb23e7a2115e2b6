"""Entry ids resolve the same way in every command: the whole id, or a unique prefix of 4+ characters."""

from __future__ import annotations

from pathlib import Path

import pytest

from pi_compact.errors import NotFoundError
from pi_compact.session import get_branch, load_session
from tests.helpers.cli import run
from tests.helpers.sessions import SessionBuilder


def session_with_ids(tmp_path: Path) -> Path:
    sb = SessionBuilder()
    root = sb.add({"type": "message", "id": "28a4c0de", "message": {"role": "user", "content": "first question"}})
    sb.add({"type": "message", "id": "77b10001", "message": {"role": "assistant", "content": "answer one"}})
    sb.add({"type": "message", "id": "77b10002", "message": {"role": "user", "content": "side"}}, parent=root)
    sb.add({"type": "message", "id": "9c0ffee1", "message": {"role": "user", "content": "main"}}, parent="77b10001")
    return sb.write(tmp_path / "s.jsonl")


@pytest.fixture
def path(tmp_path: Path) -> Path:
    return session_with_ids(tmp_path)


def test_leaf_accepts_a_unique_prefix_like_show(path: Path) -> None:
    branch = get_branch(load_session(path), "77b10002")
    assert branch.leaf is not None and branch.leaf.id == "77b10002"
    assert get_branch(load_session(path), "28a4").leaf.id == "28a4c0de"  # type: ignore[union-attr]
    with pytest.raises(NotFoundError, match="matches 2 entries"):
        get_branch(load_session(path), "77b1000")
    for command in (("list",), ("context",), ("check", "--context-window", "100000")):
        result = run(*command, path, "--leaf", "9c0f")
        assert result.code == 0, result.stderr
        full = run(*command, path, "--leaf", "9c0ffee1")
        assert result.stdout == full.stdout
    listed = run("list", path, "--leaf", "77b1", "--json")
    assert listed.code == 2 and "matches 2 entries" in listed.stderr


def test_a_short_prefix_suggests_the_ids_starting_with_it(path: Path) -> None:
    result = run("show", path, "28a")
    assert result.code == 2
    assert "did you mean 28a4c0de" in result.stderr
    assert "at least 4 characters" in result.stderr
    leaf = run("list", path, "--leaf", "9c0")
    assert leaf.code == 2 and "did you mean 9c0ffee1" in leaf.stderr


def test_show_and_leaf_agree_on_an_ambiguous_prefix(path: Path) -> None:
    show = run("show", path, "77b1")
    leaf = run("context", path, "--leaf", "77b1")
    assert show.code == leaf.code == 2
    for result in (show, leaf):
        assert "77b10001, 77b10002" in result.stderr
