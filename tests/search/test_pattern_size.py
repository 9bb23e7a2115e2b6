"""Patterns that would cost too much: one whose counted repeats would fill memory when ``regex`` compiles it is
refused before it is compiled (``search.patternsize``), and a search that spends its whole budget matching stops
with an error, from the CLI and from the recovery tools alike.

Nothing here is timed: a too-large pattern is refused before ``regex.compile`` is called (checked by making that
call fail), and the budget is checked with an injected clock, or with a pattern that would run for hours on every
line and a budget so small that only it can stop the search."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest
import regex

from pi_compact.errors import PatternError
from pi_compact.lookup.tools import call_tool
from pi_compact.search import DEFAULT_LIMITS, grep
from pi_compact.search import patternsize as P
from pi_compact.search.matching import Searcher, compile_pattern, search_budget
from pi_compact.search.transcript import build_transcript
from pi_compact.session.load import load_session, load_session_bytes
from tests.helpers.cli import run
from tests.helpers.sessions import SessionBuilder

HUGE = "(?:a{65535}){65535}"  # 4.3 billion characters written out: tens of gigabytes to compile


@pytest.fixture
def no_huge_compile(monkeypatch: pytest.MonkeyPatch) -> None:
    """``regex.compile`` of a pattern with a count of 65535 fails the test instead of filling memory."""
    real = regex.compile

    def guarded(pattern: Any, *args: Any, **kwargs: Any) -> Any:
        assert "65535" not in str(pattern), "a too-large pattern reached regex.compile"
        return real(pattern, *args, **kwargs)

    monkeypatch.setattr(regex, "compile", guarded)


@pytest.mark.parametrize(
    ("pattern", "size"),
    [
        ("abc", 3),
        ("a{1000}", 1000),
        ("(?:ab){10}c", 21),
        ("[a-z0-9_]{100}", 100),  # a class is one character, however many it holds
        (r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", 36),
        ("(?:a{10}){10}", 100),  # nested counts multiply
        ("(?:(?:a{10}){10}){10}", 1000),
        ("a{2,50}", 50),  # the upper count
        ("a{50,}", 50),  # no upper count: the lower one
        ("(?:a+){1000}", 1000),  # + and * are loops: once
        ("(?:a|bb){10}", 30),  # an alternation: every branch
        ("(?(1)a{100}|b){10}", 1010),
        (r"(?=a{100})b", 101),
    ],
)
def test_expanded_size_writes_out_every_counted_repeat(pattern: str, size: int) -> None:
    assert P.expanded_size(pattern, regex.VERSION0) == size


@pytest.mark.parametrize(
    "pattern",
    [
        HUGE,
        "(?:a{1000}){1000}",
        "(?:a{0,1000}){0,1000}",
        "(?:abc){40000}",
        "(?i)(?:x{400}){400}",  # an inline flag does not hide it
        "(?x)(?:a{1000}  # a comment with a ) in it\n ){1000}",  # nor verbose mode and its comments
        "(?:(?:a{100}){100}){11}",
        "(?:a{100}){600}|(?:b{100}){600}",  # branches add up
        "(?(1)a{1000}|b){1000}",  # nor a conditional
        "(?=(?:a{1000}){1000})",  # nor a lookahead
        "a{100001}",
    ],
)
def test_a_pattern_that_expands_past_the_limit_is_refused_before_it_is_compiled(
    pattern: str, no_huge_compile: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(regex, "compile", _never)
    with pytest.raises(PatternError, match=r"too large: written out, its repeats come to more than 100,000"):
        compile_pattern(pattern)
    with pytest.raises(PatternError, match=r"more than 100,000"):
        Searcher(pattern, False, False, 2.0)


def _never(*args: Any, **kwargs: Any) -> Any:
    raise AssertionError("regex.compile was called")


def test_the_limit_itself_is_allowed() -> None:
    P.check_size("a{100000}")
    P.check_size("(?:ab){50000}")
    with pytest.raises(PatternError):
        P.check_size("a{100000}b")


def test_a_pattern_longer_than_the_limit_is_refused_unparsed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(P, "_parse", _never)
    monkeypatch.setattr(regex, "compile", _never)
    long = "x" * (P.MAX_EXPANDED + 1)
    for fixed in (False, True):
        with pytest.raises(PatternError, match=r"too long: more than 100,000 characters") as caught:
            compile_pattern(long, fixed=fixed)
        assert len(str(caught.value)) < 300  # the message shows the start of the pattern, not all of it


def test_errors_of_the_pattern_are_still_regexs_own() -> None:
    with pytest.raises(PatternError, match="missing \\)"):
        compile_pattern("(a{5}")
    with pytest.raises(PatternError, match="maximum recursion"):
        compile_pattern("(" * 5000 + ")" * 5000)


def test_without_regexs_parser_a_coarser_bound_from_the_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """Should regex's private parser change, every count in the text multiplies: never less than the real size."""

    def changed(pattern: str, flags: int) -> Any:
        raise AttributeError("module 'regex._regex_core' has no attribute 'Source'")

    monkeypatch.setattr(P, "_parse", changed)
    P._measured.cache_clear()
    try:
        assert P.expanded_size("(?:a{1000}){1000}") > P.MAX_EXPANDED
        assert P.expanded_size("a{3}b{3}") == 8 * 3 * 3
        compile_pattern(r"\d{4}-\d{2}-\d{2}")
    finally:
        P._measured.cache_clear()


def test_grep_from_the_cli_refuses_it_with_exit_2(tmp_path: Path, no_huge_compile: None) -> None:
    sb = SessionBuilder()
    sb.user("a" * 100)
    path = sb.write(tmp_path / "s.jsonl")
    result = run("grep", path, HUGE)
    assert result.code == 2 and result.stdout_bytes == b""
    assert "too large" in result.stderr and "100,000" in result.stderr
    assert "internal error" not in result.stderr


def test_patterns_small_enough_alone_are_refused_together(tmp_path: Path) -> None:
    sb = SessionBuilder()
    sb.user("a" * 100)
    path = sb.write(tmp_path / "s.jsonl")
    half = "(?:a{60000}){1}"  # 60,000: allowed alone
    assert run("grep", path, half, "-c").code == 1
    result = run("grep", path, "-e", half, "-e", half.replace("a", "b"))  # 120,000 in all
    assert result.code == 2 and "too large" in result.stderr and "internal error" not in result.stderr


def test_context_grep_returns_the_refusal_as_the_tools_error(tmp_path: Path, no_huge_compile: None) -> None:
    sb = SessionBuilder()
    sb.user("a" * 100)
    path = sb.write(tmp_path / "s.jsonl")
    result = run("pi", "tool", "context_grep", path, "--args", orjson.dumps({"pattern": HUGE}).decode())
    assert result.code == 2, result.stderr
    assert "too large" in result.stderr and "internal error" not in result.stderr
    with pytest.raises(PatternError, match="too large"):
        call_tool(build_transcript(load_session(path)), "grep", {"pattern": HUGE})


# ---------------------------------------------------------------------------------------------------------------
# The budget of one search


class Clock:
    """A clock that moves on by ``step`` seconds every time it is read (twice a regex call: the call costs ``step``)."""

    def __init__(self, step: float) -> None:
        self.now = 0.0
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


class Recorder:
    """Stands in for a compiled pattern: records each timeout it is given; times out when told to."""

    def __init__(self, slow: bool = False) -> None:
        self.slow = slow
        self.timeouts: list[float | None] = []

    def search(self, text: str, pos: int = 0, timeout: float | None = None) -> Any:
        self.timeouts.append(timeout)
        if self.slow:
            raise TimeoutError
        return None


def test_the_budget_defaults_to_ten_lines_worth_and_is_checked_like_the_line_limit() -> None:
    assert search_budget(2.0, None) == 20.0
    assert search_budget(2.0, 5.0) == 5.0
    assert search_budget(1e6, None) is None  # no limit per line, none in all unless asked
    assert search_budget(1e6, 30.0) == 30.0
    for bad in (float("nan"), 0.0, -1.0):
        with pytest.raises(Exception, match="--search-timeout"):
            search_budget(2.0, bad)


def test_a_pattern_slow_on_every_line_stops_when_the_budget_is_spent() -> None:
    searcher = Searcher("x", False, False, 2.0, 4.5, clock=Clock(1.0))  # each call costs 1 s
    line = Recorder()
    searcher.compiled = line
    for _ in range(5):
        searcher.search("a line")
    with pytest.raises(PatternError, match=r"took more than 4\.5s in all, over 6 searches"):
        searcher.search("a line")
    assert line.timeouts == [2.0, 2.0, 2.0, 1.5, 0.5]  # a call gets only what is left of the budget
    assert searcher.spent == pytest.approx(5.0)


def test_a_timeout_within_the_budget_is_the_lines_own_and_one_past_it_the_searchs() -> None:
    searcher = Searcher("x", False, False, 2.0, 2.5, clock=Clock(1.0))
    searcher.compiled = Recorder(slow=True)
    with pytest.raises(PatternError, match="on one line"):
        searcher.search("a")  # 2 s given, 2.5 s left
    with pytest.raises(PatternError, match="in all"):
        searcher.search("a")  # 1.5 s left, less than a line's 2 s: the budget is what stops it
    joined = Searcher("x", False, False, 2.0, 0.25, clock=Clock(0.0))
    joined.joined = Recorder(slow=True)
    with pytest.raises(PatternError, match="in all"):  # not SlowJoin: there is no time left for single lines
        joined.search_joined("a\nb")


def _slow_session(entries: int) -> SessionBuilder:
    sb = SessionBuilder()
    for _ in range(entries):
        sb.user("a" * 40 + "!")  # (a|a)+$ takes 2^40 steps on each: hours
    return sb


def test_grep_over_many_entries_stops_at_the_budget_not_after_each_lines_limit() -> None:
    transcript = build_transcript(load_session_bytes(_slow_session(200).to_bytes()))
    limits = replace(DEFAULT_LIMITS, regex_timeout=60.0, search_timeout=0.05)
    with pytest.raises(PatternError, match=r"took more than 0\.05s in all"):
        grep(transcript, "(a|a)+$", limits=limits)
    with pytest.raises(PatternError, match=r"took more than 0\.05s in all"):
        call_tool(transcript, "grep", {"pattern": "(a|a)+$"}, limits)


def test_grep_search_timeout_from_the_cli(tmp_path: Path) -> None:
    path = _slow_session(200).write(tmp_path / "slow.jsonl")
    for extra in ([], ["-c"]):
        result = run("grep", path, "(a|a)+$", "--regex-timeout", "60", "--search-timeout", "0.05", *extra)
        assert result.code == 2 and "took more than 0.05s in all" in result.stderr, result.stderr
    bad = run("grep", path, "a", "--search-timeout", "nan")
    assert bad.code == 2 and "--search-timeout must be a positive number" in bad.stderr
