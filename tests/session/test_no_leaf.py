"""A session whose last line gives Pi no leaf (not an object, or an entry without an id): picompact reads the same
empty branch Pi reads, says why naming FILE:LINE, and says which ``--leaf`` gives Pi a leaf again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from pi_compact.session import get_branch, load_session
from tests.helpers.cli import run
from tests.helpers.sessions import simple_session
from tests.oracle import ask_oracle, oracle_for_comparison

WINDOW = ("--context-window", "100000")
NO_LEAF = [b"[1,2]", b"42", b'"the end"', b"true", b'{"type":"custom","parentId":null}', b'{"type":"custom","id":""}']


def pi_analyze(path: Path) -> dict[str, Any] | None:
    """Pi's own reading of the file (the oracle), or None when the oracle is not installed."""
    if not oracle_for_comparison():
        return None
    proc = ask_oracle("analyze", path, "--brief")
    assert proc.returncode == 0, proc.stdout[-1000:]
    return orjson.loads(proc.stdout)


def session_ending_in(tmp_path: Path, last: bytes) -> tuple[Path, str, int]:
    """A session with ``last`` appended: (path, the id of the entry before it, the line of ``last``)."""
    sb = simple_session(turns=2)
    data = sb.to_bytes()
    path = tmp_path / "s.jsonl"
    path.write_bytes(data + last + b"\n")
    return path, str(sb.entries[-1]["id"]), data.count(b"\n") + 1


@pytest.mark.parametrize("last", NO_LEAF)
def test_the_branch_is_empty_as_in_pi(tmp_path: Path, last: bytes) -> None:
    path, before, line = session_ending_in(tmp_path, last)
    session = load_session(path)
    assert session.leaf is None and len(get_branch(session)) == 0
    warning = next(d for d in session.diagnostics if d.code == "leaf-without-id")
    assert warning.line == line and f"--leaf {before}" in warning.message
    assert len(get_branch(session, before)) > 0  # --leaf still reaches the branch
    pi = pi_analyze(path)
    if pi is not None:
        assert pi["leaf"] is None and pi["branchLength"] == 0


def test_a_middle_non_object_line_changes_no_leaf_and_is_not_said_to_be_skipped(tmp_path: Path) -> None:
    lines = simple_session(turns=2).to_bytes().split(b"\n")[:-1]
    lines.insert(3, b"[1,2]")
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    session = load_session(path)
    warning = next(d for d in session.diagnostics if d.code == "non-object-line")
    assert warning.line == 4 and "skipped" not in warning.message and "entry without an id" in warning.message
    assert session.leaf is not None and not any(d.code == "leaf-without-id" for d in session.diagnostics)
    pi = pi_analyze(path)
    if pi is not None:
        assert pi["leaf"]["id"] == session.leaf.id and pi["branchLength"] == len(get_branch(session))


def test_compact_says_which_leaf_to_give_and_that_leaf_gives_pi_a_leaf_again(tmp_path: Path) -> None:
    path, before, line = session_ending_in(tmp_path, b"[1,2]")
    original = path.read_bytes()
    refused = run("compact", path, *WINDOW, "--keep-recent-tokens", "50")
    assert refused.code == 2 and path.read_bytes() == original
    assert str(path) in refused.stderr and f"line {line}" in refused.stderr and f"--leaf {before}" in refused.stderr
    checked = run("check", path)  # no --context-window: the empty branch records no model
    assert checked.code == 2 and "Pi finds no leaf" in checked.stderr and f"--leaf {before}" in checked.stderr
    done = run("compact", path, *WINDOW, "--keep-recent-tokens", "50", "--leaf", before)
    assert done.code == 0, done.stderr
    session = load_session(path)
    assert session.leaf is not None and not session.no_leaf
    pi = pi_analyze(path)
    if pi is not None:
        assert pi["leaf"]["id"] == session.leaf.id and pi["branchLength"] == len(get_branch(session))


def pi_context(path: Path) -> dict[str, Any] | None:
    if not oracle_for_comparison():
        return None
    proc = ask_oracle("context", path)
    assert proc.returncode == 0, proc.stdout[-1000:]
    return orjson.loads(proc.stdout)


@pytest.mark.parametrize(
    "last", [*NO_LEAF, b'{"type":"message","parentId":"PARENT","message":{"role":"user","content":"hi"}}']
)
def test_context_is_what_pi_sends_when_it_finds_no_leaf(tmp_path: Path, last: bytes) -> None:
    """Pi's branch is empty, yet its context code falls back to the last entry and walks its parents."""
    sb = simple_session(turns=2)
    path, _, _ = session_ending_in(tmp_path, last.replace(b"PARENT", str(sb.entries[-1]["id"]).encode()))
    result = run("context", path, "--json")
    assert result.code == 0, result.stderr
    ours = result.json
    assert ours["branch_length"] == 0 and ours["leaf_id"] is None
    pi = pi_context(path)
    if pi is not None:
        assert pi["branchLength"] == 0 and pi["leaf"] is None
        assert ours["message_count"] == pi["count"]
        assert ours["context_tokens"] == pi["estimateContextTokens"]["tokens"]
        assert [m["role"] for m in ours["messages"] if m["position"] >= 0] == pi["roles"]
    if b"PARENT" in last:  # the fallback reaches the whole branch through the parent
        assert ours["message_count"] > 1
