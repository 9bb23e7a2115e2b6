"""Limits users set: the regex time limit (NaN refused, huge values mean no limit, a runaway pattern stopped within
the limit in all: the joined and single-line searches share it; checked by the timeouts handed to ``regex``, never
by timing) and ages for --since."""

from __future__ import annotations

import math
from typing import Any

import pytest

from pi_compact.errors import PatternError, UsageError
from pi_compact.search.matching import NO_LIMIT, Searcher, SlowJoin, regex_timeout


@pytest.mark.parametrize("bad", [math.nan, 0.0, -1.0, -math.inf])
def test_nan_zero_and_negative_are_refused(bad: float) -> None:
    with pytest.raises(UsageError, match="--regex-timeout"):
        regex_timeout(bad)
    with pytest.raises(UsageError):
        Searcher("x", False, False, bad)


@pytest.mark.parametrize("huge", [math.inf, 1e308, NO_LIMIT])
def test_huge_values_mean_no_limit(huge: float) -> None:
    assert regex_timeout(huge) is None
    searcher = Searcher("b+", False, False, huge)
    assert searcher.search("abbbc") is not None  # regex refuses such timeouts itself; no limit works
    assert searcher.search_joined("a\nbb") is not None


class Recorder:
    """Stands in for a compiled pattern: records each timeout it is given; times out when told to."""

    def __init__(self, slow: bool) -> None:
        self.slow = slow
        self.timeouts: list[float | None] = []

    def search(self, text: str, pos: int = 0, timeout: float | None = None) -> Any:
        self.timeouts.append(timeout)
        if self.slow:
            raise TimeoutError
        return None


def test_a_runaway_pattern_gets_the_limit_in_all_not_join_plus_line() -> None:
    searcher = Searcher("(a|aa)+$", False, False, 2.0)
    joined, line = Recorder(slow=True), Recorder(slow=True)
    searcher.joined, searcher.compiled = joined, line
    with pytest.raises(SlowJoin):
        searcher.search_joined("aaaa\nbbbb")
    with pytest.raises(PatternError, match="more than 2s"):
        searcher.search("aaaa")
    assert joined.timeouts[0] is not None and line.timeouts[0] is not None
    assert joined.timeouts[0] + line.timeouts[0] == pytest.approx(2.0)


def test_after_a_join_in_time_each_line_gets_the_whole_limit() -> None:
    searcher = Searcher("x", False, False, 2.0)
    searcher.joined, searcher.compiled = Recorder(slow=True), Recorder(slow=False)
    with pytest.raises(SlowJoin):
        searcher.search_joined("a")
    searcher.joined = Recorder(slow=False)
    searcher.search_joined("a")
    searcher.search("a")
    assert searcher.compiled.timeouts == [2.0]


@pytest.mark.parametrize("age", ["99999999d", "99999999999999999999999w", "1" + "0" * 40 + "s"])
def test_an_age_beyond_year_one_is_a_usage_error(age: str) -> None:
    from pi_compact.errors import UsageError
    from pi_compact.search.pages import parse_time

    with pytest.raises(UsageError, match="before the year 1"):
        parse_time(age)


def test_the_limits_are_cpu_time_the_clock_regex_counts_on() -> None:
    """``regex`` counts its timeout in the process's CPU time; the budget of a search is summed on the same clock
    (a busy machine makes a search slower by the wall clock, never fail sooner)."""
    import time

    from pi_compact.search.matching import CPU_CLOCK

    assert CPU_CLOCK is time.process_time
    assert Searcher("x", False, False, 2.0).clock is time.process_time


def test_time_the_clock_does_not_count_is_not_taken_from_the_budget() -> None:
    """With a CPU clock that does not move (the process waited, others ran), any number of searches fits in a
    budget of a millisecond, and every call gets the whole per-line limit."""
    searcher = Searcher("x", False, False, 2.0, 0.001, clock=lambda: 42.0)
    line = Recorder(slow=False)
    searcher.compiled = line
    for _ in range(1000):
        searcher.search("a line")
    assert searcher.spent == 0.0
    assert line.timeouts == [0.001] * 1000  # the budget left is smaller than a line's limit: it is what is given


def test_the_timeout_message_and_help_say_cpu_time() -> None:
    searcher = Searcher("(a|aa)+$", False, False, 2.0)
    searcher.joined, searcher.compiled = Recorder(slow=True), Recorder(slow=True)
    with pytest.raises(PatternError, match=r"took more than 2s on one line \(CPU time;"):
        searcher.search("aaaa")
    from tests.helpers.cli import run

    help_text = " ".join(run("grep", "--help").stdout.split())
    assert "Seconds of CPU time the pattern may spend on one line" in help_text
    assert "Seconds of CPU time the pattern may spend matching in the whole search" in help_text
