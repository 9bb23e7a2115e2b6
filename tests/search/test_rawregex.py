"""A pattern without a literal is searched in the raw bytes with RE2 and never loses a match: the raw pattern
matches every JSON encoding of what the pattern matches, and grep with it finds what a full render finds."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path
from typing import Any

import pytest
import regex
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_compact.search import grep
from pi_compact.search import rawregex as R
from pi_compact.search.decoration import grep_wants_decorated
from pi_compact.search.grepping import GrepQuery, grep_counts
from pi_compact.search.matching import relaxed_search
from pi_compact.search.prefilter import take_census
from pi_compact.search.transcript import build_transcript
from pi_compact.session.load import load_session, load_session_bytes
from pi_compact.session.rawfile import FileBytes
from tests.helpers.sessions import SessionBuilder
from tests.search.test_prefilter import _encode

UNSUPPORTED = [
    r"(\w)\1",  # a backreference
    r"(?i)abc",  # inline flags
    r"[[:alpha:]]",  # a POSIX class
    r"[a[b]]",  # a nested set
    r"a++",  # possessive
    r"(?>ab)",  # atomic
    r"\p{L}",
    r"\N{BULLET}",
    r"a{x}",  # "{" that is no quantifier
    r"\G",
    r"(a",
    r"a)",
    r"[ab",
]


@pytest.mark.parametrize("pattern", UNSUPPORTED)
def test_unfamiliar_syntax_is_not_parsed(pattern: str) -> None:
    assert R.parse(pattern) is None


@pytest.mark.parametrize(
    ("pattern", "safe"),
    [
        ("ENOENT", True),
        ("error|fail", True),
        (r"[a-z]+\d{7}q", True),
        (r"(?<!\w)(?:ENOENT)(?!\w)", True),  # -w
        (r"\bfoo\b", True),
        (".", False),  # can match the separators picompact writes
        (r"a\.b", False),
        ("command: ls", False),
        ("x*", False),  # matches the empty string
        ("tru", False),  # inside picompact's "true"
        ("output", False),  # "full output: ..."
        (r"\d+", False),  # a number or an index
        (r"1e5", False),
        ("q1", True),
        ("permission denied", True),  # a space inside: never one picompact writes
        (r"a, b \{x\}", True),
        (" denied", False),  # starts with a space: the one after "key:"
        ("l o", False),  # "full output"
        (r"\$ q", False),
        ("qx$", True),  # an anchor, not a dollar sign
        (r"\$", False),
        (r"\{\}", False),
        (r"q \{", True),
    ],
)
def test_decorated_safe(pattern: str, safe: bool) -> None:
    tree = R.parse(pattern)
    assert tree is not None
    assert R.decorated_safe(tree, relaxed_search(tree)) is safe


# -- property: the raw pattern matches every encoding of a match ----------------------------------------------------

ALPHABET = 'abkKsSqiI\u212a\u017f\u0130"\\/\t\n é🎉漢:.[]{}$,01 \u2028\x00\x1f\x7f'
ATOMS = [
    "a",
    "b",
    "q",
    "é",
    "🎉",
    ".",
    r"\d",
    r"\w",
    r"\s",
    r"\D",
    r"\W",
    r"\S",
    "[a-c]",
    "[^a]",
    r"[\x00-\x1f]",
    '"',
    r"\\",
    "/",
    r"\t",
    r"\n",
    "k",
    "K",
    "[é-🎉]",
    r"\.",
    ":",
    "(?:a|b)",
    "(a|é)",
    ": ",
    r"\[",
    r"\]",
    "1",
    "e",
]
QUANTS = ["", "", "", "*", "+", "?", "{2}", "{1,3}", "{0,2}?", "+?"]
WRAPS = ["{}", "^{}", "{}$", r"\b{}", r"{}\B", "(?<!x){}", "{}(?=a)", "(?:{})|zz", r"(?<!\w)(?:{})(?!\w)"]


@st.composite
def patterns(draw: Any) -> str:
    body = "".join(draw(st.sampled_from(ATOMS)) + draw(st.sampled_from(QUANTS)) for _ in range(draw(st.integers(1, 4))))
    return draw(st.sampled_from(WRAPS)).format(body)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    pattern=patterns(),
    text=st.text(alphabet=ALPHABET, min_size=0, max_size=20),
    ignore_case=st.booleans(),
    seed=st.integers(0, 1000),
)
def test_raw_pattern_matches_every_encoding(pattern: str, text: str, ignore_case: bool, seed: int) -> None:
    flags = regex.VERSION0 | (regex.IGNORECASE if ignore_case else 0)
    found = regex.compile(pattern, flags).search(text)
    tree = R.parse(pattern, ignore_case=ignore_case)
    assert tree is not None
    if found is None:
        return
    rng = random.Random(seed)
    for style in ("orjson", "ascii", "slash", "uall"):
        encoded = _encode(text, style, rng).encode("utf-8", "surrogatepass")
        census = take_census(encoded)
        program = R.compile_raw(R.raw_pattern(tree, census.escaped_ascii, census.escaped_slash))
        assert program is not None
        assert program.search(encoded) is not None, (style, encoded)


# -- property: grep with the raw prefilter equals grep rendering everything -----------------------------------------


def _session(texts: list[str], style: str, seed: int) -> bytes:
    rng = random.Random(seed)
    sb = SessionBuilder()
    for i, text in enumerate(texts):
        kind = i % 6
        if kind == 0:
            sb.user(text)
        elif kind == 1:
            args = {"command": text, text: 1, "n": [i, 2.5e20, True, None, {}], f"k\n{text}": {text: text}}
            sb.assistant(text, thinking=text[::-1], tool_calls=[(f"c{i}", text or "bash", args)])
        elif kind == 2:
            sb.tool_result(f"c{i - 1}", "bash", text)
        elif kind == 3:
            sb.message(
                {"role": "bashExecution", "command": text, "output": text, "exitCode": i, "fullOutputPath": text}
            )
        elif kind == 4:
            sb.other("label", targetId=text, label=text)
        else:
            sb.other("mystery", **{text or "x": [text, i], "flag": False})
    lines = [_encode(sb.header, style, rng)] + [_encode(e, style, rng) for e in sb.entries]
    return "".join(line + "\n" for line in lines).encode("utf-8", "surrogatepass")


def _matches(source: Any, pattern: str, **options: Any) -> tuple[list[tuple], bool]:
    page = grep(source, GrepQuery.of(pattern, **options), max_count=100_000, max_chars=10_000_000)
    assert page.next_cursor is None
    return [(m.entry_id, m.line.number, m.line.section, m.line.text) for m in page.matches], page.prefiltered


SECTION_CHOICES = [None, ["toolCall"], ["header"], ["meta"], ["bash", "meta"], ["text"]]


@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    texts=st.lists(st.text(alphabet=ALPHABET.replace("\n", ""), min_size=0, max_size=30), min_size=1, max_size=8),
    style=st.sampled_from(["orjson", "ascii", "slash", "uall"]),
    seed=st.integers(0, 1000),
    pattern=patterns(),
    ignore_case=st.booleans(),
    word=st.booleans(),
    sections=st.sampled_from(SECTION_CHOICES),
    decorated=st.booleans(),
)
def test_prefiltered_grep_equals_a_full_render(
    texts: list[str],
    style: str,
    seed: int,
    pattern: str,
    ignore_case: bool,
    word: bool,
    sections: list[str] | None,
    decorated: bool,
) -> None:
    data = _session(texts, style, seed)
    options = {"ignore_case": ignore_case, "word": word, "sections": sections}
    expected, unfiltered = _matches(build_transcript(load_session_bytes(data)), pattern, **options)
    assert not unfiltered
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.jsonl"
        path.write_bytes(data)
        decorate = (lambda entry: R_render(entry)) if decorated else None
        on_file = build_transcript(load_session(path, decorate=decorate))
        got, _ = _matches(on_file, pattern, **options)
        counts = grep_counts(on_file, GrepQuery.of(pattern, **options))
    assert got == expected
    assert sum(item.count for item in counts.entries) == len(expected)


TRICKY = [
    "q q",
    " q",
    "l o",
    "e q",
    "q, q",
    r"\$",
    r"\$ ",
    "{}",
    r"\{",
    "1 ",
    "k q",
    "q: q",
    r"\w: \w",
    r"command: \S",
    r"\d\]",
    r"s\.q",
    r"1: ",
    "e: tr",
    "null",
    "true",
    "alse",
    "full output: q",
    r"\$ q",
    r"\[1\]",
    r"2\.5e\+?20",
    "e20",
    "ENTRY",
    "mystery",
    r"\] ",
    r"n\w",
    r"u000a",
    r"\bq\b",
    "content",
    "id=",
    "ok$",
    r"^\[",
    "exit 3",
    "label",
]


@pytest.mark.parametrize("pattern", TRICKY)
@pytest.mark.parametrize("style", ["orjson", "uall"])
@pytest.mark.parametrize("sections", [None, ["header", "meta"]])
def test_tricky_patterns_on_a_rich_session(pattern: str, style: str, sections: list[str] | None) -> None:
    texts = ["q", "k\tq", "", "qq 1", "é q", "true", "a.b", "q"]
    data = _session(texts, style, 3)
    expected, _ = _matches(build_transcript(load_session_bytes(data)), pattern, sections=sections)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.jsonl"
        path.write_bytes(data)
        got, _ = _matches(build_transcript(load_session(path)), pattern, sections=sections)
    assert got == expected


def R_render(entry: Any) -> tuple[str, ...]:
    from pi_compact.search.render import render_entry

    return render_entry(entry, decorated_only=True).lines


def test_a_pattern_without_literal_is_prefiltered(tmp_path: Path) -> None:
    sb = SessionBuilder()
    hit = sb.user("order abc1234567q shipped")
    sb.user("nothing to see")
    sb.tool("bash", {"command": "ls", "timeout": 1234567})
    transcript = build_transcript(load_session(sb.write(tmp_path / "s.jsonl")))
    page = grep(transcript, r"[a-z]+\d{7}q")
    assert page.prefiltered
    assert [m.entry_id for m in page.matches] == [hit]
    assert not grep(transcript, r"(\w)\1").prefiltered  # a backreference: every entry rendered


def test_a_key_escaped_unusually_still_matches(tmp_path: Path) -> None:
    """``["a\\nzq"]`` is what grep shows for a key holding a newline; a file that writes the newline as
    ``\\u000A`` does not hold "nzq", so the decorated lines are checked."""
    sb = SessionBuilder()
    entry = sb.assistant("", tool_calls=[("c1", "bash", {"a\nzq": "v"})])
    data = sb.to_bytes()
    assert b'"a\\nzq"' in data
    path = tmp_path / "s.jsonl"
    path.write_bytes(data.replace(b'"a\\nzq"', b'"a\\u000Azq"'))
    transcript = build_transcript(load_session(path))
    assert [m.entry_id for m in grep(transcript, r"[n-z]zq").matches] == [entry]


def test_grep_wants_decorated_only_when_it_may_need_them() -> None:
    def wants(pattern: str, **flags: Any) -> bool:
        return grep_wants_decorated(GrepQuery.of(pattern, **flags))

    assert not wants("ENOENT")
    assert not wants(r"[a-z]+\d{7}q")
    assert not wants(".")  # every raw line matches: every entry is rendered anyway
    assert not wants("x", invert=True)
    assert wants("ENOENT", sections=["header"])
    assert wants(r"command: \w+q")
    assert wants(r"(\w)\1")
    assert wants('"role": *"user"')  # in one kind of line only: its decorated lines are worth keeping


def test_search_lines_equals_a_search_of_the_whole_bytes(tmp_path: Path) -> None:
    rng = random.Random(7)
    lines = [bytes(rng.choice(b"ab\\xq") for _ in range(rng.choice([0, 3, 40, 300]))) for _ in range(200)]
    data = b"\n".join(lines) + b"\n"
    path = tmp_path / "f"
    path.write_bytes(data)
    program = R.compile_raw(rb"a[bx]*q")
    assert program is not None
    for window in (1, 7, 64, 4096):
        fb = FileBytes(path, len(data), window)
        for start in [0, 5, 100, 1000, len(data) - 3, len(data)]:
            found = program.search(data, start)
            assert fb.search_lines(program, start) == (found.start() if found else -1)


def test_literal_and_census_searched_in_step_equal_a_search_of_the_whole_bytes(tmp_path: Path) -> None:
    """The literal and the census escapes are searched block by block; small blocks give the same hits."""
    from pi_compact.search.prefilter import plain_literal_filter

    rng = random.Random(11)
    pieces = [b"ab", b"zq", b"\\u0061", b"\\u007a", b"\\/", b"\\n", b"\\u000A", b"xx", b" "]
    lines = [b"".join(rng.choice(pieces) for _ in range(rng.choice([0, 2, 9, 60]))) for _ in range(300)]
    data = b"\n".join(lines) + b"\n"
    path = tmp_path / "f"
    path.write_bytes(data)
    starts = sorted(rng.sample(range(len(data)), 60))
    for literal in ("zq", "az", "x/"):
        expected = plain_literal_filter([literal])
        assert expected is not None
        want = [expected.find_from(data, start) for start in starts]
        for window in (1, 5, 64, 4096):
            got_filter = plain_literal_filter([literal])
            assert got_filter is not None
            fb = FileBytes(path, len(data), window)
            assert [got_filter.find_from(fb, start) for start in starts] == want, (literal, window)


def test_a_file_cut_short_while_searched_ends_the_search(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"abc\n" * 100)
    fb = FileBytes(path, 400, 16)
    program = R.compile_raw(rb"zz")
    assert program is not None
    path.write_bytes(b"abc\n" * 10)  # truncated after FileBytes was made for 400 bytes
    assert fb.search_lines(program, 0) == -1
    assert fb.search_block(program, 200) == (-1, 400)
