"""A pattern only ``regex`` runs is screened on the entries' bytes with RE2 first, and the screen's answer is the
pattern's: on a text of ASCII only, the pattern itself in RE2 (word boundaries are ASCII there in both engines);
on any other, a wider pattern in RE2 and then ``regex`` where that one matches."""

from __future__ import annotations

import string
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_compact.archive.query import Query, _Budget, _bytes_matcher, _checked_matcher, _Linear, _located
from tests.search.test_rawregex import ALPHABET, patterns

ASCII_ALPHABET = 'abkKsSqiI"\\/\t\n :.[]{}$,01_-xX\x00\x1f\x7f' + string.ascii_letters[:6]
EXTRA = [
    r"\b.{2}\S{2}",
    r"\S\x1f",
    r"\s",
    r"\w+Error\b",
    r"\bfoo\b",
    r"\B\d+",
    r"(?<=a)b",
    r"a(?!b)",
    r"^\s*$",
    r"\b\w{3}\b",
]


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    pattern=st.one_of(patterns(), st.sampled_from(EXTRA)),
    text=st.one_of(st.text(alphabet=ALPHABET, max_size=24), st.text(alphabet=ASCII_ALPHABET, max_size=24)),
    ignore_case=st.booleans(),
)
def test_the_screen_answers_what_the_pattern_answers(pattern: str, text: str, ignore_case: bool) -> None:
    query = Query.parse(pattern, regex=True, ignore_case=ignore_case)
    if isinstance(query.pattern, _Linear):
        return  # screened by the pattern itself in RE2 (tests/archive/test_bounded_search.py)
    screener = _checked_matcher(query, _Budget())
    assert screener is not None, pattern
    expected = query.pattern.search(text) is not None
    assert bool(screener.entry(text.encode("utf-8"))) is expected, (pattern, text)


def test_word_boundaries_are_answered_by_re2_on_ascii_text() -> None:
    query = Query.parse(r"\w+Error\b", regex=True)
    assert not isinstance(query.pattern, _Linear)  # \b is Unicode in regex: RE2 cannot run it on every text
    budget = _Budget()
    screener: Any = _checked_matcher(query, budget)
    matches = screener.entry
    assert matches(b"a TypeError: x") and not matches(b"TypeErrors") and not matches(b"Error")
    assert budget.entries == 0  # no entry was given to regex
    assert matches("a TypeError\u00e9".encode()) is False  # é is a word character: no boundary
    assert matches("an ÉtéError!".encode()) is True
    assert budget.entries == 2


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    pattern=st.one_of(patterns(), st.sampled_from([*EXTRA, "a\nb", "$", "^", "x*", r"\n"])),
    texts=st.one_of(
        st.lists(st.text(alphabet=ALPHABET, max_size=12), max_size=8),
        st.lists(st.text(alphabet=ASCII_ALPHABET, max_size=12), max_size=8),  # a batch of ASCII only
    ),
    ignore_case=st.booleans(),
)
def test_entries_searched_joined_are_the_entries_that_match(pattern: str, texts: list[str], ignore_case: bool) -> None:
    """Many entries are searched joined with a newline; the entries found (where the match found lies within one
    entry, without asking it alone) are those the pattern matches alone."""
    query = Query.parse(pattern, regex=True, ignore_case=ignore_case)
    screener = _bytes_matcher(query.pattern) or _checked_matcher(query, _Budget())
    assert screener is not None and screener.first is not None, pattern
    blobs = [t.encode("utf-8") for t in texts]
    found = {~i if i < 0 else i for i in _located(screener.first, blobs) if i < 0 or screener.entry(blobs[i])}
    assert found == {i for i, t in enumerate(texts) if query.pattern.search(t) is not None}, (pattern, texts)
