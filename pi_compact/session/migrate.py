"""Pi's format versions: which one a header names, read as Pi reads it, and the v1 → v2 → v3 migration Pi applies
in memory when it opens an older file (v1 entries get ids and are chained in file order; v2's ``hookMessage``
role becomes ``custom``).
"""

from __future__ import annotations

import json
import math

from pi_compact.js import js_string, js_to_number
from pi_compact.session.entries import Diagnostic, Entry, JsonDict

CURRENT_VERSION = 3


def synthetic_id(session_id: str, line: int, taken: set[str]) -> str:
    """A stable 8-hex id for an entry of a v1 file, which has none.

    Pi gives such entries random ids on load; picompact derives them from the session id and line number so that
    ``show``, ``grep`` and cursors agree between runs. Collisions get a counter.
    """
    from hashlib import sha1  # only v1 files need it: not imported by every start

    salt = 0
    while True:
        digest = sha1(f"{session_id}:{line}:{salt}".encode()).hexdigest()[:8]
        if digest not in taken:
            return digest
        salt += 1


def _version_text(header: JsonDict) -> str:
    try:
        return json.dumps(header.get("version"), ensure_ascii=False)[:40]
    except (TypeError, ValueError):
        return "?"


def header_version(header: JsonDict, diagnostics: list[Diagnostic], line: int) -> tuple[int, bool]:
    """(format version Pi migrates from, whether Pi's ``version >= 3`` test fails) for the header's version.

    Pi reads ``header.version ?? 1`` and compares it with JavaScript's ``>=`` and ``<``: the string "3" is 3, true
    is 1, a non-numeric string is NaN (no comparison holds: Pi rewrites the file but migrates nothing).
    """
    raw = header.get("version")
    number = 1.0 if raw is None else js_to_number(raw)
    if raw is not None and (isinstance(raw, bool) or not isinstance(raw, (int, float))):
        if math.isnan(number):
            reading = "not a number: Pi rewrites the file on open but migrates nothing; picompact migrates nothing"
        else:
            reading = f"{js_string(number) if math.isfinite(number) else number}, and so does picompact"
        diagnostics.append(
            Diagnostic(
                "warning",
                "version-not-number",
                f"header version {_version_text(header)} is not a JSON number; Pi reads it as {reading}",
                line,
            )
        )
    if math.isnan(number):
        return CURRENT_VERSION, False
    if number < 2:
        return 1, True
    if number < CURRENT_VERSION:
        return 2, True
    return (int(number) if math.isfinite(number) else CURRENT_VERSION), False


def _warn_ids_present(entries: list[Entry], diagnostics: list[Diagnostic], header_line: int) -> None:
    """A v1 header over entries that already carry ids: Pi's migration would replace them and flatten the tree."""
    with_ids = sum(1 for entry in entries if entry.id is not None)
    if not with_ids:
        return
    with_parents = sum(1 for entry in entries if entry.parent_id is not None)
    diagnostics.append(
        Diagnostic(
            "warning",
            "v1-with-ids",
            f"the header says format v1, yet {with_ids} entries carry ids ({with_parents} with a parentId): Pi's "
            "migration gives every entry a new id and chains them in file order, flattening the tree; picompact "
            'shows that flattened branch and will not rewrite the file (if it is really v3, set "version": 3)',
            header_line,
        )
    )


def migrate(header: JsonDict, entries: list[Entry], diagnostics: list[Diagnostic], header_line: int = 1) -> int:
    """Bring entries to v3 in memory as Pi does; return the original version."""
    version, migrating = header_version(header, diagnostics, header_line)
    if not migrating:
        return version
    if version < 2:
        _warn_ids_present(entries, diagnostics, header_line)
        taken: set[str] = set()
        prev: str | None = None
        parsed = [None, *entries]  # a v1 compaction's firstKeptEntryIndex counts the header as 0
        session_id = str(header.get("id", ""))
        for entry in entries:
            new_id = synthetic_id(session_id, entry.line, taken)
            taken.add(new_id)
            entry.raw["id"] = new_id
            entry.raw["parentId"] = prev
            entry.refresh()
            prev = new_id
        for entry in entries:
            if entry.type == "compaction" and "firstKeptEntryIndex" in entry.raw:
                index = entry.raw.get("firstKeptEntryIndex")
                if isinstance(index, int) and not isinstance(index, bool) and 0 < index < len(parsed):
                    target = parsed[index]
                    if target is not None:
                        entry.raw["firstKeptEntryId"] = target.id
                del entry.raw["firstKeptEntryIndex"]
    if version < 3:
        for entry in entries:
            msg = entry.message
            if msg is not None and msg.get("role") == "hookMessage":
                msg["role"] = "custom"
                entry.refresh()
    diagnostics.append(
        Diagnostic(
            "info",
            "old-version",
            f"session format v{version}: migrated to v3 in memory"
            + ("; entry ids are synthetic (derived from session id and line)" if version < 2 else ""),
        )
    )
    return version
