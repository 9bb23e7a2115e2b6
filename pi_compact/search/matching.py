"""Matching a pattern against the transcript fast without changing what matches.

Two shortcuts, each proven equivalent by the tests (tests/search/test_prefilter.py, test_rawregex.py,
test_line_search.py):

* ``Candidates``: an entry is rendered only if its raw JSON line holds a literal every match needs (any JSON
  encoding of it, see ``prefilter``) or matches the pattern's raw form (``rawregex``), or one of its decorated
  lines (header, markers, ``key: value``) matches, where ``rawregex.decorated_safe`` cannot rule that out;
* ``matching_lines``: an entry's lines are searched joined with "\\n" and only lines where a joined match starts
  are searched alone, which saves the per-call cost of the regex timeout on every other line.

Every regex call carries a timeout, and one search a budget for all of them, so a catastrophic pattern ends in
PatternError instead of a hang. Both are CPU time: ``regex`` counts its timeout in the process's CPU time (C's
``clock()``), and the budget is summed with ``time.process_time``, the same clock, so a machine busy with other work
makes a search take longer, not fail sooner (CPU_CLOCK). A pattern whose repeats would take too much memory to
compile is refused before ``regex`` sees it (``patternsize``).
"""

from __future__ import annotations

import math
import operator
import re
import time
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator
from itertools import accumulate
from typing import Any

from pi_compact.errors import PatternError, UsageError
from pi_compact.search import rawregex
from pi_compact.search.patternsize import check_size
from pi_compact.search.patternsize import compile_pattern as compile_pattern  # where it was first
from pi_compact.search.prefilter import (
    RawFilter,
    build_raw_filter,
    plain_literal_filter,
    required_literals,
    take_census,
)
from pi_compact.search.render import RenderedEntry, render_entry
from pi_compact.search.transcript import Transcript
from pi_compact.session.entries import Entry
from pi_compact.session.rawfile import FileBytes


def relaxed_search(tree: rawregex.Node) -> Callable[[str], Any]:
    """``search`` of a parsed pattern with its anchors and lookarounds dropped (``rawregex.relaxed_source``)."""
    import regex

    source = rawregex.relaxed_source(tree)
    check_size(source, regex.VERSION0)
    return regex.compile(source, regex.VERSION0).search  # type: ignore[no-any-return]


_NOT_JOINABLE = re.compile(r"\\[AZzG]|\(\?|[*+?}]\+")


def joinable(pattern: str, *, fixed: bool = False) -> bool:
    """Whether a line that matches implies a match somewhere in those lines joined with "\\n" (MULTILINE).

    True unless the pattern anchors to the string (``\\A \\Z \\z \\G``), uses inline flags or lookarounds
    (``(?``), or possessive quantifiers, which could behave differently next to a newline."""
    return fixed or _NOT_JOINABLE.search(pattern) is None


NO_LIMIT = 1e6  # a regex timeout at least this long (about 11 days) means no limit
# The clock ``regex`` measures its timeout on (the process's CPU time), and so the one the budget is summed on.
CPU_CLOCK: Callable[[], float] = time.process_time
SEARCH_FACTOR = 10  # one search may spend this many times the per-line limit matching, in all (--search-timeout)


def regex_timeout(seconds: float | None, flag: str = "--regex-timeout") -> float | None:
    """The timeout to give ``regex``: None for no limit (None, infinity or NO_LIMIT+); UsageError for NaN, zero
    or a negative number (NaN would silently disable the guard against runaway patterns)."""
    if seconds is None:
        return None
    if math.isnan(seconds) or seconds <= 0:
        raise UsageError(f"{flag} must be a positive number of seconds (got {seconds})")
    return None if seconds >= NO_LIMIT else float(seconds)


def search_budget(line: float | None, total: float | None) -> float | None:
    """The seconds one search may spend matching in all: ``total`` (checked like ``regex_timeout``), by default
    ``SEARCH_FACTOR`` times the per-line limit (None: no limit)."""
    if total is not None:
        return regex_timeout(total, "--search-timeout")
    per_line = regex_timeout(line)
    return None if per_line is None else per_line * SEARCH_FACTOR


class SlowJoin(Exception):
    """A joined search ran out of time; search line by line instead."""


class Searcher:
    """Matches one pattern against rendered lines, turning a runaway regex into PatternError.

    Two limits, in seconds of CPU time: ``timeout`` on one line, and ``total`` (``search_budget``) for the whole
    search, summed over every call, so that a pattern slow on each of many lines stops too. The time is read from
    ``clock`` around each call (``CPU_CLOCK``, the clock ``regex`` itself counts on), and each call's timeout is
    the smaller of the two limits left.

    ``regex``'s timeout costs a few microseconds per call, so whole entries (their lines joined) are searched
    first when that is equivalent (see ``joinable``), and single lines only within entries that match."""

    def __init__(
        self,
        pattern: str,
        ignore_case: bool,
        fixed: bool,
        timeout: float | None,
        total: float | None = None,
        *,
        clock: Callable[[], float] = CPU_CLOCK,
    ) -> None:
        self.timeout = regex_timeout(timeout)
        self.budget = search_budget(timeout, total)
        self.spent = 0.0  # seconds spent matching so far (with a budget)
        self.calls = 0
        self.clock = clock
        # A joined search gets a quarter of the time; when it runs out, single lines get what is left, so a runaway
        # pattern stops after ``timeout`` seconds in all, not after the join's time plus a line's.
        self.join_timeout = None if self.timeout is None else self.timeout / 4
        self.line_timeout = self.timeout
        self.compiled = compile_pattern(pattern, ignore_case=ignore_case, fixed=fixed)
        self.joined = (
            compile_pattern(pattern, ignore_case=ignore_case, fixed=fixed, multiline=True)
            if joinable(pattern, fixed=fixed)
            else None
        )
        self.pattern = pattern

    def _timed_out(self) -> PatternError:
        return PatternError(
            f"regular expression {self.pattern!r} took more than {self.timeout or 0:g}s on one line "
            "(CPU time; catastrophic backtracking?): simplify it, or use -F for a fixed string"
        )

    def _spent(self) -> PatternError:
        return PatternError(
            f"regular expression {self.pattern!r} took more than {self.budget or 0:g}s in all, over "
            f"{self.calls:,} searches of lines or entries (CPU time, the limit of one search, --search-timeout; "
            "catastrophic backtracking?): simplify it, or use -F for a fixed string"
        )

    def _run(self, call: Callable[[float | None], Any], limit: float | None, slow: Callable[[], Exception]) -> Any:
        """``call(timeout)`` with the smaller of ``limit`` and what is left of the search's budget; a timeout
        raises ``slow()``, or PatternError when it was the budget that ran out."""
        self.calls += 1
        if self.budget is None:
            try:
                return call(limit)
            except TimeoutError:
                raise slow() from None
        left = self.budget - self.spent
        if left <= 0:
            raise self._spent()
        by_budget = limit is None or left < limit
        start = self.clock()
        try:
            return call(left if by_budget else limit)
        except TimeoutError:
            raise (self._spent() if by_budget else slow()) from None
        finally:
            self.spent += self.clock() - start

    def search(self, text: str, pos: int = 0) -> Any:
        return self._run(lambda t: self.compiled.search(text, pos, timeout=t), self.line_timeout, self._timed_out)

    def search_joined(self, text: str, pos: int = 0) -> Any:
        """Search lines joined with "\\n"; SlowJoin if that takes longer than one line may (a huge entry, or a
        runaway pattern): the caller then goes line by line, where the timeout means what it says."""
        assert self.joined is not None, "only for joinable patterns"
        joined = self.joined
        found = self._run(lambda t: joined.search(text, pos, timeout=t), self.join_timeout, self._slow_join)
        self.line_timeout = self.timeout  # lines after a join in time get the whole limit again
        return found

    def _slow_join(self) -> SlowJoin:
        if self.timeout is not None and self.join_timeout is not None:
            self.line_timeout = self.timeout - self.join_timeout
        return SlowJoin()

    def spans(self, text: str, first: Any, stop: int) -> list[tuple[int, int]]:
        """Match spans starting at ``first`` and before ``stop``."""

        def collect(timeout: float | None) -> list[tuple[int, int]]:
            out: list[tuple[int, int]] = []
            for found in self.compiled.finditer(text, first.start(), timeout=timeout):
                if found.start() >= stop:
                    break
                out.append(found.span())
            return out

        spans: list[tuple[int, int]] = self._run(collect, self.timeout, self._timed_out)
        return spans


_BLOCK = 256
LineFilter = Callable[[RenderedEntry, int], bool]  # which lines of an entry may be selected
_UNRELIABLE_RAW = frozenset({"invalid-utf8", "deep-nesting"})


class Candidates:
    """Which entries can match: a raw-bytes prefilter plus, where needed, a check of the others' decorated lines.

    The raw bytes are searched for a literal every match needs (``prefilter``) or, for other patterns, with an
    over-approximation of the pattern on the JSON encoding (``rawregex``, RE2). An entry whose raw line has no hit
    can still match in a decorated line (``path: value``, a header or a marker when those are selected) unless
    ``rawregex.decorated_safe`` proves otherwise; when it cannot, those lines are rendered alone, a block of entries
    at a time, and searched together."""

    def __init__(
        self,
        transcript: Transcript,
        searcher: Searcher,
        pattern: str,
        ignore_case: bool,
        fixed: bool,
        synthetic: bool = True,
    ):
        self.transcript = transcript
        self.searcher = searcher
        self.data: bytes | FileBytes | None = None
        self.filter: RawFilter | None = None
        self.decorated = True  # entries without a raw hit have their decorated lines checked
        self.next_hit = -1
        self.last_start = 0
        self.blocks: dict[int, set[int]] = {}
        self._offsets: list[int] | None = None  # of the scope's entries (next_candidate); [] when not in file order
        self._unreliable_at: list[int] = []
        # Lines read with replacement characters or cut at depth: their raw bytes are not what is rendered.
        self.unreliable = {d.line for d in transcript.session.diagnostics if d.code in _UNRELIABLE_RAW}
        literals = required_literals(pattern, fixed=fixed)
        tree = rawregex.parse(pattern, fixed=fixed, ignore_case=ignore_case)
        if literals is None and tree is None:
            return
        data = transcript.raw_bytes()
        if data is None:
            return
        unusual = False  # the file escapes a control character unusually: decorated lines are checked
        if literals is not None and not ignore_case:
            self.filter = plain_literal_filter(literals)
        if self.filter is None and tree is not None:
            raw = rawregex.raw_pattern(tree, frozenset(), False)
            program = rawregex.compile_raw(raw)
            if program is not None:
                self.filter = RawFilter((), program, 0, rawregex.alphabet(tree).ascii)
        if self.filter is None and literals is not None:
            census = transcript.census if transcript.census is not None else take_census(data)
            transcript.census = census
            unusual = census.unusual_escapes
            self.filter = build_raw_filter(literals, data, ignore_case=ignore_case, census=census)
        self.data = data if self.filter is not None else None
        if self.filter is not None and tree is not None and not synthetic and not unusual:
            self.decorated = not rawregex.decorated_safe(tree, relaxed_search(tree))

    @property
    def active(self) -> bool:
        return self.filter is not None

    def _hit_from(self, start: int) -> int:
        """The first raw hit at or after ``start`` (past the end of the data when there is none)."""
        assert self.filter is not None and self.data is not None
        if start < self.last_start:
            # A branch normally runs forward through the file; a duplicate id can send it back. Start over.
            self.filter.reset()
            self.next_hit = -1
        self.last_start = start
        if self.next_hit < start:
            self.next_hit = self.filter.find_from(self.data, start)
            if self.next_hit < 0:
                self.next_hit = len(self.data) + 1
        return self.next_hit

    def raw_hit(self, entry: Entry) -> bool:
        if entry.line in self.unreliable:
            return True
        return self._hit_from(entry.offset) < entry.offset + entry.length

    def next_candidate(self, pos: int) -> int:
        """The first scope position from ``pos`` on whose entry may match, found from the raw hits alone when
        entries without one cannot match (no decorated lines to check) and the scope runs forward through the
        file; otherwise ``pos`` itself (ask ``may_match``)."""
        if self.filter is None or self.decorated or self._offsets == []:
            return pos
        if self._offsets is None:
            entries = self.transcript.entries
            if not self.unreliable and self._hit_from(0) > len(self.data or b""):
                return len(entries)  # no raw hit anywhere in the file: no entry's offsets are needed
            offsets = [e.offset for e in entries]
            if not all(map(operator.lt, offsets, offsets[1:])):
                self._offsets = []  # not in file order: searched entry by entry
                return pos
            self._offsets = offsets
            if self.unreliable:
                self._unreliable_at = [i for i, e in enumerate(entries) if e.line in self.unreliable]
        offsets, entries = self._offsets, self.transcript.entries
        n = len(offsets)
        k = bisect_left(self._unreliable_at, pos)
        limit = self._unreliable_at[k] if k < len(self._unreliable_at) else n
        while pos < limit:
            hit = self._hit_from(offsets[pos])
            at = bisect_right(offsets, hit) - 1
            if at < n and hit < offsets[at] + entries[at].length:
                return min(at, limit)
            pos = at + 1
        return limit

    def may_match(self, pos: int, entry: Entry) -> bool:
        """False only when no rendered line of the entry can match."""
        if not self.active or self.raw_hit(entry):
            return True
        if not self.decorated:
            return False
        block = pos // _BLOCK
        if block not in self.blocks:
            self.blocks[block] = self._decorated_matches(
                block * _BLOCK, min((block + 1) * _BLOCK, len(self.transcript))
            )
        return pos in self.blocks[block]

    def _decorated_matches(self, first: int, last: int) -> set[int]:
        entries = self.transcript.entries
        kept = self.transcript.session.decorated  # rendered by the loader before it dropped the body
        rendered = [
            kept.get(entries[i].index) or render_entry(entries[i], decorated_only=True).lines
            for i in range(first, last)
        ]
        if self.searcher.joined is None:
            return self._line_by_line(first, rendered)
        try:
            return self._joined(first, rendered)
        except SlowJoin:
            return self._line_by_line(first, rendered)

    def _line_by_line(self, first: int, rendered: list[tuple[str, ...]]) -> set[int]:
        return {first + k for k, lines in enumerate(rendered) if any(self.searcher.search(x) for x in lines)}

    def _joined(self, first: int, rendered: list[tuple[str, ...]]) -> set[int]:
        starts: list[int] = []
        size = 0
        for lines in rendered:
            starts.append(size)
            size += sum(len(x) for x in lines) + len(lines)
        text = "\n".join("\n".join(lines) for lines in rendered)
        found: set[int] = set()
        at = 0
        while at < len(text):
            hit = self.searcher.search_joined(text, at)
            if hit is None:
                break
            k = bisect_right(starts, hit.start()) - 1
            found.add(first + k)
            if k + 1 >= len(starts):
                break
            at = starts[k + 1]
        return found


def matching_lines(
    rendered: RenderedEntry, searcher: Searcher, keep: LineFilter | frozenset[str] | None, start: int
) -> Iterator[tuple[int, Any]]:
    """(line index, match) for each matching line from ``start`` on.

    When the pattern allows (``joinable``), the entry's lines are searched joined, and only lines where a joined
    match starts are searched on their own; a line without one cannot match on its own either."""
    if isinstance(keep, frozenset):  # a set of section names
        keep = _in_sections(keep)
    lines = rendered.lines
    if searcher.joined is None:
        yield from _line_by_line(rendered, searcher, keep, start)
        return
    text = "\n".join(lines)
    starts = list(accumulate((len(line) + 1 for line in lines[:-1]), initial=0))
    pos = starts[start] if start < len(starts) else len(text) + 1
    while pos <= len(text):
        try:
            hit = searcher.search_joined(text, pos)
        except SlowJoin:
            yield from _line_by_line(rendered, searcher, keep, bisect_right(starts, pos) - 1)
            return
        if hit is None:
            return
        index = bisect_right(starts, hit.start()) - 1
        if keep is None or keep(rendered, index):
            found = searcher.search(lines[index])
            if found is not None:
                yield index, found
        if index + 1 >= len(starts):
            return
        pos = starts[index + 1]


def _in_sections(sections: frozenset[str]) -> LineFilter:
    return lambda rendered, index: rendered.sections[index] in sections


def _line_by_line(
    rendered: RenderedEntry, searcher: Searcher, keep: LineFilter | None, start: int
) -> Iterator[tuple[int, Any]]:
    for index in range(start, len(rendered.lines)):
        if keep is not None and not keep(rendered, index):
            continue
        found = searcher.search(rendered.lines[index])
        if found is not None:
            yield index, found
