"""The strings every match holds (``search.required``) skip the entries that cannot match: a screened search finds
the same entries with them as without, and no text that holds a match lacks them."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_compact.archive import query as Q
from pi_compact.archive.query import Filters, Query, _Budget, _holding, _screen
from pi_compact.search import rawregex, required
from tests.search.test_rawregex import ALPHABET, patterns

# Letters the patterns below are made of, and what stands near them in a text (cases, folds to them, other scripts)
TEXT = "abcdxErorEROReKks\u212a\u017f\u0130\u0131iI0129-_ \n\té漢"
ATOMS = ["ab", "cd", "x", "Error", "e", "k", "s", "i", "[ab]", "[a-c]", r"\d", r"\w", ".", "é", "-", r"\b", "^", "$"]
QUANTS = ["", "", "", "?", "+", "*", "{2}", "{0,2}", "{1,3}", "{2,}"]


@st.composite
def literal_patterns(draw: Any) -> str:
    """Patterns with literals inside: sequences, groups, alternations and repetitions of them."""

    def part() -> str:
        atom = draw(st.sampled_from(ATOMS))
        if draw(st.integers(0, 4)) == 0:
            atom = f"(?:{atom}|{draw(st.sampled_from(ATOMS))})"
        quant = draw(st.sampled_from(QUANTS))
        return atom + quant if atom not in (r"\b", "^", "$") else atom

    body = "".join(part() for _ in range(draw(st.integers(1, 5))))
    return f"(?:{body})|{part()}" if draw(st.integers(0, 5)) == 0 else body


any_pattern = st.one_of(literal_patterns(), patterns(), st.sampled_from([r"\w+Error\b", r"(?:ab|cd)[0-9]{3}x"]))
any_text = st.one_of(st.text(alphabet=TEXT, max_size=30), st.text(alphabet=ALPHABET, max_size=20))


@settings(max_examples=600, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(pattern=any_pattern, text=any_text, ignore_case=st.booleans())
def test_a_text_that_holds_a_match_holds_the_needed_strings(pattern: str, text: str, ignore_case: bool) -> None:
    needed = required.needed(rawregex.parse(pattern, ignore_case=ignore_case), ignore_case=ignore_case)
    if needed is None:
        return
    flags = regex.VERSION0 | regex.MULTILINE | (regex.IGNORECASE if ignore_case else 0)
    if regex.compile(pattern, flags).search(text) is not None:
        assert needed.held(text.encode("utf-8")), (pattern, text, needed)


def _table(texts: list[str | None]) -> sqlite3.Connection:
    conn = sqlite3.connect(":memory:")
    conn.execute("create table body(text)")
    conn.executemany("insert into body(text) values (?)", [(t,) for t in texts])
    return conn


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    pattern=any_pattern,
    texts=st.lists(st.one_of(st.none(), any_text), max_size=40),
    ignore_case=st.booleans(),
    fixed=st.booleans(),
)
def test_the_screen_finds_the_same_entries_with_and_without_the_needed_strings(
    pattern: str, texts: list[str | None], ignore_case: bool, fixed: bool
) -> None:
    query = Query.parse(pattern, fixed=fixed, regex=not fixed, ignore_case=ignore_case)
    conn = _table(texts)
    with_needed = _screen(conn, query, Filters(), _Budget())
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Q, "_needed", lambda query: None)
        without = _screen(conn, query, Filters(), _Budget())
    assert with_needed == without, (pattern, texts)
    if with_needed is not None:
        expected = {n for n, t in enumerate(texts, 1) if t is not None and query.pattern.search(t) is not None}
        assert with_needed[0] == expected


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(texts=st.lists(st.text(alphabet="ab\ncd", max_size=6), max_size=12), string=st.sampled_from(["b\nc", "ab", "a"]))
def test_the_entries_holding_a_string_are_found_in_the_joined_batch(texts: list[str], string: str) -> None:
    needed = required.Needed(((string.encode(),),))
    blobs = [t.encode() for t in texts]
    assert _holding(needed, blobs) == [i for i, t in enumerate(texts) if string in t]


@pytest.mark.parametrize(
    ("pattern", "ignore_case", "sets"),
    [
        (r"\w+Error\b", False, ((b"Error",),)),
        (r"\w+Error\b", True, ((b"error",),)),
        (r"(?:ab|cd)[0-9]{3}x", False, ((b"ab", b"cd"), (b"x",))),
        ("foo(bar|baz)+qux", False, ((b"foobar", b"foobaz"), (b"barqux", b"bazqux"))),
        ("Exception", True, ((b"except",), (b"on",))),  # i may be a character outside ASCII (U+0130)
        (r"[A-Z][a-z]+[0-9]+", False, None),
        ("a?b*", False, None),
        ("é+", False, None),  # characters outside ASCII are not taken
    ],
)
def test_the_needed_strings_of_some_patterns(pattern: str, ignore_case: bool, sets: Any) -> None:
    needed = required.needed(rawregex.parse(pattern, ignore_case=ignore_case), ignore_case=ignore_case)
    assert (needed.sets if needed is not None else None) == sets
