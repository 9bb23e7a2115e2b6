"""``picompact search``: what it covers, its filters and output, the index's care with files it cannot trust."""

from __future__ import annotations

import os
import sqlite3
import stat
import threading
import time
from pathlib import Path

import pytest

from pi_compact.cli.env import SCHEMA_VERSION
from pi_compact.cli.schema import DOCUMENTS, RECORDS, keys
from tests.helpers.cli import run, run_process
from tests.helpers.sessions import SessionBuilder


def _project(agent: Path, cwd: str) -> Path:
    folder = agent / "sessions" / ("--" + cwd.strip("/").replace("/", "-") + "--")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def tree(agent: Path) -> dict[str, Path]:
    """Two projects' sessions in Pi's tree: one with a side branch, tool calls and a failure."""
    a = SessionBuilder(cwd="/work/app", session_id="sess-a")
    a.user("the deploy fails with a connection reset from the registry")
    a.tool("bash", {"command": "npm publish"}, "npm ERR! ECONNRESET connection reset by peer", is_error=True)
    fork = a.assistant("I will retry with a longer timeout")
    a.user("abandoned idea about zeppelins")  # on a side branch: the leaf moves back below
    a.leaf = fork
    a.user("now try the mirror registry")
    a.tool("read", {"path": "/work/app/.npmrc"}, "registry=https://mirror.example")
    b = SessionBuilder(cwd="/work/lib", session_id="sess-b")
    b.user("parser timeout on large inputs, connection is fine")
    b.assistant("The tokenizer loops on unicode escapes: \\u00e9")
    paths = {
        "a": a.write(_project(agent, "/work/app") / "a.jsonl"),
        "b": b.write(_project(agent, "/work/lib") / "b.jsonl"),
    }
    return paths


def _ids(result) -> list[str]:
    return [r["entry_id"] for r in result.json["results"]]


def test_finds_across_sessions_ranked_with_the_show_command(tree: dict[str, Path]) -> None:
    result = run("search", "connection reset", "--json")
    assert result.code == 0, result.stderr
    doc = result.json
    assert list(doc) == keys(DOCUMENTS["search"]) and doc["schema_version"] == SCHEMA_VERSION
    hits = doc["results"]
    assert {h["session"] for h in hits} == {str(tree["a"])}  # b has "connection" but not "reset"
    assert all(list(h) == keys(RECORDS["search --json-lines"]["match"]) for h in hits)
    assert [h["score"] for h in hits] == sorted(h["score"] for h in hits)  # best (lowest bm25) first
    top = hits[0]
    assert top["show"] == f"picompact show {top['entry_id']} {tree['a']}"
    assert any(top["snippet"][h["start"] : h["end"]].lower() in ("connection", "reset") for h in top["highlights"])
    shown = run("show", top["entry_id"], top["session"])
    assert shown.code == 0 and "connection reset" in shown.stdout.lower()
    assert doc["sessions_searched"] == 2 and doc["complete"] and doc["next_cursor"] is None


def test_query_forms(tree: dict[str, Path]) -> None:
    assert len(_ids(run("search", "timeout", "--json"))) == 2
    assert len(_ids(run("search", "timeout NOT parser", "--json"))) == 1
    assert len(_ids(run("search", '"connection is fine"', "--json"))) == 1
    assert len(_ids(run("search", "zeppel*", "--json"))) == 1
    assert len(_ids(run("search", "zeppelins OR tokenizer", "--json"))) == 2
    assert run("search", "nothing-like-this-anywhere").code == 1
    for bad in ('"open', "a OR", "NOT a", "(a", "::"):
        result = run("search", bad)
        assert result.code == 2 and "error:" in result.stderr, bad


def test_regex_and_fixed_strings_are_checked_on_the_text(tree: dict[str, Path]) -> None:
    assert len(_ids(run("search", "-F", "ECONNRESET connection", "--json"))) == 1
    assert run("search", "-F", "connection  reset").code == 1  # two spaces: the words are there, the literal not
    assert len(_ids(run("search", "--regex", r"npm (ERR|publish)", "--json"))) == 2
    assert run("search", "--regex", "Connection", "--json").code == 1
    assert len(_ids(run("search", "--regex", "Connection", "-i", "--json"))) == 3
    assert len(_ids(run("search", "-F", "\\u00e9", "--json"))) == 1  # punctuation only narrows nothing: a scan
    assert run("search", "--regex", "(").code == 2


def test_filters(tree: dict[str, Path], tmp_path: Path) -> None:
    assert {r["role"] for r in run("search", "registry", "--role", "user", "--json").json["results"]} == {"user"}
    assert len(_ids(run("search", "connection", "--errors", "--json"))) == 1
    assert {r["role"] for r in run("search", "npm", "--tool", "bash", "--json").json["results"]} == {
        "assistant",
        "toolResult",
    }
    assert run("search", "registry", "--tool", "write").code == 1
    assert len(_ids(run("search", "zeppelins", "--json"))) == 1
    assert run("search", "zeppelins", "--branch", "leaf").code == 1  # only on the abandoned branch
    assert len(_ids(run("search", "timeout", "--cwd", "/work/lib", "--json"))) == 1
    here = run("search", "timeout", "--here", "--json", cwd="/")
    assert here.code == 1
    assert run("search", "timeout", "--since", "2999-01-01").code == 1
    assert len(_ids(run("search", "timeout", "--until", "2999-01-01", "--json"))) == 2
    assert run("search", "timeout", "--cwd", "/x", "--here").code == 2


def test_dir_adds_other_trees_and_pages_continue(tree: dict[str, Path], tmp_path: Path) -> None:
    other = tmp_path / "elsewhere" / "deep"
    other.mkdir(parents=True)
    sb = SessionBuilder(cwd="/other")
    for i in range(5):
        sb.user(f"kumquat number {i}")
    sb.write(other / "c.jsonl")
    assert run("search", "kumquat").code == 1
    first = run("search", "kumquat", "--dir", tmp_path / "elsewhere", "-m", "2", "--json-lines")
    records = first.jsonl
    assert [r["type"] for r in records] == ["match", "match", "summary"]
    for r in records:
        assert list(r["data"]) == keys(RECORDS["search --json-lines"][r["type"]])
    cursor = records[-1]["data"]["next_cursor"]
    seen = [r["data"]["entry_id"] for r in records[:-1]]
    while cursor:
        page = run("search", "kumquat", "--dir", tmp_path / "elsewhere", "-m", "2", "--cursor", cursor, "--json")
        seen += _ids(page)
        cursor = page.json["next_cursor"]
    assert len(seen) == len(set(seen)) == 5
    text = run("search", "kumquat", "--dir", tmp_path / "elsewhere", "-m", "1")
    assert "next page: picompact search kumquat --dir" in text.stderr and "--cursor" in text.stderr


def test_appends_cost_only_new_bytes_and_deleted_sessions_drop_out(tree: dict[str, Path]) -> None:
    from pi_compact.archive import session_files
    from pi_compact.archive.store import open_store

    with open_store() as store:
        first = store.update(session_files().files)
        assert first.indexed_bytes == sum(p.stat().st_size for p in tree.values())
        assert store.update(session_files().files).indexed_bytes == 0
        before = tree["a"].stat().st_size
        line = tree["a"].read_bytes().splitlines(keepends=True)[-1].replace(b"mirror", b"quince")
        with tree["a"].open("ab") as fh:
            fh.write(line)
        assert store.update(session_files().files).indexed_bytes == tree["a"].stat().st_size - before
        cut = tree["b"].read_bytes()[:-20]  # a truncation: indexed again from the start (its complete lines)
        tree["b"].write_bytes(cut)
        assert store.update(session_files().files).indexed_bytes == cut.rfind(b"\n") + 1
        tree["b"].unlink()
        assert store.update(session_files().files).dropped == 1
        assert store.stats()["sessions"] == 1
    assert len(_ids(run("search", "quince", "--json"))) == 1


def test_an_unreadable_session_is_named_and_skipped(tree: dict[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    real_open = os.open

    def refusing(path, flags, *args, **kwargs):  # root reads any file: refuse this one by hand
        if str(path) == str(tree["b"]):
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", refusing)
    result = run("search", "timeout", "--json")
    assert result.code == 0
    assert result.json["skipped"] == [{"path": str(tree["b"]), "reason": "permission denied"}]
    assert f"{tree['b']}: cannot read the session (permission denied): skipped" in result.stderr
    assert {r["session"] for r in result.json["results"]} == {str(tree["a"])}


def test_nothing_is_written_to_a_session(tree: dict[str, Path]) -> None:
    before = {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in tree.values()}
    run("search", "timeout")
    run("search", "--reindex")
    run("search", "--regex", "time.ut", "--no-index")
    assert {p: (p.read_bytes(), p.stat().st_mtime_ns) for p in tree.values()} == before


def _database(isolated_home: Path) -> Path:
    return isolated_home / ".cache" / "picompact" / "sessions.sqlite3"


def test_the_database_is_private_and_a_corrupt_or_foreign_one_is_rebuilt(
    tree: dict[str, Path], isolated_home: Path
) -> None:
    assert run("search", "timeout").code == 0
    db = _database(isolated_home)
    assert stat.S_IMODE(db.stat().st_mode) == 0o600
    assert stat.S_IMODE(db.parent.stat().st_mode) == 0o700
    for path in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
        path.unlink(missing_ok=True)
    db.write_bytes(b"this is not a database at all" * 200)
    result = run("search", "timeout", "--json")
    assert result.code == 0 and len(_ids(result)) == 2
    assert "the search index is built again" in result.stderr
    db.unlink()
    with sqlite3.connect(db) as conn:
        conn.execute("create table something(x)")
    conn.close()
    result = run("search", "timeout", "--json")
    assert result.code == 0 and "not picompact's search index" in result.stderr
    assert len(_ids(result)) == 2
    assert run("search", "timeout").stderr == ""  # trusted now


def test_stats_and_reindex(tree: dict[str, Path]) -> None:
    doc = run("search", "--stats", "--json").json
    assert list(doc) == keys(DOCUMENTS["search --stats"])
    assert doc["sessions"] == 2 and doc["entries"] > 5 and doc["tokenizer"].startswith("unicode61")
    again = run("search", "--reindex", "--json").json
    assert again["sessions"] == 2 and again["entries"] == doc["entries"]
    assert "sessions:" in run("search", "--stats").stdout
    assert run("search", "--stats", "timeout").code == 2
    assert run("search", "--no-index", "--stats").code == 2
    assert run("search", "--json", "--json-lines", "x").code == 2


def test_no_index_gives_the_same_results(tree: dict[str, Path]) -> None:
    for args in (["timeout"], ["connection", "--branch", "leaf"], ["--regex", "re(try|gistry)"]):
        indexed = run("search", *args, "--json").json
        scanned = run("search", *args, "--json", "--no-index").json
        assert indexed == scanned and indexed["results"]


def test_two_searches_and_a_writer_at_once(tree: dict[str, Path]) -> None:
    results: list[int] = []
    stop = threading.Event()

    def writer() -> None:  # appends while both search, a line every millisecond or so (bounded: 3,000 lines)
        line = tree["b"].read_bytes().splitlines(keepends=True)[-1]
        for _ in range(3_000):
            if stop.is_set():
                return
            with tree["b"].open("ab") as fh:
                fh.write(line)
            time.sleep(0.001)

    def searcher() -> None:
        for _ in range(3):
            results.append(run_process("search", "tokenizer", "--json").code)

    threads = [threading.Thread(target=writer), threading.Thread(target=searcher), threading.Thread(target=searcher)]
    for t in threads:
        t.start()
    for t in threads[1:]:
        t.join()
    stop.set()
    threads[0].join()
    assert results == [0] * 6
    assert run("search", "tokenizer", "--json").json == run("search", "tokenizer", "--json", "--no-index").json


def test_help_names_the_query_forms() -> None:
    result = run("search", "--help")
    assert result.code == 0
    for word in ("--regex", "--no-index", "--reindex", "--stats", "--branch", "picompact show"):
        assert word in result.stdout
