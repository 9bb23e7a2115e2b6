"""``list_entries``: the entries of the raw branch in order, with ids, roles, times and previews, a page at a
time (``picompact list`` and the lookup model's ``list_entries``)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypedDict

from pi_compact.search.cursor import Cursor, decode_cursor, query_digest
from pi_compact.search.pages import (
    DEFAULT_LIMITS,
    EntryInfo,
    EntryInfoJSON,
    Limits,
    Source,
    check_roles,
    entry_info,
    entry_time,
    parse_time,
    positive,
    role_ok,
)
from pi_compact.search.transcript import as_transcript
from pi_compact.session.entries import Entry


class EntryPageJSON(TypedDict):
    """``EntryPage.to_json()``: the ``list --json`` document."""

    entries: list[EntryInfoJSON]
    total: int
    next_cursor: str | None


@dataclass(frozen=True, slots=True)
class EntryPage:
    entries: tuple[EntryInfo, ...]
    total: int  # entries in the scope that pass the filters
    next_cursor: str | None

    def to_json(self) -> EntryPageJSON:
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
    page_size = positive("--limit", limit if limit is not None else limits.list_limit)
    # An age ("2h") is kept as written, so the next page's cursor still matches while the clock moves on.
    since_key = since if isinstance(since, str) else since_at.isoformat() if since_at else None
    query = query_digest({"roles": sorted(wanted or ()), "since": since_key})
    start = 0
    if cursor:
        start = decode_cursor(
            cursor, kind="list", query=query, fingerprint=transcript.fingerprint(), size=len(transcript)
        )[0]

    def keep(entry: Entry) -> bool:
        if not role_ok(entry, wanted):
            return False
        if since_at is None:
            return True
        at = entry_time(entry)
        return at is not None and at >= since_at

    selected = [i for i, e in enumerate(transcript.entries) if keep(e)]
    page = [i for i in selected if i >= start][: page_size + 1]
    more = len(page) > page_size
    page = page[:page_size]
    entries = tuple(entry_info(transcript, transcript.entries[i], limits.preview_chars) for i in page)
    next_cursor = Cursor("list", query, transcript.fingerprint(), (page[-1] + 1,)).encode() if more else None
    return EntryPage(entries, len(selected), next_cursor)
