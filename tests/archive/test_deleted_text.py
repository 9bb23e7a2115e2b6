"""A session deleted (or rewritten) leaves nothing of its text in the search index's file: the pages its rows
freed are zeroed (``secure_delete``), and the FTS5 index, which only marks a deleted document until its segments
merge, is merged after an update that deleted something."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.cli import run
from tests.helpers.sessions import SessionBuilder

# Words no other term shares a long prefix with; FTS5 stores a term after the prefix it shares with the one before
# it, so the end of each is what is looked for in the file.
SECRET = "zqvortexpassphrase9kt2wplm"
RAW = "Password: Hunter-Quokka-7731"


def _db_bytes(home: Path) -> bytes:
    cache = home / ".cache" / "picompact"
    return b"".join(p.read_bytes() for p in cache.iterdir() if p.name.startswith("sessions.sqlite3"))


def _session(folder: Path, name: str, text: str) -> Path:
    sb = SessionBuilder(cwd="/work/app", session_id=name)
    sb.user("hello, please look at the build " * 20)
    sb.tool("bash", {"command": "cat .env"}, text)
    sb.assistant("Done " * 40)
    return sb.write(folder / f"{name}.jsonl")


@pytest.fixture
def tree(agent: Path) -> Path:
    folder = agent / "sessions" / "--work-app--"
    folder.mkdir(parents=True)
    for n in range(4):
        _session(folder, f"other-{n}", f"ordinary output number {n} " * 30)
    return folder


def _indexed(home: Path) -> None:
    result = run("search", "ordinary")
    assert result.code == 0, result.stderr


@pytest.mark.parametrize("change", ["deleted", "rewritten", "truncated"])
def test_a_session_s_text_does_not_stay_in_the_index_file(tree: Path, isolated_home: Path, change: str) -> None:
    victim = _session(tree, "victim", f"{RAW} and {SECRET}")
    _indexed(isolated_home)
    data = _db_bytes(isolated_home)
    assert SECRET[-10:].encode() in data and RAW.encode() in data  # indexed, as it should be
    if change == "deleted":
        victim.unlink()
    elif change == "rewritten":
        _session(tree, "victim", "nothing secret here any more")
    else:
        with open(victim, "r+b") as handle:  # shrank: indexed again from its start
            handle.truncate(200)
    assert run("search", SECRET).code == 1
    data = _db_bytes(isolated_home)
    assert SECRET[-10:].encode() not in data and RAW.encode() not in data
    assert b"Hunter-Quokka" not in data
    assert run("search", "ordinary").code == 0  # the other sessions are all there


def test_the_merge_runs_only_after_an_update_that_deleted_something(
    tree: Path, isolated_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pi_compact.archive import indexer

    calls: list[int] = []
    purge = indexer.purge_deleted
    monkeypatch.setattr(indexer, "purge_deleted", lambda conn: (calls.append(1), purge(conn)))
    _indexed(isolated_home)
    _session(tree, "new", "more ordinary output")
    with open(tree / "other-0.jsonl", "ab") as handle:  # appended: read on from where it was, nothing deleted
        handle.write(b"\n")
    _indexed(isolated_home)
    assert calls == []
    (tree / "new.jsonl").unlink()
    _indexed(isolated_home)
    assert calls == [1]
