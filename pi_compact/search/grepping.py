"""``grep``: the lines of the raw branch that match, with their entry, section and context lines, a page at a time,
as a stream (``grep_stream``) or as counts per entry (``grep_counts``); ``GrepQuery`` is what it looks for
(``picompact grep`` and the lookup model's ``grep``)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pi_compact.errors import PatternError, UsageError
from pi_compact.search.cursor import Cursor, decode_cursor, query_digest
from pi_compact.search.grep_results import (
    EntryCount,
    GrepCounts,
    GrepLine,
    GrepMatch,
    GrepPage,
    GrepStream,
)
from pi_compact.search.matching import Candidates, Searcher, matching_lines
from pi_compact.search.pages import (
    DEFAULT_LIMITS,
    Limits,
    Source,
    check_roles,
    entry_info,
    positive,
    role_ok,
)
from pi_compact.search.render import SECTIONS, RenderedEntry, entry_label
from pi_compact.search.selection import LineSelector, compose_pattern, inverted_lines
from pi_compact.search.transcript import Transcript, as_transcript


def line_window(text: str, number: int, section: str, width: int, spans: list[tuple[int, int]] | None) -> GrepLine:
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
    query: str | Sequence[str] | GrepQuery,
    *,
    max_count: int | None = None,
    max_chars: int | None = None,
    cursor: str | None = None,
    limits: Limits = DEFAULT_LIMITS,
) -> GrepPage:
    """Lines of the rendered transcript matching ``query`` (a ``GrepQuery``, or a pattern or patterns with the
    default flags), each with its entry, section and context lines: ``grep_stream``'s page collected into a
    GrepPage."""
    if not isinstance(query, GrepQuery):
        query = GrepQuery.of(query)
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
    wanted_sections = check_sections(query.sections)
    context, invert, ignore_case = query.context, query.invert, query.ignore_case
    if context < 0 or context > limits.max_context:
        raise UsageError(f"-C must be between 0 and {limits.max_context} (got {context})")
    page_size = positive("--max-count", max_count if max_count is not None else limits.grep_max_count)
    char_budget = positive("--max-chars", max_chars if max_chars is not None else limits.grep_max_chars)
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
                    self.searched += len(passed) if wanted is None else sum(role_ok(e, wanted) for e in passed)
                    pos = skip_to
                    continue
            entry = entries[pos]
            if role_ok(entry, wanted):
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


def grep_counts(source: Source, query: GrepQuery, *, limits: Limits = DEFAULT_LIMITS) -> GrepCounts:
    """Every entry with selected lines (matching, or not matching with ``query.invert``) and how many, in
    transcript order; the same selection as ``grep``, never paged (one short record per entry; no context)."""
    transcript = as_transcript(source)
    wanted = check_roles(transcript, query.roles)
    keep = LineSelector(check_sections(query.sections))
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


def check_sections(sections: Iterable[str] | None) -> frozenset[str] | None:
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
    line = line_window(text, index + 1, sections[index], width, searcher.spans(text, first, stop))
    before_start = max(index - context, last_shown + 1, 0)
    after_end = min(index + context, len(lines) - 1)
    if following is not None:
        after_end = min(after_end, following[0] - 1)
    before = tuple(line_window(lines[i], i + 1, sections[i], width, None) for i in range(before_start, index))
    after = tuple(line_window(lines[i], i + 1, sections[i], width, None) for i in range(index + 1, after_end + 1))
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
