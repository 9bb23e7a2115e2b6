"""``show_entry``: one entry of the raw branch rendered in full, a page at a time, and ``entry_raw``, its exact line
of the session file (``picompact show`` and the lookup model's ``show_entry``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

from pi_compact.errors import CursorError, NotFoundError, SessionError, UsageError
from pi_compact.search.cursor import Cursor, decode_cursor, query_digest
from pi_compact.search.pages import (
    DEFAULT_LIMITS,
    EntryInfo,
    EntryInfoJSON,
    Limits,
    Source,
    clean_text,
    entry_info,
    positive,
)
from pi_compact.search.render import entry_label
from pi_compact.search.transcript import Transcript, as_transcript
from pi_compact.session.entries import Entry
from pi_compact.session.tree import find_entry, not_found


class ShowLineJSON(TypedDict):
    line_number: int
    section: str
    text: str
    offset: int
    length: int


class ShowPageJSON(TypedDict):
    """``ShowPage.to_json()``: the ``show --json`` document."""

    entry: EntryInfoJSON
    page: int
    pages: int
    total_lines: int
    total_chars: int
    lines: list[ShowLineJSON]
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class ShowLine:
    number: int  # 1-based line within the entry's rendering
    section: str
    text: str  # the line, or the part of it on this page
    offset: int  # where ``text`` starts in the full line (a line longer than a page is split)
    length: int  # characters in the full line

    def to_json(self) -> ShowLineJSON:
        return {
            "line_number": self.number,
            "section": self.section,
            "text": clean_text(self.text),
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

    def to_json(self) -> ShowPageJSON:
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
    budget = positive("--max-chars", max_chars if max_chars is not None else limits.show_chars)
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
