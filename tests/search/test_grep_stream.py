"""grep's page as a stream: the same matches, cursor and summary as the collected page, each match handed out
before the rest of the transcript is searched (so the CLI prints it at once and holds no page in memory)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pi_compact.search.grepping import GrepQuery, grep, grep_stream
from pi_compact.search.transcript import build_transcript
from pi_compact.session.load import load_session
from tests.helpers.sessions import simple_session


@pytest.fixture
def session_path(tmp_path: Path) -> Path:
    return simple_session(turns=12, size=200).write(tmp_path / "s.jsonl")


@pytest.mark.parametrize(
    ("pattern", "kwargs"),
    [
        ("Turn", {}),
        ("mod", {"max_count": 5}),
        ("y+", {"max_chars": 300}),
        ("contents", {"context": 2}),
        ("nothing-like-this", {}),
    ],
)
def test_the_stream_is_the_page(session_path: Path, pattern: str, kwargs: dict[str, int]) -> None:
    limits = {k: kwargs.pop(k) for k in ("max_count", "max_chars") if k in kwargs}
    page = grep(build_transcript(load_session(session_path)), GrepQuery.of(pattern, **kwargs), **limits)
    stream = grep_stream(build_transcript(load_session(session_path)), GrepQuery.of(pattern, **kwargs), **limits)
    assert [m.to_json() for m in stream.matches] == [m.to_json() for m in page.matches]
    assert stream.count == len(page.matches)
    assert stream.to_json() == page.to_json()
    assert stream.next_cursor == page.next_cursor
    # grep is built on grep_stream, so the comparisons above only tie the two together; this one checks the matches
    # against a plain scan of the rendered lines (none of these patterns matches a section marker; the entry
    # headers are searched only with --section header).
    scan = [
        (line.entry.id, line.number)
        for line in build_transcript(load_session(session_path)).lines()
        if line.section != "header" and re.search(pattern, line.text)
    ]
    assert [(m.entry_id, m.line.number) for m in page.matches] == scan[: len(page.matches)]
    assert page.matches or not scan


def test_a_match_comes_out_before_the_rest_is_searched(session_path: Path) -> None:
    transcript = build_transcript(load_session(session_path))
    stream = grep_stream(transcript, GrepQuery.of("Turn 0"), max_count=1000)
    first = next(iter(stream.matches))
    assert "Turn 0" in first.line.text
    assert stream.entries_searched < len(transcript.entries)


def test_text_lines_of_the_stream_match_the_page(session_path: Path) -> None:
    page = grep(build_transcript(load_session(session_path)), GrepQuery.of("Done", context=1))
    stream = grep_stream(build_transcript(load_session(session_path)), GrepQuery.of("Done", context=1))
    assert list(stream.text_lines()) == list(page.text_lines())
