"""Searching an entry's lines joined finds exactly the lines a line-by-line search finds."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from pi_compact.errors import PatternError
from pi_compact.search.matching import Searcher, joinable, matching_lines
from pi_compact.search.render import RenderedEntry
from pi_compact.session.entries import Entry

PIECES = [
    "a",
    "b",
    " ",
    "^",
    "$",
    ".",
    r"\s",
    r"\S",
    r"\n",
    "[^a]",
    "a*",
    "b+",
    "(a|b)",
    r"\b",
    r"\B",
    "x?",
    ".*",
    "$^",
]


def rendered(lines: list[str]) -> RenderedEntry:
    entry = Entry({"type": "message", "id": "e1"}, 2, 0)
    return RenderedEntry(entry, tuple(lines), tuple("text" if i % 2 else "thinking" for i in range(len(lines))))


@settings(max_examples=400, deadline=None)
@given(
    pieces=st.lists(st.sampled_from(PIECES), min_size=1, max_size=5),
    lines=st.lists(st.text(alphabet="ab \t\u2028", max_size=8), min_size=1, max_size=8),
    start=st.integers(0, 7),
    sections=st.sampled_from([None, frozenset({"text"})]),
)
def test_joined_search_equals_line_by_line(pieces, lines, start, sections) -> None:
    pattern = "".join(pieces)
    try:
        searcher = Searcher(pattern, False, False, 5.0)
    except PatternError:
        return
    assert joinable(pattern)
    entry = rendered(lines)
    start = min(start, len(lines) - 1)
    joined = [(i, m.span()) for i, m in matching_lines(entry, searcher, sections, start)]
    searcher.joined = None
    single = [(i, m.span()) for i, m in matching_lines(entry, searcher, sections, start)]
    assert joined == single


def test_patterns_that_cannot_be_joined() -> None:
    for pattern in [r"\Afoo", r"foo\Z", r"(?<!x)foo", "(?i)foo", "a++", r"foo\z"]:
        assert not joinable(pattern)
    assert joinable("foo(bar|baz)$") and joinable("x", fixed=True)


def test_a_slow_but_sound_pattern_on_a_huge_entry_falls_back_to_single_lines() -> None:
    """Joined, 6 MB take longer than the timeout allows one line; line by line each is quick."""
    from dataclasses import replace

    from pi_compact.search import DEFAULT_LIMITS, grep
    from pi_compact.session.load import load_session_bytes
    from tests.helpers.sessions import SessionBuilder

    lines = ["lorem ipsum dolor sit amet consectetur adipiscing elit sed do"] * 100_000
    lines[60_000] = "found abcdefghij7 here"
    sb = SessionBuilder()
    entry = sb.tool_result("c", "bash", "\n".join(lines))
    limits = replace(DEFAULT_LIMITS, regex_timeout=0.05, search_timeout=60.0)  # 100,000 lines, one by one
    page = grep(load_session_bytes(sb.to_bytes()), r"\w{10}\d", limits=limits)
    assert [(m.entry_id, m.line.number) for m in page.matches] == [(entry, 60_003)]
