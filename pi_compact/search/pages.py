"""list_entries, grep and show_entry: bounded, paginated lookups over the raw branch.

These are the three tools a person (``picompact list/grep/show``) and a model (``picompact lookup``) use to
recover what compaction hid. All three take a Transcript (or a Branch/Session), never print, and return frozen
dataclasses with ``to_json()``. Every result is bounded (see ``Limits``) and carries a cursor that resumes exactly
where it stopped; following pages is cheap because positions are entry and line indices, not offsets to rescan.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from pi_compact.errors import CursorError, NotFoundError, PatternError, SessionError, UsageError
from pi_compact.search import rawregex
from pi_compact.search.cursor import Cursor, decode_cursor, query_digest
from pi_compact.search.matching import Candidates, Searcher, matching_lines, relaxed_search
from pi_compact.search.render import SECTIONS, RenderedEntry, entry_label, preview, safe_text
from pi_compact.search.selection import LineSelector, compose_pattern, inverted_lines
from pi_compact.search.transcript import Transcript, as_transcript
from pi_compact.session.entries import ENTRY_TYPES, MESSAGE_ROLES, Entry, JsonDict, Session
from pi_compact.session.tree import Branch, find_entry, not_found

Source = Transcript | Branch | Session


@dataclass(frozen=True, slots=True)
class Limits:
    """Default bounds on every result; the CLI documents them and the lookup model gets the same."""

    list_limit: int = 50  # entries per list page
    preview_chars: int = 100  # characters per list preview
    grep_max_count: int = 50  # matching lines per grep page
    grep_max_chars: int = 20_000  # characters of matched and context lines per grep page
    line_chars: int = 400  # characters shown of one long line (a window around the first match)
    max_context: int = 20  # largest -C accepted
    show_chars: int = 20_000  # characters per show page
    regex_timeout: float = 2.0  # seconds of CPU time one regex may spend on one line
    search_timeout: float | None = None  # CPU seconds one search may spend matching in all (None: 10 × regex_timeout)


DEFAULT_LIMITS = Limits()


# ---------------------------------------------------------------------------------------------------------------
# Shared pieces


@dataclass(frozen=True, slots=True)
class EntryInfo:
    """What list shows for one entry, and what grep/show say about the entry a line came from."""

    id: str
    type: str
    role: str | None
    timestamp: str | None
    preview: str
    size: int  # bytes of the entry's JSON line in the file
    line: int  # physical line in the file
    branch: str | None  # leaf id of the branch the entry is on
    on_branch: bool  # on the current branch (the one from the chosen leaf)

    def to_json(self) -> JsonDict:
        return {
            "id": self.id,
            "type": self.type,
            "role": self.role,
            "timestamp": self.timestamp,
            "preview": self.preview,
            "size": self.size,
            "line": self.line,
            "branch": self.branch,
            "on_branch": self.on_branch,
        }


def entry_info(transcript: Transcript, entry: Entry, preview_chars: int = DEFAULT_LIMITS.preview_chars) -> EntryInfo:
    return EntryInfo(
        id=entry_label(entry),
        type=entry.type,
        role=entry.role,
        timestamp=entry.timestamp,
        preview=preview(entry, preview_chars),
        size=entry.length,
        line=entry.line,
        branch=transcript.branch_leaf(entry),
        on_branch=transcript.on_branch(entry),
    )


def _clean(text: str) -> str:
    return safe_text(text)


def parse_time(text: str, now: datetime | None = None) -> datetime:
    """An ISO date/time (naive means UTC) or an age like ``90m``, ``2h``, ``3d``, ``1w`` before ``now``."""
    value = text.strip()
    match = re.fullmatch(r"(\d+)\s*([smhdw])", value)
    if match:
        unit = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days", "w": "weeks"}[match.group(2)]
        try:
            return (now or datetime.now(UTC)) - timedelta(**{unit: int(match.group(1))})
        except OverflowError:
            raise UsageError(f"--since {text!r} reaches back before the year 1: give a smaller age") from None
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        raise UsageError(f"--since {text!r}: use an ISO time (2025-11-20T10:00) or an age (30m, 2h, 7d)") from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def _entry_time(entry: Entry) -> datetime | None:
    ts = entry.timestamp
    if ts is None:
        return None
    try:
        parsed = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def check_roles(transcript: Transcript, roles: Iterable[str] | None) -> frozenset[str] | None:
    """Roles (message roles or entry types) to keep; a name nobody uses is a usage error, not an empty page."""
    if roles is None:
        return None
    wanted = frozenset(r.strip() for role in roles for r in role.split(",") if r.strip())
    if not wanted:
        return None
    known = set(MESSAGE_ROLES) | set(ENTRY_TYPES)
    known |= {e.type for e in transcript.session.entries} | {e.role for e in transcript.session.entries if e.role}
    unknown = sorted(wanted - known)
    if unknown:
        raise UsageError(f"unknown role {', '.join(unknown)} (roles: {', '.join(MESSAGE_ROLES)}; or an entry type)")
    return wanted


def _role_ok(entry: Entry, roles: frozenset[str] | None) -> bool:
    return roles is None or entry.type in roles or (entry.role is not None and entry.role in roles)


def _positive(name: str, value: int) -> int:
    if value < 1:
        raise UsageError(f"{name} must be at least 1 (got {value})")
    return value


# ---------------------------------------------------------------------------------------------------------------
# list


@dataclass(frozen=True, slots=True)
class EntryPage:
    entries: tuple[EntryInfo, ...]
    total: int  # entries in the scope that pass the filters
    next_cursor: str | None

    def to_json(self) -> JsonDict:
        return {
            "entries": [e.to_json() for e in self.entries],
            "total": self.total,
            "next_cursor": self.next_cursor,
        }

    def text_lines(self, with_branch: bool = False) -> Iterator[str]:
        """One plain line per entry: id, role or type, timestamp, size in bytes, [branch,] preview."""
        for info in self.entries:
            branch = ("current " if info.on_branch else f"{info.branch or '?'} ") if with_branch else ""
            yield (
                f"{info.id}  {info.role or info.type:<17} {info.timestamp or '-':<24} {info.size:>9}  "
                f"{branch}{info.preview}"
            )


def list_entries(
    source: Source,
    *,
    roles: Iterable[str] | None = None,
    since: datetime | str | None = None,
    limit: int | None = None,
    cursor: str | None = None,
    limits: Limits = DEFAULT_LIMITS,
    now: datetime | None = None,
) -> EntryPage:
    """Entries of the transcript in order (ids, roles, timestamps, previews, sizes), one page at a time."""
    transcript = as_transcript(source)
    wanted = check_roles(transcript, roles)
    since_at = parse_time(since, now) if isinstance(since, str) else since
    if since_at is not None and since_at.tzinfo is None:
        since_at = since_at.replace(tzinfo=UTC)
    page_size = _positive("--limit", limit if limit is not None else limits.list_limit)
    # An age ("2h") is kept as written, so the next page's cursor still matches while the clock moves on.
    since_key = since if isinstance(since, str) else since_at.isoformat() if since_at else None
    query = query_digest({"roles": sorted(wanted or ()), "since": since_key})
    start = 0
    if cursor:
        start = decode_cursor(
            cursor, kind="list", query=query, fingerprint=transcript.fingerprint(), size=len(transcript)
        )[0]

    def keep(entry: Entry) -> bool:
        if not _role_ok(entry, wanted):
            return False
        if since_at is None:
            return True
        at = _entry_time(entry)
        return at is not None and at >= since_at

    selected = [i for i, e in enumerate(transcript.entries) if keep(e)]
    page = [i for i in selected if i >= start][: page_size + 1]
    more = len(page) > page_size
    page = page[:page_size]
    entries = tuple(entry_info(transcript, transcript.entries[i], limits.preview_chars) for i in page)
    next_cursor = Cursor("list", query, transcript.fingerprint(), (page[-1] + 1,)).encode() if more else None
    return EntryPage(entries, len(selected), next_cursor)


# ---------------------------------------------------------------------------------------------------------------
# grep


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
        text = _clean(self.text)
        return ("…" if self.offset > 0 else "") + text + ("…" if self.offset + len(self.text) < self.length else "")

    def to_json(self) -> JsonDict:
        out: JsonDict = {
            "line_number": self.number,
            "section": self.section,
            "text": _clean(self.text),
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

    def to_json(self) -> JsonDict:
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

    def to_json(self) -> JsonDict:
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

    def to_json(self) -> JsonDict:
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


def _window(text: str, number: int, section: str, width: int, spans: list[tuple[int, int]] | None) -> GrepLine:
    """The line, or a window of ``width`` characters around its first match."""
    if len(text) <= width:
        return GrepLine(number, section, text, 0, len(text), tuple(spans or ()))
    start = 0
    if spans:
        first_start, first_end = spans[0]
        start = max(0, min(first_start - width // 4, len(text) - width))
        if first_end > start + width:
            start = first_start
    end = start + width
    shown = tuple((max(s, start) - start, min(e, end) - start) for s, e in spans or () if s < end and e >= start)
    return GrepLine(number, section, text[start:end], start, len(text), shown)


@dataclass(frozen=True, slots=True)
class GrepQuery:
    r"""What a grep looks for, taken as one value by the command line, the streaming search, the counts and the
    lookup tool: the patterns (a line is selected when any matches), how they match (``ignore_case``, ``fixed``
    strings, whole ``word``\ s, ``invert``\ ed), the context lines around a match, and which ``roles`` and
    ``sections`` are searched (None: all). Nothing is checked here; the search checks it, as the commands do."""

    patterns: tuple[str, ...]
    ignore_case: bool = False
    fixed: bool = False
    word: bool = False
    invert: bool = False
    context: int = 0
    roles: tuple[str, ...] | None = None
    sections: tuple[str, ...] | None = None

    @classmethod
    def of(
        cls,
        pattern: str | Sequence[str],
        *,
        ignore_case: bool = False,
        fixed: bool = False,
        word: bool = False,
        invert: bool = False,
        context: int = 0,
        roles: Iterable[str] | None = None,
        sections: Iterable[str] | None = None,
    ) -> GrepQuery:
        """A query from a pattern (or several) and the flags grep takes."""
        patterns = (pattern,) if isinstance(pattern, str) else tuple(pattern)
        return cls(
            patterns,
            ignore_case,
            fixed,
            word,
            invert,
            context,
            None if roles is None else tuple(roles),
            None if sections is None else tuple(sections),
        )

    def composed(self) -> tuple[str, bool]:
        """The one pattern the patterns make, and whether it is a fixed string (``selection.compose_pattern``)."""
        return compose_pattern(list(self.patterns), fixed=self.fixed, word=self.word, ignore_case=self.ignore_case)

    def digest(self, roles: frozenset[str] | None, sections: frozenset[str] | None) -> str:
        """What a cursor of this query remembers of it (given the checked roles and sections), so a cursor of
        another query is refused."""
        patterns = self.patterns
        return query_digest(
            {
                "pattern": patterns[0] if len(patterns) == 1 else list(patterns),
                "i": self.ignore_case,
                "F": self.fixed,
                "roles": sorted(roles or ()),
                "sections": sorted(sections or ()),
                **({"w": True} if self.word else {}),
                **({"v": True} if self.invert else {}),
            }
        )


def grep(
    source: Source,
    pattern: str | Sequence[str] | GrepQuery,
    *,
    ignore_case: bool = False,
    fixed: bool = False,
    word: bool = False,
    invert: bool = False,
    context: int = 0,
    roles: Iterable[str] | None = None,
    sections: Iterable[str] | None = None,
    max_count: int | None = None,
    max_chars: int | None = None,
    cursor: str | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> GrepPage:
    """Lines of the rendered transcript matching ``pattern`` (or a ``GrepQuery``, then the flags are its own),
    each with its entry, section and context lines: ``grep_stream``'s page collected into a GrepPage."""
    query = (
        pattern
        if isinstance(pattern, GrepQuery)
        else GrepQuery.of(
            pattern,
            ignore_case=ignore_case,
            fixed=fixed,
            word=word,
            invert=invert,
            context=context,
            roles=roles,
            sections=sections,
        )
    )
    stream = grep_stream(source, query, max_count=max_count, max_chars=max_chars, cursor=cursor, limits=limits)
    return GrepPage(
        stream.pattern,
        tuple(stream.matches),
        stream.next_cursor,
        stream.entries_searched,
        stream.stopped_by,
        stream.prefiltered,
        query.context,
        stream.patterns,
        query.invert,
    )


def grep_stream(
    source: Source,
    query: GrepQuery,
    *,
    max_count: int | None = None,
    max_chars: int | None = None,
    cursor: str | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> GrepStream:
    """Lines of the rendered transcript matching ``pattern``, each with its entry, section and context lines, as a
    stream: arguments are checked (and errors raised) here, matches come as found (``grep`` collects them).

    Matching is per line (a match never spans lines). Context lines stay within the match's entry and are not
    repeated between adjacent matches on a page. A page holds at most ``max_count`` matches and about
    ``max_chars`` characters (always at least one match); ``next_cursor`` resumes at the first match not shown.

    ``pattern`` may be several patterns (a line matches when any does); ``word`` matches whole words only;
    ``invert`` selects the lines that do not match. picompact's own lines (entry headers, section markers) are
    selected only when ``sections`` names ``header`` or ``meta`` (see ``search.selection``).
    """
    transcript = as_transcript(source)
    wanted = check_roles(transcript, query.roles)
    wanted_sections = _check_sections(query.sections)
    context, invert, ignore_case = query.context, query.invert, query.ignore_case
    if context < 0 or context > limits.max_context:
        raise UsageError(f"-C must be between 0 and {limits.max_context} (got {context})")
    page_size = _positive("--max-count", max_count if max_count is not None else limits.grep_max_count)
    char_budget = _positive("--max-chars", max_chars if max_chars is not None else limits.grep_max_chars)
    patterns = list(query.patterns)
    composed, composed_fixed = query.composed()
    searcher = Searcher(composed, ignore_case, composed_fixed, limits.regex_timeout, limits.search_timeout)
    keep = LineSelector(wanted_sections)
    digest = query.digest(wanted, wanted_sections)
    start_entry, start_line = 0, 0
    if cursor:
        position = decode_cursor(
            cursor, kind="grep", query=digest, fingerprint=transcript.fingerprint(), size=len(transcript)
        )
        if len(position) != 2:
            raise PatternError("malformed grep cursor")  # pragma: no cover - decode checks the shape
        start_entry, start_line = position

    candidates = (
        None if invert else Candidates(transcript, searcher, composed, ignore_case, composed_fixed, keep.synthetic)
    )
    shown = patterns[0] if len(patterns) == 1 else composed
    stream = GrepStream(
        shown,
        tuple(patterns),
        context,
        invert,
        candidates is not None and candidates.active,
        # The fingerprint hashes every entry's id: taken only when a page ends with a cursor.
        lambda position: Cursor("grep", digest, transcript.fingerprint(), position).encode(),
    )
    stream._matches = _grep_matches(
        stream,
        transcript,
        candidates,
        searcher,
        keep,
        wanted,
        invert,
        context,
        start_entry,
        start_line,
        page_size,
        char_budget,
        limits.line_chars,
    )
    return stream


class _Scan:
    """The scope positions grep renders, in order: entries of the wanted roles that may match. ``searched`` counts
    the entries of the wanted roles looked at so far (those passed over by a raw search included)."""

    def __init__(
        self, transcript: Transcript, candidates: Candidates | None, wanted: frozenset[str] | None, start: int
    ) -> None:
        self.transcript = transcript
        self.candidates = candidates
        self.wanted = wanted
        self.start = start
        self.searched = 0

    def __iter__(self) -> Iterator[int]:
        entries, candidates, wanted = self.transcript.entries, self.candidates, self.wanted
        pos = self.start
        while pos < len(entries):
            if candidates is not None:
                skip_to = candidates.next_candidate(pos)  # entries before it cannot match
                if skip_to > pos:
                    passed = entries[pos:skip_to]
                    self.searched += len(passed) if wanted is None else sum(_role_ok(e, wanted) for e in passed)
                    pos = skip_to
                    continue
            entry = entries[pos]
            if _role_ok(entry, wanted):
                self.searched += 1
                if candidates is None or candidates.may_match(pos, entry):
                    yield pos
            pos += 1


def _grep_matches(
    stream: GrepStream,
    transcript: Transcript,
    candidates: Candidates | None,
    searcher: Searcher,
    keep: LineSelector,
    wanted: frozenset[str] | None,
    invert: bool,
    context: int,
    start_entry: int,
    start_line: int,
    page_size: int,
    char_budget: int,
    line_chars: int,
) -> Iterator[GrepMatch]:
    """The page's matches in order; at the end ``stream`` learns where and why the page stopped."""
    matches = 0
    used_chars = 0
    stopped_by: str | None = None
    next_position: tuple[int, int] | None = None

    scan = _Scan(transcript, candidates, wanted, start_entry)
    for pos in scan:
        entry = transcript.entries[pos]
        rendered = transcript.render(entry)
        first_line = start_line if pos == start_entry else 0
        if invert:
            found = inverted_lines(rendered, searcher, keep, first_line)
        else:
            found = matching_lines(rendered, searcher, keep, first_line)
        pending = next(found, None)
        last_shown = first_line - 1
        while pending is not None:
            index, first = pending
            if matches >= page_size or (matches and used_chars >= char_budget):
                stopped_by = "max_count" if matches >= page_size else "max_chars"
                next_position = (pos, index)
                break
            following = next(found, None)
            match, cost = _build_match(
                transcript, rendered, searcher, index, first, context, last_shown, following, line_chars
            )
            if matches and used_chars + cost > char_budget:
                stopped_by = "max_chars"
                next_position = (pos, index)
                break
            matches += 1
            used_chars += cost
            last_shown = index + len(match.after)
            pending = following
            stream.entries_searched = scan.searched
            yield match
        if next_position is not None:
            break

    stream.entries_searched = scan.searched
    stream.stopped_by = stopped_by
    stream.next_cursor = stream.cursor_at(next_position) if next_position is not None else None


@dataclass(frozen=True, slots=True)
class EntryCount:
    """An entry with lines selected by grep, and how many (``grep -c``, ``grep -l``)."""

    info: EntryInfo
    count: int

    def to_json(self) -> JsonDict:
        return {**self.info.to_json(), "count": self.count}


@dataclass(frozen=True, slots=True)
class GrepCounts:
    """``grep -c`` / ``grep -l``: the entries with selected lines, and the summary ``grep`` gives."""

    pattern: str
    patterns: tuple[str, ...]
    invert: bool
    entries: tuple[EntryCount, ...]
    entries_searched: int

    def to_json(self) -> JsonDict:
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


def grep_counts(source: Source, query: GrepQuery, *, limits: Limits = DEFAULT_LIMITS) -> GrepCounts:
    """Every entry with selected lines (matching, or not matching with ``query.invert``) and how many, in
    transcript order; the same selection as ``grep``, never paged (one short record per entry; no context)."""
    transcript = as_transcript(source)
    wanted = check_roles(transcript, query.roles)
    keep = LineSelector(_check_sections(query.sections))
    patterns = list(query.patterns)
    invert, ignore_case = query.invert, query.ignore_case
    composed, composed_fixed = query.composed()
    searcher = Searcher(composed, ignore_case, composed_fixed, limits.regex_timeout, limits.search_timeout)
    candidates = (
        None if invert else Candidates(transcript, searcher, composed, ignore_case, composed_fixed, keep.synthetic)
    )
    out: list[EntryCount] = []
    scan = _Scan(transcript, candidates, wanted, 0)
    for pos in scan:
        entry = transcript.entries[pos]
        rendered = transcript.render(entry)
        lines = inverted_lines if invert else matching_lines
        count = sum(1 for _ in lines(rendered, searcher, keep, 0))
        if count:
            out.append(EntryCount(entry_info(transcript, entry), count))
    shown = patterns[0] if len(patterns) == 1 else composed
    return GrepCounts(shown, tuple(patterns), invert, tuple(out), scan.searched)


# Skeletons of the lines a session is made of: a pattern whose raw form matches all of them has a raw hit in nearly
# every entry, so the decorated lines of entries without one are not worth keeping at load.
_TYPICAL_LINES = (
    b'{"type":"message","id":"0a1b2c3d","parentId":"4e5f6a7b","timestamp":"2025-01-01T00:00:00.000Z",'
    b'"message":{"role":"user","content":[{"type":"text","text":""}],"timestamp":1735689600000}}',
    b'{"type":"message","id":"0a1b2c3d","parentId":"4e5f6a7b","timestamp":"2025-01-01T00:00:00.000Z",'
    b'"message":{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"n","arguments":{}}],'
    b'"api":"a","provider":"p","model":"m","usage":{"input":1,"output":1},"stopReason":"toolUse"}}',
    b'{"type":"message","id":"0a1b2c3d","parentId":"4e5f6a7b","timestamp":"2025-01-01T00:00:00.000Z",'
    b'"message":{"role":"toolResult","toolCallId":"c","toolName":"n","content":[],"isError":false}}',
)


def grep_wants_decorated(query: GrepQuery) -> bool:
    """Whether a grep with these options will check the decorated lines of entries whose raw line has no hit, so
    the loader should keep them for the bodies it drops (``load_session(decorate=...)``).

    Only a question of speed: without them grep renders those lines itself (reading such a body back), with them
    the load renders every dropped body's decorated lines. No when the raw search alone decides
    (``rawregex.decorated_safe``), for -v (which renders every entry), and when the pattern's raw form matches a
    typical line (every entry will be rendered anyway)."""
    if query.invert:
        return False
    try:
        composed, composed_fixed = query.composed()
        synthetic = LineSelector(_check_sections(query.sections)).synthetic
    except (PatternError, UsageError):
        return True  # reported by grep itself, after the session's own problems
    tree = rawregex.parse(composed, fixed=composed_fixed, ignore_case=query.ignore_case)
    if tree is None:
        return True
    try:
        relaxed = relaxed_search(tree)
    except PatternError:
        return True  # too large to compile (several -e, each small enough): grep says so, naming the patterns
    if not synthetic and rawregex.decorated_safe(tree, relaxed):
        return False
    program = rawregex.compile_raw(rawregex.raw_pattern(tree, frozenset(), False))
    return program is None or any(program.search(line) is None for line in _TYPICAL_LINES)


def _check_sections(sections: Iterable[str] | None) -> frozenset[str] | None:
    if sections is None:
        return None
    wanted = frozenset(s.strip() for section in sections for s in section.split(",") if s.strip())
    unknown = sorted(wanted - set(SECTIONS))
    if unknown:
        raise UsageError(f"unknown section {', '.join(unknown)} (sections: {', '.join(SECTIONS)})")
    return wanted or None


def _build_match(
    transcript: Transcript,
    rendered: RenderedEntry,
    searcher: Searcher,
    index: int,
    first: Any,
    context: int,
    last_shown: int,
    following: tuple[int, Any] | None,
    width: int,
) -> tuple[GrepMatch, int]:
    lines, sections = rendered.lines, rendered.sections
    text = lines[index]
    stop = first.start() + width + 1 if len(text) > width else len(text) + 1
    line = _window(text, index + 1, sections[index], width, searcher.spans(text, first, stop))
    before_start = max(index - context, last_shown + 1, 0)
    after_end = min(index + context, len(lines) - 1)
    if following is not None:
        after_end = min(after_end, following[0] - 1)
    before = tuple(_window(lines[i], i + 1, sections[i], width, None) for i in range(before_start, index))
    after = tuple(_window(lines[i], i + 1, sections[i], width, None) for i in range(index + 1, after_end + 1))
    entry = rendered.entry
    match = GrepMatch(
        entry_label(entry),
        entry.type,
        entry.role,
        entry.timestamp,
        transcript.branch_leaf(entry),
        transcript.on_branch(entry),
        line,
        before,
        after,
    )
    cost = len(line.text) + sum(len(c.text) for c in before) + sum(len(c.text) for c in after)
    return match, cost


# ---------------------------------------------------------------------------------------------------------------
# show


@dataclass(frozen=True, slots=True)
class ShowLine:
    number: int  # 1-based line within the entry's rendering
    section: str
    text: str  # the line, or the part of it on this page
    offset: int  # where ``text`` starts in the full line (a line longer than a page is split)
    length: int  # characters in the full line

    def to_json(self) -> JsonDict:
        return {
            "line_number": self.number,
            "section": self.section,
            "text": _clean(self.text),
            "offset": self.offset,
            "length": self.length,
        }


@dataclass(frozen=True, slots=True)
class ShowPage:
    entry: EntryInfo
    lines: tuple[ShowLine, ...]
    page: int  # 1-based
    pages: int
    total_lines: int
    total_chars: int
    next_cursor: str | None

    @property
    def text(self) -> str:
        """This page of the entry's rendering as text, one line per rendered line."""
        return "\n".join(line.text for line in self.lines)

    def to_json(self) -> JsonDict:
        return {
            "entry": self.entry.to_json(),
            "page": self.page,
            "pages": self.pages,
            "total_lines": self.total_lines,
            "total_chars": self.total_chars,
            "lines": [line.to_json() for line in self.lines],
            "next_cursor": self.next_cursor,
        }


Chunk = tuple[int, int, int]  # line index, start and end character of the part of the line on a page


def _fill_page(lines: tuple[str, ...], start: tuple[int, int], budget: int) -> tuple[list[Chunk], tuple[int, int]]:
    """The parts of lines on a page that starts at ``start``, and where the next page starts.

    A page takes whole lines while they fit in ``budget`` characters (a newline counts one); a line longer than a
    whole page is split across pages."""
    chunks: list[Chunk] = []
    remaining = budget
    line, col = start
    while line < len(lines):
        rest = len(lines[line]) - col
        if rest + 1 <= remaining:
            chunks.append((line, col, len(lines[line])))
            remaining -= rest + 1
            line, col = line + 1, 0
            continue
        if not chunks:
            chunks.append((line, col, col + remaining))
            col += remaining
            if col >= len(lines[line]):
                line, col = line + 1, 0
        break
    return chunks, (line, col)


def _page_starts(lines: tuple[str, ...], budget: int) -> list[tuple[int, int]]:
    starts = [(0, 0)]
    while True:
        _, nxt = _fill_page(lines, starts[-1], budget)
        if nxt[0] >= len(lines):
            return starts
        starts.append(nxt)


def resolve_in_scope(transcript: Transcript, entry_id: str) -> Entry:
    """The entry with this id (or unique prefix) in the transcript, or NotFoundError naming the nearest ids."""
    found = transcript.find(entry_id)
    if found is not None:
        return found
    where = str(transcript.session.path or "<session>")
    elsewhere = find_entry(transcript.session, entry_id)
    if elsewhere is not None:
        raise NotFoundError(
            f"entry {elsewhere.id} is not on the current branch (it leads to leaf "
            f"{transcript.branch_leaf(elsewhere) or '?'}): use --all-branches",
            path=where,
        )
    raise not_found(entry_id, [entry_label(e) for e in transcript.entries], where)


def show_entry(
    source: Source,
    entry_id: str,
    *,
    page: int | None = None,
    cursor: str | None = None,
    max_chars: int | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> ShowPage:
    """One entry rendered in full, a page (``limits.show_chars`` characters) at a time."""
    transcript = as_transcript(source)
    entry = resolve_in_scope(transcript, entry_id)
    budget = _positive("--max-chars", max_chars if max_chars is not None else limits.show_chars)
    rendered = transcript.render(entry)
    lines, sections = rendered.lines, rendered.sections
    starts = _page_starts(lines, budget)
    query = query_digest({"id": entry_label(entry)})
    if cursor and page is not None:
        raise UsageError("--page and --cursor both say where to start: give one")
    start = starts[0]
    if cursor:
        position = decode_cursor(
            cursor, kind="show", query=query, fingerprint=transcript.fingerprint(), size=len(lines)
        )
        start = (position[0], position[1] if len(position) > 1 else 0)
        if start[0] >= len(lines) or start[1] > len(lines[start[0]]):
            raise CursorError("malformed cursor: position past the end of the entry")
    elif page is not None:
        if page < 1 or page > len(starts):
            raise UsageError(f"--page {page}: entry {entry_label(entry)} has {len(starts)} page(s)")
        start = starts[page - 1]
    number = sum(1 for s in starts if s <= start)
    chunks, (line, col) = _fill_page(lines, start, budget)
    out = tuple(ShowLine(i + 1, sections[i], lines[i][a:b], a, len(lines[i])) for i, a, b in chunks)
    next_cursor = None
    if line < len(lines):
        next_cursor = Cursor("show", query, transcript.fingerprint(), (line, col)).encode()
    info = entry_info(transcript, entry, limits.preview_chars)
    return ShowPage(info, out, number, len(starts), len(lines), rendered.chars, next_cursor)


def entry_raw(source: Source, entry_id: str) -> bytes:
    """The entry's line exactly as stored in the file (without the newline)."""
    transcript = as_transcript(source)
    entry = resolve_in_scope(transcript, entry_id)
    data = transcript.entry_bytes(entry)
    if data is None:
        raise SessionError(
            "cannot read the raw line: the file changed since it was loaded, or the session was not loaded from a file",
            path=str(transcript.session.path or "<session>"),
            line=entry.line,
        )
    return data
