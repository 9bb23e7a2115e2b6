"""What ``grep`` finds: the matching lines with their context (``GrepLine``, ``GrepMatch``), a page of them
(``GrepPage``) or a stream (``GrepStream``), the counts per entry of ``-c``/``-l`` (``GrepCounts``), and the JSON of
each; ``grepping`` searches, this module holds the results."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import NotRequired, TypedDict

from pi_compact.search.pages import EntryInfo, EntryInfoJSON, clean_text


class GrepLineJSON(TypedDict):
    """``GrepLine.to_json()``: a matching line (``submatches`` only when something matched in it) or a context
    line."""

    line_number: int
    section: str
    text: str
    offset: int
    length: int
    truncated: bool
    submatches: NotRequired[list[dict[str, int]]]


class _MatchEntryJSON(TypedDict):
    entry_id: str
    entry_type: str
    role: str | None
    timestamp: str | None
    branch: str | None
    on_branch: bool


class GrepMatchJSON(_MatchEntryJSON, GrepLineJSON):
    """``GrepMatch.to_json()``: the entry, then its line, then the context lines (a ``grep --json`` match)."""

    before: list[GrepLineJSON]
    after: list[GrepLineJSON]


class GrepSummaryJSON(TypedDict):
    """How a grep page ended (``GrepPage``, ``GrepStream``, ``GrepCounts``): the ``summary`` record."""

    pattern: str
    patterns: list[str]
    invert: bool
    matches: int
    entries_searched: int
    complete: bool
    stopped_by: str | None
    next_cursor: str | None


class EntryCountJSON(EntryInfoJSON):
    """``EntryCount.to_json()``: an entry, as ``list`` shows it, and its number of selected lines."""

    count: int


@dataclass(frozen=True, slots=True)
class GrepLine:
    """One rendered line (a match or its context), attributed by the index."""

    number: int  # 1-based line within the entry's rendering (as ``show`` numbers it)
    section: str
    text: str  # the line, or a window of it when it is longer than Limits.line_chars
    offset: int  # where ``text`` starts in the full line (characters)
    length: int  # characters in the full line
    submatches: tuple[tuple[int, int], ...] = ()  # (start, end) in ``text``

    @property
    def truncated(self) -> bool:
        return self.offset > 0 or self.offset + len(self.text) < self.length

    def display(self) -> str:
        """The text with "…" where the full line goes on."""
        text = clean_text(self.text)
        return ("…" if self.offset > 0 else "") + text + ("…" if self.offset + len(self.text) < self.length else "")

    def to_json(self) -> GrepLineJSON:
        out: GrepLineJSON = {
            "line_number": self.number,
            "section": self.section,
            "text": clean_text(self.text),
            "offset": self.offset,
            "length": self.length,
            "truncated": self.truncated,
        }
        if self.submatches:
            out["submatches"] = [{"start": s, "end": e} for s, e in self.submatches]
        return out


@dataclass(frozen=True, slots=True)
class GrepMatch:
    entry_id: str
    entry_type: str
    role: str | None
    timestamp: str | None
    branch: str | None
    on_branch: bool
    line: GrepLine
    before: tuple[GrepLine, ...] = ()
    after: tuple[GrepLine, ...] = ()

    def to_json(self) -> GrepMatchJSON:
        return {
            "entry_id": self.entry_id,
            "entry_type": self.entry_type,
            "role": self.role,
            "timestamp": self.timestamp,
            "branch": self.branch,
            "on_branch": self.on_branch,
            **self.line.to_json(),
            "before": [c.to_json() for c in self.before],
            "after": [c.to_json() for c in self.after],
        }


@dataclass(frozen=True, slots=True)
class GrepPage:
    pattern: str
    matches: tuple[GrepMatch, ...]
    next_cursor: str | None
    entries_searched: int  # entries looked at for this page
    stopped_by: str | None  # "max_count" or "max_chars" when there is a next page
    prefiltered: bool  # raw bytes were searched first (an implementation detail, for benchmarks)
    context: int = 0  # the -C asked for
    patterns: tuple[str, ...] = ()  # every pattern given (-e), when more than one
    invert: bool = False  # -v: the "matches" are the lines that do not match

    def to_json(self) -> GrepSummaryJSON:
        return {
            "pattern": self.pattern,
            "patterns": list(self.patterns or (self.pattern,)),
            "invert": self.invert,
            "matches": len(self.matches),
            "entries_searched": self.entries_searched,
            "complete": self.next_cursor is None,
            "stopped_by": self.stopped_by,
            "next_cursor": self.next_cursor,
        }

    def text_lines(self) -> Iterator[str]:
        """grep's plain format: ENTRY:SECTION:LINE:TEXT for matches, ENTRY-SECTION-LINE-TEXT for context lines,
        "--" between groups that do not touch; an entry off the current branch is ENTRY@LEAF."""
        return grep_text_lines(self.matches, self.context)


def grep_text_lines(matches: Iterable[GrepMatch], context: int) -> Iterator[str]:
    """``GrepPage.text_lines`` for matches as they come (a page or a ``GrepStream``)."""
    last_entry: str | None = None
    last_line = -1
    for match in matches:
        entry = match.entry_id if match.on_branch else f"{match.entry_id}@{match.branch or '?'}"
        first = match.before[0].number if match.before else match.line.number
        if context and last_entry is not None and not (entry == last_entry and first == last_line + 1):
            yield "--"
        for line in match.before:
            yield f"{entry}-{line.section}-{line.number}-{line.display()}"
        yield f"{entry}:{match.line.section}:{match.line.number}:{match.line.display()}"
        for line in match.after:
            yield f"{entry}-{line.section}-{line.number}-{line.display()}"
        last_entry = entry
        last_line = match.after[-1].number if match.after else match.line.number


class GrepStream:
    """One grep page whose matches are handed out as they are found, so the first is printed before the last is
    searched for and memory does not grow with the page: iterate ``matches`` once; afterwards ``count``,
    ``next_cursor``, ``stopped_by`` and ``entries_searched`` say how the page ended (``grep`` collects it)."""

    def __init__(
        self,
        pattern: str,
        patterns: tuple[str, ...],
        context: int,
        invert: bool,
        prefiltered: bool,
        cursor_at: Callable[[tuple[int, int]], str],
    ) -> None:
        self._matches: Iterator[GrepMatch] = iter(())
        self.cursor_at = cursor_at  # the cursor that resumes at (entry position, line index)
        self.pattern = pattern
        self.patterns = patterns
        self.context = context
        self.invert = invert
        self.prefiltered = prefiltered
        self.count = 0
        self.next_cursor: str | None = None
        self.stopped_by: str | None = None
        self.entries_searched = 0

    @property
    def matches(self) -> Iterator[GrepMatch]:
        for match in self._matches:
            self.count += 1
            yield match

    def text_lines(self) -> Iterator[str]:
        return grep_text_lines(self.matches, self.context)

    def wrap(self, around: Callable[[Iterator[GrepMatch]], Iterator[GrepMatch]]) -> None:
        """Pass the matches through ``around`` before they are handed out (the CLI stops its spinner there)."""
        self._matches = around(self._matches)

    def to_json(self) -> GrepSummaryJSON:
        """The summary record, as ``GrepPage.to_json`` gives it (after the matches were iterated)."""
        return {
            "pattern": self.pattern,
            "patterns": list(self.patterns or (self.pattern,)),
            "invert": self.invert,
            "matches": self.count,
            "entries_searched": self.entries_searched,
            "complete": self.next_cursor is None,
            "stopped_by": self.stopped_by,
            "next_cursor": self.next_cursor,
        }


@dataclass(frozen=True, slots=True)
class EntryCount:
    """An entry with lines selected by grep, and how many (``grep -c``, ``grep -l``)."""

    info: EntryInfo
    count: int

    def to_json(self) -> EntryCountJSON:
        return {**self.info.to_json(), "count": self.count}


@dataclass(frozen=True, slots=True)
class GrepCounts:
    """``grep -c`` / ``grep -l``: the entries with selected lines, and the summary ``grep`` gives."""

    pattern: str
    patterns: tuple[str, ...]
    invert: bool
    entries: tuple[EntryCount, ...]
    entries_searched: int

    def to_json(self) -> GrepSummaryJSON:
        """The summary record: the keys of ``GrepPage.to_json`` (never paged, so always complete)."""
        return {
            "pattern": self.pattern,
            "patterns": list(self.patterns),
            "invert": self.invert,
            "matches": sum(item.count for item in self.entries),
            "entries_searched": self.entries_searched,
            "complete": True,
            "stopped_by": None,
            "next_cursor": None,
        }
