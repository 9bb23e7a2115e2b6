"""Read a session file exactly as Pi 1.6 reads it, and say what it silently skipped.

Pi splits on "\\n" only, skips blank, malformed and falsy (``null``) lines, refuses a file whose first parsed
line is not a session header, takes the last parsed entry as the leaf, and migrates v1/v2 files in memory.
"""

from __future__ import annotations

import gc
import hashlib
import json
import math
import os
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import orjson

from pi_compact.errors import NotFoundError, SessionError
from pi_compact.session.model import Diagnostic, Entry, JsonDict, Session

CURRENT_VERSION = 3
BIG_LINE_BYTES = 16 * 1024 * 1024
BOM = b"\xef\xbb\xbf"
TAIL_BYTES = 64


def _reject_constant(name: str) -> Any:
    raise ValueError(f"invalid JSON constant {name}")


def parse_json_line(line: bytes) -> Any:
    """Parse one line like JavaScript's JSON.parse.

    orjson is fast but stricter than JSON.parse on two points (escaped lone surrogates, integers beyond 64 bits);
    the standard library covers those, with NaN/Infinity rejected as JSON.parse rejects them.
    """
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        text = line.decode("utf-8")  # raises UnicodeDecodeError for invalid UTF-8
        return json.loads(text, parse_constant=_reject_constant)


def _is_falsy(value: Any) -> bool:
    """JavaScript falsiness of a parsed JSON value (null, false, 0, "")."""
    if value is None or value is False:
        return True
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value == 0 or (isinstance(value, float) and math.isnan(value))
    return isinstance(value, str) and value == ""


def _iter_lines(stream: Iterable[bytes]) -> Iterator[tuple[int, int, bytes, bool]]:
    """Yield (line number, byte offset, line, terminated) splitting on b"\\n" only.

    The line keeps its "\\n": JSON allows trailing whitespace, and not slicing it off saves a copy of every line.
    """
    offset = 0
    for number, chunk in enumerate(stream, start=1):
        yield number, offset, chunk, chunk.endswith(b"\n")
        offset += len(chunk)


def synthetic_id(session_id: str, line: int, taken: set[str]) -> str:
    """A stable 8-hex id for an entry of a v1 file, which has none.

    Pi gives such entries random ids on load; picompact derives them from the session id and line number so that
    ``show``, ``grep`` and cursors agree between runs. Collisions get a counter.
    """
    salt = 0
    while True:
        digest = hashlib.sha1(f"{session_id}:{line}:{salt}".encode()).hexdigest()[:8]
        if digest not in taken:
            return digest
        salt += 1


def _header_version(header: JsonDict) -> int:
    version = header.get("version")
    if isinstance(version, bool) or not isinstance(version, (int, float)):
        return 1
    return int(version)


def _migrate(header: JsonDict, entries: list[Entry], diagnostics: list[Diagnostic]) -> int:
    """Bring entries to v3 in memory as Pi does; return the original version."""
    version = _header_version(header)
    if version >= CURRENT_VERSION:
        return version
    if version < 2:
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


def _bom_error(where: str) -> SessionError:
    return SessionError(
        "starts with a UTF-8 byte-order mark; Pi 1.6 refuses such a file (remove the first 3 bytes to repair it)",
        path=where,
        line=1,
        code="bom",
    )


def parse_session(stream: Iterable[bytes], path: Path | None = None, size: int = 0) -> Session:
    """Parse session lines (each ending in b"\\n", the last one maybe not) into a Session.

    The cyclic garbage collector is paused meanwhile: parsing creates millions of containers and none of them
    form cycles, so its passes would only cost time (a third of the load on large files).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _parse_session(stream, path, size)
    finally:
        if enabled:
            gc.enable()


def _parse_session(stream: Iterable[bytes], path: Path | None, size: int) -> Session:
    where = str(path) if path is not None else "<session>"
    diagnostics: list[Diagnostic] = []
    entries: list[Entry] = []
    header: JsonDict | None = None
    last_line_no = 0
    last_terminated = True
    last_parsed_ok = True
    malformed: list[int] = []
    last_chunk = b""
    prev_chunk = b""
    first_line_bom = False
    for number, offset, body, terminated in _iter_lines(stream):
        last_line_no = number
        last_terminated = terminated
        prev_chunk, last_chunk = last_chunk, body
        if number == 1 and body.startswith(BOM):
            first_line_bom = True
        if body.isspace() or not body:
            last_parsed_ok = True
            continue
        try:
            value = parse_json_line(body)
        except UnicodeDecodeError as exc:
            raise SessionError(
                f"not valid UTF-8 (byte {exc.start} of the line): not a Pi session file",
                path=where,
                line=number,
                code="invalid-utf8",
            ) from None
        except ValueError:
            last_parsed_ok = False
            malformed.append(number)
            continue
        last_parsed_ok = True
        if _is_falsy(value):
            diagnostics.append(
                Diagnostic("warning", "null-line", "line is JSON null/false: skipped, as Pi does", number)
            )
            continue
        if header is None:
            if not (isinstance(value, dict) and value.get("type") == "session" and isinstance(value.get("id"), str)):
                if first_line_bom:
                    raise _bom_error(where)
                raise SessionError(
                    'not a Pi session: the first JSON line is not a session header ({"type":"session","id":...})',
                    path=where,
                    line=number,
                    code="missing-header",
                )
            header = value
            continue
        if not isinstance(value, dict):
            diagnostics.append(
                Diagnostic(
                    "warning", "non-object-line", "line is JSON but not an object: skipped, as Pi skips it", number
                )
            )
            continue
        length = len(body) - (1 if terminated else 0)
        if length >= BIG_LINE_BYTES:
            diagnostics.append(
                Diagnostic("info", "big-line", f"line is {length / 1e6:.1f} MB (loaded in full)", number)
            )
        entries.append(Entry(value, number, len(entries), offset, length))

    if header is None:
        if last_line_no == 0 or size == 0:
            raise SessionError("empty file: not a Pi session", path=where, code="empty-file")
        if first_line_bom:
            raise _bom_error(where)
        raise SessionError("not a Pi session: no valid session header", path=where, line=1, code="missing-header")

    torn = not last_terminated and not last_parsed_ok
    for number in malformed:
        if torn and number == last_line_no:
            diagnostics.append(
                Diagnostic(
                    "warning",
                    "truncated-last-line",
                    "last line is incomplete (a crash mid-write?): ignored, as Pi ignores it",
                    number,
                )
            )
        else:
            diagnostics.append(
                Diagnostic("warning", "malformed-line", "line is not valid JSON: skipped, as Pi does", number)
            )
    if not last_terminated and last_parsed_ok and last_line_no > 0:
        diagnostics.append(
            Diagnostic(
                "info", "no-final-newline", "file does not end with a newline (Pi adds one on open)", last_line_no
            )
        )

    tail = (prev_chunk[-TAIL_BYTES:] + last_chunk)[-TAIL_BYTES:]
    original_version = _migrate(header, entries, diagnostics)
    by_id: dict[str, Entry] = {}
    first_seen: dict[str, int] = {}
    for entry in entries:
        entry_id = entry.id
        if entry_id is None:
            diagnostics.append(Diagnostic("warning", "missing-id", "entry has no string id", entry.line))
            continue
        if entry_id in by_id:
            diagnostics.append(
                Diagnostic(
                    "warning",
                    "duplicate-id",
                    f"id {entry_id} also used on line {first_seen[entry_id]}; the later entry wins, as in Pi",
                    entry.line,
                )
            )
        else:
            first_seen[entry_id] = entry.line
        by_id[entry_id] = entry
    return Session(
        path=path,
        header=header,
        entries=entries,
        by_id=by_id,
        diagnostics=diagnostics,
        original_version=original_version,
        synthetic_ids=original_version < 2,
        size=size,
        ends_with_newline=last_terminated,
        torn_last_line=torn,
        tail=tail,
    )


def load_session(path: str | os.PathLike[str]) -> Session:
    """Load a session file. Fatal problems raise SessionError/NotFoundError; others become diagnostics."""
    p = Path(path)
    where = str(path)
    try:
        with open(p, "rb") as stream:
            size = os.fstat(stream.fileno()).st_size
            if size == 0:
                raise SessionError("empty file: not a Pi session", path=where, code="empty-file")
            return parse_session(stream, p, size)
    except FileNotFoundError:
        raise NotFoundError("no such file", path=where, code="not-found") from None
    except PermissionError:
        raise SessionError("permission denied", path=where, code="unreadable") from None
    except IsADirectoryError:
        raise SessionError("is a directory, not a session file", path=where, code="unreadable") from None


def load_session_bytes(data: bytes, path: str | None = None) -> Session:
    """Parse a session held in memory (tests, stdin)."""
    if not data:
        raise SessionError("empty file: not a Pi session", path=path or "<session>")
    chunks = data.split(b"\n")
    lines = [c + b"\n" for c in chunks[:-1]]
    if chunks[-1]:
        lines.append(chunks[-1])
    return parse_session(lines, Path(path) if path else None, len(data))
