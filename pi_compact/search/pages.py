"""What list_entries, grep and show_entry share: bounded, paginated lookups over the raw branch.

These are the three tools a person (``picompact list/grep/show``) and a model (``picompact lookup``) use to
recover what compaction hid. All three take a Transcript (or a Branch/Session), never print, and return frozen
dataclasses with ``to_json()``. Every result is bounded (see ``Limits``) and carries a cursor that resumes exactly
where it stopped; following pages is cheap because positions are entry and line indices, not offsets to rescan.

The three live in ``search.listing``, ``search.grepping`` and ``search.show``; this module holds what they share: the
limits, the entry records, the time and role filters.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TypedDict

from pi_compact.errors import UsageError
from pi_compact.search.render import entry_label, preview, safe_text
from pi_compact.search.transcript import Transcript
from pi_compact.session.entries import ENTRY_TYPES, MESSAGE_ROLES, Entry, Session
from pi_compact.session.tree import Branch

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


class EntryInfoJSON(TypedDict):
    """``EntryInfo.to_json()``: an entry as ``list`` shows it."""

    id: str
    type: str
    role: str | None
    timestamp: str | None
    preview: str
    size: int
    line: int
    branch: str | None
    on_branch: bool


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

    def to_json(self) -> EntryInfoJSON:
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


def clean_text(text: str) -> str:
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


def entry_time(entry: Entry) -> datetime | None:
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


def role_ok(entry: Entry, roles: frozenset[str] | None) -> bool:
    return roles is None or entry.type in roles or (entry.role is not None and entry.role in roles)


def positive(name: str, value: int) -> int:
    if value < 1:
        raise UsageError(f"{name} must be at least 1 (got {value})")
    return value
