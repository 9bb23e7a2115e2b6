"""The raw-bytes prefilter never loses a match, whatever JSON escaping the file uses."""

from __future__ import annotations

import json
import random
import sys
import tempfile
from pathlib import Path
from typing import Any

import orjson
import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_compact.search import grep
from pi_compact.search.grepping import GrepQuery
from pi_compact.search.prefilter import CASE_EXTRA, build_raw_filter, required_literals, take_census
from pi_compact.search.transcript import build_transcript
from pi_compact.session.load import load_session, load_session_bytes
from tests.helpers.sessions import SessionBuilder


@pytest.mark.parametrize(
    ("pattern", "fixed", "expected"),
    [
        ("needle", False, ["needle"]),
        ("error|fail", False, ["error", "fail"]),
        (r"TypeError: .*undefined", False, ["TypeError: "]),
        (r"a\.b\(c", False, ["a.b(c"]),
        (r"^ENTRY 12", False, ["ENTRY 12"]),
        (r"colou?r", False, ["colo"]),
        (r"ab*c", False, ["a"]),
        (r"ab+c", False, ["ab"]),
        (r"ab{2}c", False, ["a"]),
        (r"foo[0-9]+bar", False, ["foo"]),
        (r"foo(bar|baz)", False, ["foo"]),
        (r"a|b(c)", False, None),  # alternation next to a group: not analysed
        (r"(?i)foo", False, None),
        (r"\d+", False, None),
        (r"x|\d", False, None),
        (r"a\nb", False, ["a"]),
        ("", False, None),
        ("a(b", True, ["a(b"]),
        ("", True, None),
    ],
)
def test_required_literals(pattern: str, fixed: bool, expected: list[str] | None) -> None:
    assert required_literals(pattern, fixed=fixed) == expected


def test_case_extras_match_the_regex_module() -> None:
    """Non-ASCII characters that IGNORECASE matches for an ASCII letter, found by scanning every code point."""
    everything = "".join(chr(c) for c in range(0x80, sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF)
    found: dict[str, str] = {}
    for letter in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ":
        hits = regex.compile(letter, regex.IGNORECASE | regex.VERSION0).findall(everything)
        if hits:
            found[letter] = "".join(hits)
    assert found == CASE_EXTRA


# -- property: prefiltered results equal unfiltered ones -----------------------------------------------------------

ALPHABET = 'abkKsSiI\u212a\u017f\u0130"\\/\t é🎉漢:[]ENTRY01 \u2028'


def _escape_all(text: str, rng: random.Random) -> str:
    units = text.encode("utf-16-le", "surrogatepass")
    out = []
    for i in range(0, len(units), 2):
        code = f"{int.from_bytes(units[i : i + 2], 'little'):04x}"
        out.append("\\u" + "".join(c.upper() if rng.random() < 0.5 else c for c in code))
    return '"' + "".join(out) + '"'


def _encode(value: Any, style: str, rng: random.Random) -> str:
    if style == "orjson":
        return orjson.dumps(value).decode()
    if style == "ascii":
        return json.dumps(value, ensure_ascii=True)
    if style == "slash":
        return json.dumps(value, ensure_ascii=False).replace("/", "\\/")
    if isinstance(value, str):
        return _escape_all(value, rng)
    if isinstance(value, dict):
        return "{" + ",".join(f"{_encode(k, style, rng)}:{_encode(v, style, rng)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_encode(v, style, rng) for v in value) + "]"
    return json.dumps(value)


# Message texts for _session_bytes, and the ways it may escape them.
SESSION_TEXTS = st.lists(st.text(alphabet=ALPHABET, min_size=0, max_size=40), min_size=1, max_size=8)
STYLES = st.sampled_from(["orjson", "ascii", "slash", "uall"])


def _session_bytes(texts: list[str], style: str, seed: int) -> bytes:
    rng = random.Random(seed)
    sb = SessionBuilder()
    for i, text in enumerate(texts):
        kind = i % 4
        if kind == 0:
            sb.user(text)
        elif kind == 1:
            sb.assistant(text, thinking=text[::-1], tool_calls=[(f"c{i}", "bash", {"command": text, text: 1})])
        elif kind == 2:
            sb.tool_result(f"c{i - 1}", "bash", text)
        else:
            sb.message({"role": "bashExecution", "command": text, "output": text, "exitCode": 1})
    lines = [_encode(sb.header, style, rng)] + [_encode(e, style, rng) for e in sb.entries]
    return "".join(line + "\n" for line in lines).encode("utf-8", "surrogatepass")


def _all_matches(source: Any, pattern: str, ignore_case: bool, fixed: bool) -> tuple[list[tuple], bool]:
    page = grep(
        source, GrepQuery.of(pattern, ignore_case=ignore_case, fixed=fixed), max_count=100_000, max_chars=10_000_000
    )
    assert page.next_cursor is None
    return [(m.entry_id, m.line.number, m.line.section, m.line.text) for m in page.matches], page.prefiltered


def _pattern_forms(literal: str) -> st.SearchStrategy[tuple[str, bool]]:
    escaped = regex.escape(literal)
    return st.sampled_from(
        [
            (literal, True),
            (escaped, False),
            (f"^{escaped}", False),
            (f"{escaped}$", False),
            (f"{escaped}|zzq", False),
            (f"{escaped}.*a", False),
            (f"{escaped}[ab]", False),
            (f"{escaped}(x|y)?", False),
            (f"ENTRY.*{escaped}", False),
            (f"{escaped}+", False),
            (f"command: {escaped}", False),  # spans a decorated prefix
            (f"\\$ {escaped}", False),
            (f"{escaped}: 1", False),
        ]
    )


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    texts=SESSION_TEXTS,
    style=STYLES,
    seed=st.integers(0, 1000),
    pick=st.data(),
    ignore_case=st.booleans(),
)
def test_prefilter_never_changes_the_matches(texts, style, seed, pick, ignore_case) -> None:
    data = _session_bytes(texts, style, seed)
    source = pick.draw(st.sampled_from(texts))
    start = pick.draw(st.integers(0, max(len(source) - 1, 0)))
    literal = source[start : start + pick.draw(st.integers(1, 6))] or pick.draw(
        st.text(alphabet=ALPHABET, min_size=1, max_size=3)
    )
    pattern, fixed = pick.draw(_pattern_forms(literal))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.jsonl"
        path.write_bytes(data)
        on_file = build_transcript(load_session(path))
        in_memory = build_transcript(load_session_bytes(data))  # no file: nothing to prefilter
        expected, unfiltered = _all_matches(in_memory, pattern, ignore_case, fixed)
        got, _ = _all_matches(on_file, pattern, ignore_case, fixed)
    assert not unfiltered
    assert got == expected


def test_prefilter_is_used_for_plain_literals(tmp_path: Path) -> None:
    sb = SessionBuilder()
    sb.user("the needle is here")
    sb.user("nothing")
    transcript = build_transcript(load_session(sb.write(tmp_path / "s.jsonl")))
    page = grep(transcript, "needle")
    assert page.prefiltered and len(page.matches) == 1
    assert grep(transcript, GrepQuery.of("NEEDLE", ignore_case=True)).prefiltered
    assert grep(transcript, r"\w+dle").prefiltered  # "dle" is required
    assert grep(transcript, r"\w+").prefiltered  # no literal: the raw search runs the pattern itself (rawregex)
    assert not grep(transcript, r"(\w)\1").prefiltered  # a backreference: nothing to search the raw bytes for


def test_escaped_ascii_is_found(tmp_path: Path) -> None:
    """A writer that escapes printable ASCII (``\\u0061``) still has its text found."""
    sb = SessionBuilder()
    sb.user("findme please")
    data = sb.to_bytes().replace(b"findme", b"fin\\u0064me")
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    transcript = build_transcript(load_session(path))
    census = take_census(data)
    assert "d" in census.escaped_ascii
    page = grep(transcript, "findme")
    assert page.prefiltered and [m.line.text for m in page.matches] == ["findme please"]
    filt = build_raw_filter(["findme"], data, ignore_case=False, census=census)
    assert filt is not None and filt.find_from(data, 0) > 0


def test_kelvin_sign_matches_k_case_insensitively(tmp_path: Path) -> None:
    sb = SessionBuilder()
    entry = sb.user("temperature 300 \u212a")
    sb.user("plain")
    transcript = build_transcript(load_session(sb.write(tmp_path / "s.jsonl")))
    page = grep(transcript, GrepQuery.of("300 k", ignore_case=True))
    assert [m.entry_id for m in page.matches] == [entry]


def test_dotless_i_matches_capital_i_case_insensitively(tmp_path: Path) -> None:
    """The pattern "I" matches U+0131 under IGNORECASE (and "i" does not), also when the pattern is searched
    with the literal prefilter (``\\p{L}`` keeps it from the RE2 form)."""
    sb = SessionBuilder()
    entry = sb.user("dotless \u0131z here")
    sb.user("other")
    transcript = build_transcript(load_session(sb.write(tmp_path / "s.jsonl")))
    for pattern in ("Iz", r"Iz\p{L}*"):
        page = grep(transcript, GrepQuery.of(pattern, ignore_case=True))
        assert page.prefiltered and [m.entry_id for m in page.matches] == [entry], pattern


def test_branch_that_runs_backwards_through_the_file(tmp_path: Path) -> None:
    """A duplicate id (the later one wins, as in Pi) can put a parent after its child in the file."""
    lines = [
        {"type": "session", "version": 3, "id": "s", "cwd": "/"},
        {"type": "message", "id": "p1", "parentId": None, "message": {"role": "user", "content": "old parent"}},
        {"type": "message", "id": "c1", "parentId": "p1", "message": {"role": "user", "content": "child needle"}},
        {"type": "message", "id": "p1", "parentId": None, "message": {"role": "user", "content": "parent needle"}},
        {"type": "label", "id": "l1", "parentId": "c1", "targetId": "c1", "label": "x"},
    ]
    path = tmp_path / "dup.jsonl"
    path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    transcript = build_transcript(load_session(path))
    assert [e.line for e in transcript.entries] == [4, 3, 5]
    page = grep(transcript, "needle")
    assert page.prefiltered
    assert [(m.entry_id, m.line.text) for m in page.matches] == [("p1", "parent needle"), ("c1", "child needle")]
