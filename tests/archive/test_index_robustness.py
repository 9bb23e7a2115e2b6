"""The search keeps answering whatever the query, the index's place or a session file holds.

- a query with a hundred NOTs, parentheses nested past what FTS5's parser takes, thousands of words, or a byte that
  is not UTF-8: a one-line usage error (exit 2), or, for NOTs, the answer (they are one group, however many);
- a directory where the index lives: left alone, the search goes on without an index, with a warning;
- a full disk under the index (a real 256 KiB tmpfs): the same, the index as it was;
- a session whose content makes indexing it fail: that file skipped with a warning naming it, the others found.
"""

from __future__ import annotations

import os
import random
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from pi_compact.archive import reading
from pi_compact.archive.words import MAX_DEPTH, MAX_TOKENS, fts_expression
from pi_compact.errors import UsageError
from tests.helpers.cli import run, run_process
from tests.helpers.sessions import SessionBuilder


def _sessions(agent: Path, texts: dict[str, str]) -> Path:
    folder = agent / "sessions" / "--repo--"
    folder.mkdir(parents=True, exist_ok=True)
    for name, text in texts.items():
        sb = SessionBuilder(session_id=name)
        sb.user(text)
        sb.write(folder / f"{name}.jsonl")
    return folder


def _cache(agent: Path) -> Path:
    return Path(os.environ["XDG_CACHE_HOME"]) / "picompact"


@pytest.mark.parametrize("count", [1, 2, 99, 100, 400])
def test_many_nots_are_one_group(agent: Path, count: int) -> None:
    _sessions(agent, {"a": "needle hay", "b": "needle x1 straw", "c": "needle"})
    query = "needle" + "".join(f" NOT x{n}" for n in range(count))
    result = run("search", query, "--json")
    assert result.code == 0, result.stderr
    found = {hit["session_id"] for hit in result.json["results"]}
    assert found == ({"a", "c"} if count >= 2 else {"a", "b", "c"})  # b holds x1
    assert fts_expression(query).count("(") <= 2


def test_not_keeps_its_meaning_inside_groups(agent: Path) -> None:
    _sessions(agent, {"a": "alpha beta", "b": "alpha gamma", "c": "delta"})
    result = run("search", "(alpha NOT beta NOT zeta) OR delta", "--json")
    assert {hit["session_id"] for hit in result.json["results"]} == {"b", "c"}


@pytest.mark.parametrize(
    ("query", "says"),
    [
        ("(" * 1000 + "needle" + ")" * 1000, "at most"),
        ("(" * (MAX_DEPTH + 1) + "needle" + ")" * (MAX_DEPTH + 1), "nest more than"),
        ("(a OR " * 40 + "needle" + ")" * 40, "nest more than"),
        (" ".join(["word"] * (MAX_TOKENS + 1)), "at most"),
        ("nee\udcffdle", "not UTF-8"),
        ("\udc80", "not UTF-8"),
    ],
    ids=["deep-1000", "deep-limit", "nested-or", "long", "byte-ff", "byte-80"],
)
def test_a_query_past_the_bounds_is_a_usage_error(agent: Path, query: str, says: str) -> None:
    _sessions(agent, {"a": "needle"})
    result = run("search", query)
    assert result.code == 2, result.stderr
    assert says in result.stderr and len(result.stderr.splitlines()) == 1
    assert "internal error" not in result.stderr


def test_queries_within_the_bounds_still_answer(agent: Path) -> None:
    _sessions(agent, {"a": "needle"})
    assert run("search", "(" * MAX_DEPTH + "needle" + ")" * MAX_DEPTH).code == 0
    assert run("search", " OR ".join(["needle"] * 400)).code == 0


@pytest.mark.parametrize("flag", ["--regex", "-F"])
def test_a_pattern_that_is_not_utf8_is_a_usage_error(agent: Path, flag: str) -> None:
    _sessions(agent, {"a": "needle"})
    result = run("search", flag, "ne\udcffe")
    assert result.code == 2 and "not UTF-8" in result.stderr


def test_a_non_utf8_argument_through_a_real_process(agent: Path) -> None:
    _sessions(agent, {"a": "needle"})
    result = run_process("search", os.fsdecode(b"nee\xffdle"))
    assert result.code == 2 and b"byte 0xff" in result.stderr_bytes, result.stderr_bytes


def test_a_directory_at_the_index_path_is_left_alone(agent: Path) -> None:
    _sessions(agent, {"a": "needle"})
    place = _cache(agent) / "sessions.sqlite3"
    place.mkdir(parents=True)
    (place / "mine").write_text("keep")
    for args in (("search", "needle"), ("search", "--reindex", "needle"), ("search", "--stats")):
        result = run(*args)
        assert result.code == 0, (args, result.stderr)
        assert "is a directory" in result.stderr and "without it" in result.stderr
    assert "needle" in run("search", "needle").stdout
    assert (place / "mine").read_text() == "keep"


def test_a_session_that_cannot_be_indexed_is_skipped_by_name(agent: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _sessions(agent, {"good": "needle one", "bad": "needle BOOM"})
    document = reading.document

    def failing(entry: object) -> object:
        if "BOOM" in str(getattr(entry, "raw", "")):
            raise OverflowError("a number past any double")
        return document(entry)  # type: ignore[arg-type]

    monkeypatch.setattr(reading, "document", failing)
    result = run("search", "needle", "--json")
    assert result.code == 0, result.stderr
    assert [hit["session_id"] for hit in result.json["results"]] == ["good"]
    assert "bad.jsonl" in result.stderr and "cannot be indexed (OverflowError" in result.stderr


def test_fts_expression_bounds() -> None:
    with pytest.raises(UsageError):
        fts_expression("(" * (MAX_DEPTH + 1) + "a" + ")" * (MAX_DEPTH + 1))
    w = "{text cjk} : "  # a word of a script with spaces is looked for in both columns (archive.words)
    assert fts_expression("a NOT b") == f'({w}"a" NOT {w}"b")'
    assert fts_expression("a NOT b NOT c") == f'({w}"a" NOT ({w}"b" OR {w}"c"))'


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "small"
    mount.mkdir()
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount)], capture_output=True, text=True, check=False
    )
    if proc.returncode != 0:
        pytest.fail(f"cannot mount a 256 KiB tmpfs for the full-disk test (needs root): {proc.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", str(mount)], check=False)


@pytest.mark.process
def test_a_full_disk_under_the_index_falls_back_to_a_scan(agent: Path, small_disk: Path) -> None:
    rng = random.Random(1)
    words = ["".join(rng.choice("abcdefghij") for _ in range(6)) for _ in range(5000)]
    sb = SessionBuilder()
    for _ in range(300):
        sb.user("needle " + " ".join(rng.choice(words) for _ in range(300)))
    sb.write(_sessions(agent, {}) / "big.jsonl")  # 700 KB of text: an index of it does not fit in 256 KiB
    env = {"XDG_CACHE_HOME": str(small_disk / "cache")}
    for _ in range(2):
        result = run_process("search", "needle", "--max-count", "3", "--json", env=env)
        assert result.code == 0, result.stderr
        assert len(result.json["results"]) == 3
        assert b"cannot write the search index" in result.stderr_bytes or b"cannot open" in result.stderr_bytes
        assert b"without it" in result.stderr_bytes
