"""Opaque pagination cursors: where the last page ended, for which query, over which exact file.

A cursor is base64url (no padding) of a small JSON object: format version, command, a digest of the query
parameters that decide what matches, the transcript fingerprint (file size, tail bytes, ids in scope) and the
position to resume at. A cursor from another command, another query or a changed file is refused with
CursorError rather than silently resuming somewhere else.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass
from typing import Any

import orjson

from pi_compact.errors import CursorError

CURSOR_VERSION = 1


def query_digest(params: dict[str, Any]) -> str:
    """A short digest of the parameters that decide what a command returns (not page sizes)."""
    return hashlib.blake2b(orjson.dumps(params, option=orjson.OPT_SORT_KEYS), digest_size=8).hexdigest()


@dataclass(frozen=True, slots=True)
class Cursor:
    kind: str  # "list", "grep" or "show"
    query: str  # query_digest(...)
    fingerprint: str  # Transcript.fingerprint()
    position: tuple[int, ...]

    def encode(self) -> str:
        payload = orjson.dumps(
            {"v": CURSOR_VERSION, "k": self.kind, "q": self.query, "f": self.fingerprint, "p": list(self.position)}
        )
        return base64.urlsafe_b64encode(payload).rstrip(b"=").decode()


def decode_cursor(text: str, *, kind: str, query: str, fingerprint: str, size: int) -> tuple[int, ...]:
    """The position in a cursor made by ``kind`` for this query and this file, or CursorError."""
    try:
        padded = text.strip() + "=" * (-len(text.strip()) % 4)
        data = orjson.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
        version, made_by, made_for = data["v"], data["k"], data["q"]
        made_on, position = data["f"], tuple(data["p"])
    except (ValueError, KeyError, TypeError, UnicodeEncodeError, binascii.Error, orjson.JSONDecodeError):
        raise CursorError(f"malformed cursor {text[:40]!r}: pass a cursor exactly as picompact printed it") from None
    if version != CURSOR_VERSION:
        raise CursorError(f"cursor format v{version} is not supported (this picompact writes v{CURSOR_VERSION})")
    if made_by != kind:
        raise CursorError(f"this cursor continues a `{made_by}` command, not `{kind}`")
    if made_on != fingerprint:
        raise CursorError(
            "the session changed since this cursor was made (or another leaf/--all-branches was chosen): "
            "start again without --cursor"
        )
    if made_for != query:
        raise CursorError(f"this cursor belongs to a different `{kind}` query: repeat the same arguments with it")
    if not position or not all(isinstance(p, int) and not isinstance(p, bool) and p >= 0 for p in position):
        raise CursorError("malformed cursor: bad position")
    if position[0] > size:
        raise CursorError("malformed cursor: position past the end")
    return position
