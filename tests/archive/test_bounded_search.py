"""A search ends in bounded time whatever the entries hold and whatever the pattern.

- a long entry repeating the word: FTS5's snippet() is quadratic in the hits (250 KB: 23 s; 1 MB: minutes); past
  ``SNIPPET_FTS_CHARS`` the snippet is a window cut in Python around the first hit;
- ``--regex '(a|a)+$'`` over entries on which Python's engine backtracks (0.3 s each, a minute for 200): RE2 runs
  every pattern whose meaning it shares with ``regex``, in linear time, with the same matches;
- a pattern RE2 cannot run, slow on every entry: the search stops at ``SEARCH_BUDGET`` seconds of matching, keeps
  the results so far, and says so (a warning; ``stopped`` and ``complete: false`` in JSON; the tool's text).

The time bounds are asserted without timing: by a wall limit far above the bounded work and far below the
unbounded one (a real process killed at 30 s), or by a clock that counts calls."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import regex

from pi_compact.archive import query as query_module
from pi_compact.archive.query import SNIPPET_FTS_CHARS, Query, _Linear, _window_snippet
from tests.helpers.cli import run, run_process
from tests.helpers.sessions import SessionBuilder


def _folder(agent: Path) -> Path:
    folder = agent / "sessions" / "--repo--"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.mark.process
def test_a_megabyte_repeating_the_word_gets_its_snippet_at_once(agent: Path) -> None:
    sb = SessionBuilder()
    sb.user("needle " * 150_000)  # 1 MB: FTS5's snippet() would take minutes
    sb.user("a short needle entry")
    sb.write(_folder(agent) / "s.jsonl")
    result = run_process("search", "needle", "--json", timeout=30)
    assert result.code == 0, result.stderr
    hits = result.json["results"]
    assert len(hits) == 2
    long_hit = next(h for h in hits if len(h["highlights"]) > 5)
    assert long_hit["snippet"].startswith("needle needle") and long_hit["snippet"].endswith("…")
    assert all(long_hit["snippet"][h["start"] : h["end"]] == "needle" for h in long_hit["highlights"])


def test_the_window_snippet_highlights_what_fts5_matches() -> None:
    text = "hay, " * 2000 + "the Café\tDéjà vu migrations here\n" + "straw " * 2000
    assert len(text) > SNIPPET_FTS_CHARS
    for words, expected in (
        ("cafe", ["Café"]),
        ("CAFÉ deja", ["Café", "Déjà"]),
        ("migrat*", ["migrations"]),
        ('"deja vu"', ["Déjà", "vu"]),
    ):
        fts = Query.parse(words).fts
        assert fts is not None
        snippet, spans = _window_snippet(fts, text)
        assert [snippet[a:b] for a, b in spans] == expected, words
        assert snippet.startswith("…") and snippet.endswith("…") and "\t" not in snippet and "\n" not in snippet
        assert len(snippet.split()) <= 25


def test_a_short_entry_keeps_fts5s_snippet(agent: Path) -> None:
    sb = SessionBuilder()
    sb.user("one two three needle four five")
    sb.write(_folder(agent) / "s.jsonl")
    hit = run("search", "needle", "--json").json["results"][0]
    assert hit["snippet"] == "one two three needle four five" and hit["highlights"] == [{"start": 14, "end": 20}]


# Patterns RE2 runs, and texts on which both engines must agree (positions in characters, line anchors, case).
SAME = [
    (r"(a|a)+$", False),
    (r"foo\.bar", False),
    (r"^err(or)?:", False),
    (r"[^\n]*timeout", False),
    (r"caf[eé]", True),
    (r"STRASSE|straße", True),
    (r"x\x41y", False),
    (r"a\tb|a\nb", False),
    (r"(?:ab){2,3}", False),
    (r"\\d", False),
    (r"\d{3}-\d{4}", False),  # the classes: RE2 is given the very characters regex puts in them
    (r"\w+Error", False),
    (r"[\d,.]+", False),
    (r"[^\s]+\s", False),
    (r"\S+|\W", False),
    (r"\D\d", True),
    (r"[_\w]+", True),
]
TEXTS = [
    "aaaa\nfoo.bar\nerror: timeout\ncafé Café CAFE\nxAy a\tb a\nb ababab \\d",
    "ab" * 50 + "\nError: x\n" + "ÉTÉ straße STRASSE",
    "",
    "٣٤٥-١٢٣٤ 123-4567 café_Error ÉtéError\u3000x\u00a0y\u2028z 1,5.6 \u0663\u0664 ǅungla_x",
]


@pytest.mark.parametrize(("pattern", "ignore_case"), SAME)
def test_re2_matches_what_regex_matches(pattern: str, ignore_case: bool) -> None:
    query = Query.parse(pattern, regex=True, ignore_case=ignore_case)
    assert isinstance(query.pattern, _Linear)
    reference = regex.compile(pattern, regex.VERSION0 | regex.MULTILINE | (regex.IGNORECASE if ignore_case else 0))
    for text in TEXTS:
        ours = [m.span() for m in query.pattern.finditer(text)]
        assert ours == [m.span() for m in reference.finditer(text)], (pattern, text)
        first = query.pattern.search(text, 3)
        theirs = reference.search(text, 3)
        assert (first.span() if first else None) == (theirs.span() if theirs else None)


@pytest.mark.parametrize(
    "pattern", [r"[\D]", r"[a\d-z]", r"\bword\b", r"(?=x)x", r"(a)\1", r"a{,3}", r"[[:alpha:]]", r"\Z", r"(?i)x"]
)
def test_patterns_the_engines_read_differently_stay_with_regex(pattern: str) -> None:
    assert not isinstance(Query.parse(pattern, regex=True).pattern, _Linear)


@pytest.mark.process
def test_a_backtracking_pattern_over_many_entries_ends_at_once(agent: Path) -> None:
    sb = SessionBuilder()
    for _ in range(200):
        sb.user("a" * 18 + "b")  # regex: 0.3 s each, a minute in all; RE2: nothing
    sb.user("a" * 18)
    sb.write(_folder(agent) / "s.jsonl")
    result = run_process("search", "--regex", "(a|a)+$", "--json", timeout=30)
    assert result.code == 0, result.stderr
    doc = result.json
    assert len(doc["results"]) == 1 and doc["complete"] is True and doc["stopped"] is None


class _CountingClock:
    """CPU seconds that advance by one at each reading: each entry matched costs one second."""

    def __init__(self) -> None:
        self.now = 0.0
        self.readings = 0

    def __call__(self) -> float:
        self.readings += 1
        self.now += 1.0
        return self.now


def test_a_slow_pattern_stops_at_the_search_budget_with_the_results_so_far(
    agent: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sb = SessionBuilder()
    for n in range(60):
        sb.user(f"entry {n} aaa")
    sb.write(_folder(agent) / "s.jsonl")
    clock = _CountingClock()
    monkeypatch.setattr(query_module, "_clock", clock)
    monkeypatch.setattr(query_module, "SEARCH_BUDGET", 10.0)
    result = run("search", "--regex", "(?=a)aaa", "--json", "--max-count", "100")  # lookahead: not RE2's
    assert result.code == 0, result.stderr
    doc = result.json
    assert len(doc["results"]) == 10  # ten seconds, one per entry
    assert clock.readings == 20
    assert doc["complete"] is False and "stopped after 10 entries" in doc["stopped"]
    human = run("search", "--regex", "(?=a)aaa", "--max-count", "100")
    assert human.code == 0 and "warning: the pattern took more than 10 s" in human.stderr


def test_the_tool_says_its_search_stopped(agent: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pi_compact.extension.hook import search_sessions

    sb = SessionBuilder(cwd="/repo")
    for n in range(30):
        sb.user(f"entry {n} aaa")
    session = sb.write(_folder(agent) / "s.jsonl")
    monkeypatch.setattr(query_module, "_clock", _CountingClock())
    monkeypatch.setattr(query_module, "SEARCH_BUDGET", 5.0)
    settings = agent / "settings.json"
    settings.write_text('{"picompact": {"crossSession": "all"}}')
    os.environ.pop("PI_CODING_AGENT_SESSION_DIR", None)
    text = search_sessions(session, {"query": "(?=a)aaa", "regex": True, "max_count": 20})
    assert "incomplete: the pattern took more than 5 s" in text


def test_the_bundled_classes_are_those_of_the_installed_regex() -> None:
    """The table ``search --regex`` reads instead of computing the classes is this ``regex``'s (else regenerate it:
    ``python tools/update_regex_classes.py``)."""
    table = query_module._class_table()
    assert table["regex"] == regex.__version__
    for name in "dsw":
        assert query_module._class_ranges(name) == query_module.class_ranges(name), name


def test_a_count_that_stops_says_how_many_it_counted(agent: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past a full page, a pattern matched entry by entry (a filter: no screen of every entry) counts the rest for at
    most ``COUNT_BUDGET``: then ``total`` is null and ``total_at_least`` the results counted until then."""
    sb = SessionBuilder()
    for n in range(10):
        sb.user(f"entry {n} aaa")
    sb.write(_folder(agent) / "s.jsonl")
    monkeypatch.setattr(query_module, "_clock", _CountingClock())  # one second an entry
    monkeypatch.setattr(query_module, "COUNT_BUDGET", 1.0)
    args = ("search", "--regex", "(?=a)aaa", "--role", "user", "-m", "3")
    doc = run(*args, "--json").json
    assert len(doc["results"]) == 3 and doc["next_cursor"] is not None and doc["stopped"] is None
    assert doc["total"] is None and doc["total_at_least"] == 5  # the page's 3, the next, and one more second's
    human = run(*args)
    assert human.code == 0 and "3 of at least 5 results; next page:" in human.stderr
    monkeypatch.setattr(query_module, "COUNT_BUDGET", 100.0)
    doc = run(*args, "--json").json
    assert doc["total"] == doc["total_at_least"] == 10
