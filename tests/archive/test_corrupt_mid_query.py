"""An index whose corruption only the query itself finds (FTS5's segments overwritten, the schema intact, so the
index opens and checks fine): the index is built again from the session files, the query run again, and the
answer is the sessions' own, with a warning saying so. Never "no match" from an index emptied by its rebuild."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from pi_compact.archive import Query, search_sessions
from tests.helpers.cli import run
from tests.helpers.sessions import SessionBuilder


def _sessions(agent: Path, count: int = 6) -> None:
    folder = agent / "sessions" / "--repo--"
    folder.mkdir(parents=True)
    for n in range(count):
        sb = SessionBuilder(session_id=f"s{n}")
        sb.user(f"the needle number {n} and some hay")
        sb.assistant(f"found needle {n}")
        sb.write(folder / f"s{n}.jsonl")


def _corrupt_segments() -> Path:
    """FTS5's segment blocks overwritten with noise: ``match`` then fails with "database disk image is malformed"
    (or "fts5: corrupt"), while the database opens and its schema and format are right."""
    path = Path(os.environ["XDG_CACHE_HOME"]) / "picompact" / "sessions.sqlite3"
    conn = sqlite3.connect(path)
    changed = conn.execute("update body_data set block = randomblob(length(block)) where id > 10").rowcount
    conn.commit()
    conn.close()
    assert changed > 0
    return path


@pytest.mark.parametrize(
    "args",
    [
        ("needle",),
        ("needle", "--json"),
        ("-F", "needle number"),
        ("--regex", "needle number [0-9]"),
        ("hay", "--json-lines"),
    ],
    ids=["words", "json", "fixed", "regex", "jsonl"],
)
def test_a_query_that_finds_the_index_corrupt_answers_from_the_sessions(agent: Path, args: tuple[str, ...]) -> None:
    _sessions(agent)
    before = run("search", *args, "--max-count", "100")
    assert before.code == 0, before.stderr
    _corrupt_segments()
    after = run("search", *args, "--max-count", "100")
    assert after.code == 0, after.stderr
    assert after.stdout == before.stdout  # the same answer
    assert "corrupt" in after.stderr and "built again" in after.stderr and "run again" in after.stderr
    again = run("search", *args, "--max-count", "100")
    assert again.code == 0 and again.stdout == before.stdout and "corrupt" not in again.stderr


def test_a_cursor_taken_before_the_corruption_still_pages(agent: Path) -> None:
    _sessions(agent)
    first = run("search", "needle", "--max-count", "2", "--json").json
    whole = run("search", "needle", "--max-count", "100", "--json").json["results"]
    _corrupt_segments()
    second = run("search", "needle", "--max-count", "2", "--json", "--cursor", first["next_cursor"])
    assert second.code == 0, second.stderr
    assert second.json["results"] == whole[2:4]


def test_the_library_answers_after_the_rebuild(agent: Path) -> None:
    _sessions(agent)
    assert len(search_sessions("needle", limit=100).hits) == 12
    _corrupt_segments()
    assert len(search_sessions(Query.parse("needle"), limit=100).hits) == 12
