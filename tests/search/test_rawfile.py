"""Searching a session file through a small window gives exactly what searching its bytes in memory gives."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_compact.search import grep
from pi_compact.search.grepping import GrepQuery
from pi_compact.search.prefilter import build_raw_filter, take_census
from pi_compact.search.transcript import build_transcript
from pi_compact.session import rawfile
from pi_compact.session.load import load_session
from pi_compact.session.rawfile import FileBytes
from tests.search.test_prefilter import SESSION_TEXTS, STYLES, _pattern_forms, _session_bytes

BYTES = st.binary(min_size=0, max_size=300).map(lambda b: b.replace(b"\x00", b"\\"))


@settings(max_examples=200, deadline=None)
@given(
    data=st.lists(st.sampled_from([b"ab", b"\\u0061", b"\\/", b"x", b"\n", b"\\", b"\xc3\xa9", b"b"]), max_size=80),
    sub=st.sampled_from([b"ab", b"a", b"\\u0061", b"ba\\", b"\\/", b"x\nab", b"zz"]),
    window=st.integers(1, 9),
    start=st.integers(0, 200),
)
def test_find_and_search_agree_with_bytes(data, sub, window, start) -> None:
    raw = b"".join(data)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "f"
        path.write_bytes(raw)
        view = FileBytes(path, len(raw), window=window)
        assert view.find(sub, start) == raw.find(sub, start)
        pattern = regex.compile(regex.escape(sub) + b"|b\\\\", regex.IGNORECASE)
        found = pattern.search(raw, start)
        assert view.search(pattern, start, len(sub) + 2) == (found.start() if found else -1)
        census = regex.compile(rb"\\(?:u00[2-7][0-9a-fA-F]|/)")
        assert view.findall(census, 6) == set(census.findall(raw))
        assert take_census(view) == take_census(raw)
        assert view[start : start + 7] == raw[start : start + 7]


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    texts=SESSION_TEXTS,
    style=STYLES,
    seed=st.integers(0, 1000),
    pick=st.data(),
    ignore_case=st.booleans(),
    window=st.integers(1, 64),
    crlf=st.booleans(),
)
def test_grep_through_a_small_window_matches_in_memory_bytes(
    texts, style, seed, pick, ignore_case, window, crlf
) -> None:
    """The whole grep page (matches, JSON, cursor) is the same whether the raw bytes are held or windowed."""
    data = _session_bytes(texts, style, seed)
    if crlf:
        data = data.replace(b"\n", b"\r\n")
    source = pick.draw(st.sampled_from(texts))
    literal = source[: pick.draw(st.integers(1, 6))] or "a"
    pattern, fixed = pick.draw(_pattern_forms(literal))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.jsonl"
        path.write_bytes(data)
        held = build_transcript(load_session(path))
        held.attach_raw(data)
        windowed = build_transcript(load_session(path))
        raw = windowed.raw_bytes()
        assert isinstance(raw, FileBytes)
        raw.window = window
        pages = [
            grep(t, GrepQuery.of(pattern, ignore_case=ignore_case, fixed=fixed), max_count=2, max_chars=10_000_000)
            for t in (held, windowed)
        ]
    assert pages[0].prefiltered == pages[1].prefiltered
    assert [m.to_json() for m in pages[0].matches] == [m.to_json() for m in pages[1].matches]
    assert pages[0].to_json() == pages[1].to_json()
    assert list(pages[0].text_lines()) == list(pages[1].text_lines())


def test_rare_literal_across_window_edges(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A literal that straddles a window edge, raw or escaped, is still found in its entry."""
    from tests.helpers.sessions import SessionBuilder

    monkeypatch.setattr(rawfile, "WINDOW", 7)
    sb = SessionBuilder()
    for i in range(30):
        sb.user(f"filler {i} " + "x" * random.Random(i).randint(0, 13))
    target = sb.user("here is E_RARE_NEEDLE_4711 at last")
    sb.user("after")
    data = sb.to_bytes().replace(b"E_RARE", b"E_R\\u0041RE")
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    transcript = build_transcript(load_session(path))
    census = take_census(transcript.raw_bytes())
    filt = build_raw_filter(["E_RARE_NEEDLE_4711"], transcript.raw_bytes(), ignore_case=True, census=census)
    assert filt is not None and filt.find_from(transcript.raw_bytes(), 0) == data.find(b"E_R\\u0041RE")
    page = grep(transcript, GrepQuery.of("e_rare_needle_4711", ignore_case=True))
    assert page.prefiltered and [m.entry_id for m in page.matches] == [target]


def test_changed_file_is_not_searched_raw(tmp_path: Path) -> None:
    """A file appended to after loading is not prefiltered (its bytes are not the ones loaded)."""
    from tests.helpers.sessions import SessionBuilder

    sb = SessionBuilder()
    sb.user("needle one")
    path = sb.write(tmp_path / "s.jsonl")
    transcript = build_transcript(load_session(path))
    with open(path, "ab") as stream:
        stream.write(b'{"type":"label"}\n')
    page = grep(transcript, "needle")
    assert not page.prefiltered and len(page.matches) == 1
    assert transcript.entry_bytes(transcript.entries[0]) is None
