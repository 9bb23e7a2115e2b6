"""``picompact search`` on the words people type: the judged corpus (``judged_corpus``) ranked with the default
options, words of any script found wherever ``-F`` finds them, typos answered with a hint, and a search that
finds nothing saying what and where it searched."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from pi_compact.archive import Filters, Query, search, session_files, temporary_store
from pi_compact.archive.store import database_path
from tests.archive.judged_corpus import CJK_WORDS, build
from tests.helpers.cli import run
from tests.helpers.sessions import SessionBuilder


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list]:
    root = tmp_path_factory.mktemp("judged")
    return root, build(root)


def _all(store, scope, query: Query) -> list[tuple[str, str | None]]:
    out: list[tuple[str, str | None]] = []
    cursor = None
    while True:
        page = search(store, scope, query, Filters(), limit=500, cursor=cursor)
        out += [(h.session, h.entry_id) for h in page.hits]
        if page.next_cursor is None:
            assert page.total == len(out)
            return out
        cursor = page.next_cursor


def test_the_right_answer_comes_first_on_the_judged_corpus(corpus: tuple[Path, list]) -> None:
    root, judged = corpus
    found = session_files([str(root)], include_default=False)
    first = top5 = 0
    misses = []
    with temporary_store() as store:
        scope = store.update(found.files)
        for item in judged:
            page = search(store, scope, Query.parse(item.query), Filters(), limit=5)
            ranked = [(h.session, h.entry_id) for h in page.hits]
            if ranked[:1] and ranked[0] in item.answers:
                first += 1
            if any(hit in item.answers for hit in ranked):
                top5 += 1
            else:
                misses.append(item.query)
    assert len(judged) >= 40
    assert first >= 0.8 * len(judged), (first, len(judged))
    assert top5 >= 0.95 * len(judged), misses


def test_a_word_in_any_script_finds_what_fixed_strings_find(corpus: tuple[Path, list]) -> None:
    root, _ = corpus
    found = session_files([str(root)], include_default=False)
    with temporary_store() as store:
        scope = store.update(found.files)
        for word in CJK_WORDS:
            fixed = set(_all(store, scope, Query.parse(word, fixed=True)))
            words = set(_all(store, scope, Query.parse(word)))
            assert fixed, word
            assert fixed <= words, (word, len(fixed - words))


def test_a_korean_word_with_its_particle_and_a_latin_word_inside_one(agent: Path) -> None:
    folder = agent / "sessions" / "--home-dev-kr--"
    folder.mkdir(parents=True)
    sb = SessionBuilder(cwd="/home/dev/kr")
    said = sb.user("Redis를 캐시로만 쓰고 설정을 바꾸자")
    other = sb.user("我们的数据库连接池太小")
    sb.user("nothing in common here")
    sb.write(folder / "s.jsonl")
    for query, expected in (
        ("캐시", said),
        ("설정", said),
        ("Redis", said),
        ("数据库", other),
        ("连接", other),
        ('"캐시로만 쓰고"', said),
    ):
        result = run("search", query, "--json")
        assert result.code == 0, (query, result.stderr)
        hits = result.json["results"]
        assert [h["entry_id"] for h in hits] == [expected], query
        spans = hits[0]["highlights"]
        assert spans and all(hits[0]["snippet"][s["start"] : s["end"]] for s in spans), query


def test_a_typo_gets_a_hint(corpus: tuple[Path, list]) -> None:
    root, _ = corpus
    result = run("search", "pnmp monorepo", "--dir", root, "--json")
    assert result.code == 1
    assert result.json["results"] == [] and result.json["total"] == 0
    assert result.json["did_you_mean"][0] == "pnpm monorepo"
    human = run("search", "libvisp", "--dir", root)
    assert human.code == 1
    assert "did you mean: 'libvips'" in human.stderr
    assert "no results for the words 'libvisp'" in human.stderr and str(root) in human.stderr


def test_nothing_found_says_what_and_where(agent: Path) -> None:
    empty = run("search", "anything")
    assert empty.code == 1
    assert "no sessions to search: none found under" in empty.stderr and str(agent / "sessions") in empty.stderr
    folder = agent / "sessions" / "--repo--"
    folder.mkdir(parents=True)
    sb = SessionBuilder()
    sb.user("hello there")
    sb.write(folder / "s.jsonl")
    nothing = run("search", "-F", "zzz-not-there")
    assert nothing.code == 1
    assert "no results for the string 'zzz-not-there' in 1 session under" in nothing.stderr
    assert "did you mean" not in nothing.stderr


def test_a_file_without_a_session_header_is_named(agent: Path) -> None:
    folder = agent / "sessions" / "--repo--"
    folder.mkdir(parents=True)
    sb = SessionBuilder()
    sb.user("findable words")
    sb.write(folder / "good.jsonl")
    headless = folder / "headless.jsonl"
    headless.write_bytes(b"".join(line + b"\n" for line in (folder / "good.jsonl").read_bytes().splitlines()[1:]))
    for _ in range(2):  # indexed now, and known from the index the second time: named both times
        result = run("search", "findable", "--json")
        assert result.code == 0
        assert f"{headless}: not a Pi session: its first line is no session header: skipped" in result.stderr
        assert result.json["skipped"] == [
            {"path": str(headless), "reason": "not a Pi session: its first line is no session header"}
        ]


def test_json_has_the_total_and_the_next_page_does_not_build_the_index_again(agent: Path) -> None:
    folder = agent / "sessions" / "--repo--"
    folder.mkdir(parents=True)
    sb = SessionBuilder()
    for n in range(7):
        sb.user(f"needle number {n}")
    sb.write(folder / "s.jsonl")
    for args in (["needle"], ["-F", "needle"], ["--regex", "ne+dle"], ["needle", "--branch", "leaf"]):
        doc = run("search", *args, "-m", "3", "--json").json
        assert doc["matches"] == 3 and doc["total"] == doc["total_at_least"] == 7, args
    human = run("search", "needle", "-m", "3", "--reindex")
    assert human.code == 0
    line = next(x for x in human.stderr.splitlines() if "next page:" in x)
    assert "3 of 7 results" in line and "--reindex" not in line and "--cursor" in line


def test_an_index_of_the_format_before_is_built_again(agent: Path) -> None:
    folder = agent / "sessions" / "--repo--"
    folder.mkdir(parents=True)
    sb = SessionBuilder()
    sb.user("배포는 금요일에 하지 말자")
    sb.write(folder / "s.jsonl")
    assert run("search", "배포").code == 0
    conn = sqlite3.connect(database_path())
    conn.execute("pragma user_version = 1")  # what an index made before the cjk and weight columns says
    conn.close()
    result = run("search", "금요일", "--json")
    assert result.code == 0, result.stderr
    assert "it is in format 1, not 2: the search index is built again" in result.stderr
    assert len(result.json["results"]) == 1
    again = run("search", "금요일")
    assert again.code == 0 and "built again" not in again.stderr


def test_a_pattern_without_words_finds_the_same_read_in_one_pass(corpus: tuple[Path, list]) -> None:
    """A pattern the words cannot narrow is matched on every entry's bytes in one pass over the index; with a
    filter that keeps every entry, entry by entry on the text: the same results, in the same order."""
    root, _ = corpus
    found = session_files([str(root)], include_default=False)
    every_role = Filters(roles=frozenset({"user", "assistant", "toolResult", "bashExecution", "custom_message"}))
    with temporary_store() as store:
        scope = store.update(found.files)
        for query in (
            Query.parse(r"\d\.\d{2}", regex=True),
            Query.parse(r"[가-힣]+를", regex=True),
            Query.parse(r"\w+Error\b|キャッシュ\S", regex=True),
            Query.parse("ERR", regex=True, ignore_case=True),
            Query.parse("(", fixed=True),
            Query.parse("는", fixed=True),
        ):
            one_pass = search(store, scope, query, Filters(), limit=1000)
            by_entry = search(store, scope, query, every_role, limit=1000)
            assert one_pass.hits, query
            assert [h.to_json() for h in one_pass.hits] == [h.to_json() for h in by_entry.hits], query
            assert one_pass.total == by_entry.total == len(one_pass.hits)
