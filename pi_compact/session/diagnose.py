"""What the loader says about a file's lines: the diagnostics it records (each as Pi would read the line) and the
errors it raises for a file that is not a session."""

from __future__ import annotations

import json
from typing import Any

from pi_compact.errors import SessionError
from pi_compact.js import js_truthy
from pi_compact.session.entries import Diagnostic, Entry
from pi_compact.session.jsonline import DEEP_MARKER, MAX_DEPTH
from pi_compact.session.source import MAX_LINE_ENV, PI_MAX_LINE_CHARS


def is_utf8(body: bytes) -> bool:
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def note_lossy(replaced: bool, cut: bool, body: bytes, number: int, diagnostics: list[Diagnostic]) -> None:
    if replaced:
        at = 0
        try:
            body.decode("utf-8")
        except UnicodeDecodeError as exc:
            at = exc.start
        diagnostics.append(
            Diagnostic(
                "warning",
                "invalid-utf8",
                f"line is not valid UTF-8 (first bad byte at byte {at + 1} of the line): read with replacement "
                "characters (U+FFFD), as Pi reads it; the line's bytes are left as they are",
                number,
            )
        )
    if cut:
        diagnostics.append(
            Diagnostic(
                "warning",
                "deep-nesting",
                f"JSON nested deeper than {MAX_DEPTH} levels: the deeper parts are shown as {DEEP_MARKER!r} "
                "(Pi loads them in full); the line's bytes are left as they are",
                number,
            )
        )


def null_line(number: int) -> Diagnostic:
    return Diagnostic("warning", "null-line", "line is JSON null/false: skipped, as Pi does", number)


def non_object_line(number: int) -> Diagnostic:
    return Diagnostic(
        "warning",
        "non-object-line",
        "line is JSON but not an object: Pi keeps it as an entry without an id (no entry can be its child, and as "
        "the last line it leaves Pi no leaf); picompact leaves it out of the tree",
        number,
    )


def extra_header(number: int) -> Diagnostic:
    return Diagnostic(
        "warning",
        "extra-header",
        "another session header after the first: Pi leaves it out of the tree (no entry, never the leaf), and so "
        "does picompact",
        number,
    )


def big_line(length: int, number: int) -> Diagnostic:
    return Diagnostic("info", "big-line", f"line is {length / 1e6:.1f} MB (loaded in full)", number)


def too_long_line(number: int, size: int, limit: int) -> Diagnostic:
    return Diagnostic(
        "warning",
        "line-too-long",
        f"line is {size:,} bytes, over picompact's limit of {limit:,} ({MAX_LINE_ENV} sets it): skipped unread, "
        f"as a line that does not parse (Pi reads a line of up to {PI_MAX_LINE_CHARS:,} characters and cannot "
        "open a file with a longer one)",
        number,
    )


def name_not_string(number: int) -> Diagnostic:
    return Diagnostic(
        "warning",
        "pi-throws",
        "session_info name is not a string: Pi 1.6 throws on it (name.trim is not a function) when it lists "
        "sessions (its session list leaves this session out) or shows this one's name",
        number,
    )


def note_line_ends(
    malformed: list[int], torn: bool, lines: int, terminated: bool, parsed_ok: bool, diagnostics: list[Diagnostic]
) -> None:
    """The lines that are not JSON (the last one maybe torn: still being written), and a missing final newline."""
    for number in malformed:
        if torn and number == lines:
            diagnostics.append(
                Diagnostic(
                    "warning",
                    "truncated-last-line",
                    "last line is incomplete (still being written by another program, or cut short by a crash): "
                    "ignored, as Pi ignores it",
                    number,
                )
            )
        else:
            diagnostics.append(
                Diagnostic("warning", "malformed-line", "line is not valid JSON: skipped, as Pi does", number)
            )
    if not terminated and parsed_ok and lines > 0:
        diagnostics.append(
            Diagnostic("info", "no-final-newline", "file does not end with a newline (Pi adds one on open)", lines)
        )


def header_error(where: str, number: int, bom: bool) -> SessionError:
    """The first parsed line (``number``) is not a session header."""
    if bom:
        return bom_error(where)
    return SessionError(
        'not a Pi session: the first JSON line is not a session header ({"type":"session","id":...})',
        path=where,
        line=number,
        code="missing-header",
    )


def bom_error(where: str) -> SessionError:
    return SessionError(
        "starts with a UTF-8 byte-order mark; Pi 1.6 refuses such a file (remove the first 3 bytes to repair it)",
        path=where,
        line=1,
        code="bom",
    )


def missing_header(
    where: str,
    lines: int,
    size: int,
    bom: bool,
    binary_line: int | None,
    too_long: tuple[int, int] | None = None,
) -> SessionError:
    """No line of the file is a session header (``binary_line``: the first line that is not UTF-8; ``too_long``:
    the first line too long to read and the limit)."""
    if lines == 0 or size == 0:
        return SessionError("empty file: not a Pi session", path=where, code="empty-file")
    if bom:
        return bom_error(where)
    if too_long is not None:
        return SessionError(
            f"line is longer than picompact's limit of {too_long[1]:,} bytes ({MAX_LINE_ENV} sets it) and no "
            "session header was read: not read as a Pi session",
            path=where,
            line=too_long[0],
            code="line-too-long",
        )
    if binary_line is not None:
        return SessionError(
            "not valid UTF-8 and no session header: not a Pi session file (a binary file?)",
            path=where,
            line=binary_line,
            code="missing-header",
        )
    return SessionError("not a Pi session: no valid session header", path=where, line=1, code="missing-header")


def no_leaf(
    last_value: tuple[Any, int] | None,
    non_objects: list[tuple[int, Any]],
    entries: list[Entry],
    version: int,
    diagnostics: list[Diagnostic],
) -> bool:
    """Whether Pi finds no leaf, given the last parsed entry value and its line, with a warning saying so."""
    if last_value is None:
        return False
    if version < 2:  # Pi's v1 migration gives every object (arrays too) an id, and throws on the rest
        _check_v1_primitives(non_objects, diagnostics)
        return not isinstance(last_value[0], (dict, list))
    if not _pi_finds_no_leaf(last_value[0]):
        return False
    _check_last_entry(*last_value, entries, diagnostics)
    return True


def _pi_finds_no_leaf(value: Any) -> bool:
    """Pi's leaf is the id of the last parsed entry; a non-object has none, and a falsy id ("", 0, null) is none."""
    return not isinstance(value, dict) or not js_truthy(value.get("id"))


def leaf_advice(entries: list[Entry], line: int) -> str:
    """What to do when Pi finds no leaf because of the entry on ``line``: name the last entry before it with an id."""
    before = next((e for e in reversed(entries) if e.line < line and e.id), None)
    if before is None:
        return "no entry before it has an id to give as --leaf"
    return (
        f"give --leaf {before.id} to work on the branch ending at line {before.line} "
        f"(compact --leaf {before.id} appends there, and Pi then finds that leaf again)"
    )


def _check_last_entry(value: Any, line: int, entries: list[Entry], diagnostics: list[Diagnostic]) -> None:
    """Warn that Pi finds no leaf in this file (see ``_pi_finds_no_leaf``), and say how to work on a branch."""
    if not isinstance(value, dict):
        what, context = "is not an object", "empty"
    else:
        raw = value.get("id")
        what = "has no id" if raw is None else f"has the id {json.dumps(raw)}, which Pi reads as none"
        context = "built from this entry and its parents"
    hint = leaf_advice(entries, line)
    diagnostics.append(
        Diagnostic(
            "warning",
            "leaf-without-id",
            f"the last entry {what}, so Pi finds no leaf: its branch is empty, so Pi never compacts this session, and "
            f"the context it sends is {context}; picompact reads the same empty branch; {hint}",
            line,
        )
    )


def _check_v1_primitives(non_objects: list[tuple[int, Any]], diagnostics: list[Diagnostic]) -> None:
    """Pi's v1 migration sets ``id`` on every entry: on a number, string or ``true`` line that throws."""
    for line, value in non_objects:
        if not isinstance(value, list):
            kind = "a string" if isinstance(value, str) else "a number" if not isinstance(value, bool) else "true"
            diagnostics.append(
                Diagnostic(
                    "warning",
                    "pi-throws",
                    f"line is {kind}, not an object, in a v1 file: Pi 1.6 throws when it opens this file (its "
                    "migration cannot give the line an id), so it cannot resume this session; delete the line",
                    line,
                )
            )
            return
