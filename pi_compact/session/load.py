"""Read a session file exactly as Pi 1.6 reads it, and say what it silently skipped.

Pi splits on "\\n" only, skips blank, malformed and falsy (``null``) lines, refuses a file whose first parsed
line is not a session header, takes the id of the last parsed entry as the leaf (none when that entry is not an
object or has no id: then its branch is empty), and migrates v1/v2 files in memory (``session.migrate``).
"""

from __future__ import annotations

import contextlib
import gc
import os
import stat
from array import array
from collections.abc import Iterable, Sequence
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from pi_compact.errors import NotFoundError, SessionError
from pi_compact.js import js_truthy
from pi_compact.session.diagnose import (
    big_line,
    extra_header,
    header_error,
    is_utf8,
    missing_header,
    name_not_string,
    no_leaf,
    non_object_line,
    note_line_ends,
    note_lossy,
    null_line,
    too_long_line,
)
from pi_compact.session.entries import ENTRY_TYPES, MESSAGE_ROLES, UNREAD, Diagnostic, Entry, JsonDict, Session
from pi_compact.session.jsonline import COUNT_BELOW, MAX_DEPTH, SHALLOW_BELOW, cut_depth, nests_deeper, parse_line
from pi_compact.session.loadstate import TAIL_BYTES, Decorate, Heads, MessageFacts, ParseState, releasable
from pi_compact.session.migrate import CURRENT_VERSION, migrate
from pi_compact.session.source import FileSource, SkippedLine, read_lines

if TYPE_CHECKING:
    from pi_compact.session.index import PrefixHash, PrefixState

_ID = attrgetter("id")
_known = {name: name for name in (*ENTRY_TYPES, *MESSAGE_ROLES)}.get
_new_entry = Entry.__new__
BIG_LINE_BYTES = 16 * 1024 * 1024
BOM = b"\xef\xbb\xbf"


def parse_json_line(line: bytes) -> Any:
    """Parse one line as Pi's UTF-8 decoding and JSON.parse read it (see ``jsonline``); ValueError if it throws."""
    return parse_line(line).value


def parse_session(
    stream: Iterable[bytes],
    path: Path | None = None,
    size: int = 0,
    source: FileSource | None = None,
    decorate: Decorate | None = None,
    resume: PrefixState | None = None,
    snapshot: list[PrefixState] | None = None,
    release_bytes: int = 0,
    facts: MessageFacts | None = None,
) -> Session:
    """Parse session lines (each ending in b"\\n", the last one maybe not) into a Session.

    The cyclic garbage collector is paused meanwhile: parsing creates millions of containers and none of them
    form cycles, so its passes would only cost time (a third of the load on large files).

    With a ``source`` (the same file, open), the parsed bodies of message entries that lie before a compaction's
    first kept entry are dropped as the parse goes on (see ``session.source``).

    ``resume`` (with a ``source``) is the state after the file's first lines (``session.index``): ``stream`` then
    holds the rest of the file, and every entry of the prefix is built released. ``snapshot`` receives the state
    after the last complete line, when the file is one that can be indexed. ``release_bytes`` (with a ``source``)
    drops the bodies of message entries as well once they hold that many bytes of the file, compaction or not;
    ``facts(message)`` is then kept for each message so dropped (``Session.facts``).
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _parse_session(stream, path, size, source, decorate, resume, snapshot, release_bytes, facts)
    finally:
        if enabled:
            gc.enable()


def _parse_session(
    stream: Iterable[bytes],
    path: Path | None,
    size: int,
    source: FileSource | None,
    decorate: Decorate | None,
    resume: PrefixState | None = None,
    snapshot: list[PrefixState] | None = None,
    release_bytes: int = 0,
    facts: MessageFacts | None = None,
) -> Session:
    where = str(path) if path is not None else "<session>"
    resumed = resume is not None and source is not None
    state = ParseState.resumed(resume, source, decorate) if resumed else ParseState()  # type: ignore[arg-type]
    state.facts_of = facts
    if snapshot is not None:
        state.heads = Heads.of_prefix(resume) if resumed else Heads()  # type: ignore[arg-type]
    at = _read_lines(state, stream, where, source, decorate, snapshot is not None, release_bytes)
    # Every message entry before ``released_to`` was released with its facts taken; so was the indexed prefix
    facts_known = max(state.released_to, len(resume.ids) if resumed else 0)  # type: ignore[union-attr]
    if snapshot is not None and state.release and state.header is not None:
        if at is None and state.last_terminated and state.lines > 0:
            at = state
        if at is not None and at.prefix_len > 0 and at.lines >= state.header_line:
            snapshot.append(at.prefix_state(decorate, facts_known))
    if state.header is None:
        raise missing_header(where, state.lines, size, state.first_line_bom, state.binary_line, state.too_long_line)
    return _session(state, path, size, resume, facts_known)


def _read_lines(
    state: ParseState,
    stream: Iterable[bytes],
    where: str,
    source: FileSource | None,
    decorate: Decorate | None,
    marking: bool,
    release_bytes: int = 0,
) -> ParseState | None:
    """Read the lines of ``stream`` into ``state``. With ``marking``, return the state before an unterminated
    last line (``ParseState.mark``) once bodies are released, if there is one.

    Each line goes through the loop's stages: where it lies (its number and offset); its parse (orjson, else
    ``_parse_rare``); a value that is no entry (``_not_an_entry``: not an object, the header, another header); the
    entry, its head read as ``Entry.refresh`` reads it (``_entry``); what an index keeps of it (``Heads.add``);
    and, at a compaction, the release of the bodies it leaves behind (``ParseState.release_before``)."""
    # The fields every line reads or writes, as local variables (stored back when the loop ends)
    entries, header, release = state.entries, state.header, state.release
    last_value, last_parsed_ok, last_terminated = state.last_value, state.last_parsed_ok, state.last_terminated
    prev_chunk, last_chunk = state.prev_chunk, state.last_chunk
    number = state.lines
    offset = next_offset = state.prefix_len
    at: ParseState | None = None
    by_id, append = state.by_id, entries.append
    loads, decode_error = orjson.loads, orjson.JSONDecodeError
    diagnostics = state.diagnostics
    heads = state.heads if marking else None
    slots = state.slots if heads is None else None  # the heads take them
    slot = slots.append if slots is not None else None
    for body in stream:  # split on b"\n" only, each line with its "\n" (JSON allows trailing whitespace)
        # Where the line lies
        number += 1
        offset = next_offset
        next_offset += len(body)
        terminated = body.endswith(b"\n")
        if not terminated and marking and release:
            state.lines, state.prefix_len, state.last_value = number - 1, offset, last_value
            state.prev_chunk, state.last_chunk = prev_chunk, last_chunk
            at = state.mark()
        last_terminated = terminated
        prev_chunk, last_chunk = last_chunk, body
        if number == 1 and body.startswith(BOM):
            state.first_line_bom = True
        if body.isspace() or not body:
            last_parsed_ok = True
            continue
        # Its parse: orjson's on the fast path (valid UTF-8, at most 1,024 levels), cut at ``MAX_DEPTH`` levels
        try:
            value = loads(body)
        except decode_error:
            value = _parse_rare(state, body, number, header is None)
            if value is _UNPARSED:
                last_parsed_ok = False
                if type(body) is SkippedLine:  # streamed past unread (see ``source.read_lines``)
                    next_offset += body.size - len(body)
                    last_chunk = body.tail
                continue
        else:
            n = len(body)  # a cheap bound first (see ``jsonline.may_nest_deeper``, inlined: it runs on every line)
            if n >= SHALLOW_BELOW and (
                body.count(b"[") + body.count(b"{") > MAX_DEPTH if n <= COUNT_BELOW else nests_deeper(value)
            ):
                value = _cut_deep(state, body, number, value)
        last_parsed_ok = True
        # A value that is no entry
        if type(value) is not dict or header is None:  # JSON.parse gives exact objects
            last_value, header = _not_an_entry(state, value, number, where, last_value, source)
            release = state.release
            continue
        kind = value.get("type")
        if kind == "session":
            diagnostics.append(extra_header(number))
            continue
        last_value = (value, number)
        # The entry
        entry = _entry(value, kind, number, len(entries), offset, len(body) - terminated, diagnostics)
        append(entry)
        by_id[entry.id] = entry
        if heads is not None:  # what the index keeps, while it is at hand
            heads.add(entry, by_id)
        elif slot is not None:  # where its parent is, as ``Heads.add`` takes it
            parent = entry.parent_id
            slot(0 if parent is None else 1 if (found := by_id.get(parent)) is None else found.index + 2)
        if release and kind == "compaction":  # the bodies a compaction leaves behind
            state.release_before(value.get("firstKeptEntryId"), source, decorate)  # type: ignore[arg-type]
        elif release_bytes and release and offset - entries[state.released_to].offset >= release_bytes:
            state.release_before(_NO_ENTRY, source, decorate, True)  # type: ignore[arg-type]
    state.lines, state.prefix_len, state.last_value = number, next_offset, last_value
    state.last_parsed_ok, state.last_terminated = last_parsed_ok, last_terminated
    state.prev_chunk, state.last_chunk = prev_chunk, last_chunk
    return at


# The most of a file whose parsed bodies a load with ``release_bytes`` holds at once (beside one line): about 40 MiB
# of Python objects
HOLD_BYTES = 16 * 1024 * 1024

_UNPARSED: Any = object()  # ``_parse_rare``: the line does not parse
_NO_ENTRY: Any = object()  # a first kept entry no entry is: ``release_before`` releases up to the last one


def _cut_deep(state: ParseState, body: bytes, number: int, value: Any) -> Any:
    """``value`` with the containers nested deeper than ``MAX_DEPTH`` levels cut (noted), as ``jsonline`` reads it."""
    value, cut = cut_depth(value)
    if cut:
        note_lossy(False, True, body, number, state.diagnostics)
    return value


def _parse_rare(state: ParseState, body: bytes, number: int, before_header: bool) -> Any:
    """The value of a line orjson refuses and JSON.parse reads (see ``jsonline``), or ``_UNPARSED`` (noted): a line
    streamed past unread, too long to hold or no JSON (``source.read_lines``), is noted as such."""
    if type(body) is SkippedLine:
        _skipped(state, body, number, before_header)
        return _UNPARSED
    try:
        parsed = parse_line(body)
    except ValueError:
        state.malformed.append(number)
        if before_header and state.binary_line is None and not is_utf8(body):
            state.binary_line = number
        return _UNPARSED
    if parsed.replaced_utf8 or parsed.depth_cut:
        note_lossy(parsed.replaced_utf8, parsed.depth_cut, body, number, state.diagnostics)
    return parsed.value


def _entry(
    value: JsonDict, kind: Any, number: int, index: int, offset: int, length: int, diagnostics: list[Diagnostic]
) -> Entry:
    """The entry of a parsed object line, its head read as ``Entry.refresh`` reads it (inlined: it runs on every
    line). Each known type and role is one string object, so that later passes over every entry compare them by
    identity and touch no other memory."""
    if length >= BIG_LINE_BYTES:
        diagnostics.append(big_line(length, number))
    entry_id = value.get("id")
    parent = value.get("parentId")
    role = None
    if type(kind) is not str:
        kind = ""
    elif (kind := _known(kind, kind)) == "message":
        msg = value.get("message")
        if type(msg) is dict:
            role = msg.get("role")
            role = _known(role, role) if type(role) is str else None
    elif kind == "session_info" and not isinstance(value.get("name", ""), (str, type(None))):
        diagnostics.append(name_not_string(number))
    entry = _new_entry(Entry)
    entry._raw = value
    entry._source = None
    entry._timestamp = UNREAD
    entry.id = entry_id if type(entry_id) is str else None  # type: ignore[assignment]
    entry.parent_id = parent if type(parent) is str and parent else None
    entry.type = kind
    entry.role = role
    entry.line = number
    entry.index = index
    entry.offset = offset
    entry.length = length
    return entry


def _skipped(state: ParseState, body: SkippedLine, number: int, before_header: bool) -> None:
    """A line read past unread: too long to hold (a warning of its own), or no JSON (a malformed line)."""
    if body.too_long:
        state.diagnostics.append(too_long_line(number, body.size, body.limit))
        if before_header and state.too_long_line is None:
            state.too_long_line = (number, body.limit)
    else:
        state.malformed.append(number)


def _not_an_entry(
    state: ParseState,
    value: Any,
    number: int,
    where: str,
    last_value: tuple[Any, int] | None,
    source: FileSource | None,
) -> tuple[tuple[Any, int] | None, JsonDict | None]:
    """A parsed line that is no entry, before the header or not an object: a falsy value, one that is not an
    object (which Pi takes as an entry), the header (before it, any other line is fatal). The last value and the
    header after it."""
    header = state.header
    if type(value) is not dict:
        if not js_truthy(value):
            state.diagnostics.append(null_line(number))
            return last_value, header
        if header is None:
            raise header_error(where, number, state.first_line_bom)
        state.non_objects.append((number, value))
        state.diagnostics.append(non_object_line(number))
        return (value, number), header
    if header is None:
        if not (value.get("type") == "session" and isinstance(value.get("id"), str)):
            raise header_error(where, number, state.first_line_bom)
        state.header = value
        state.header_line = number
        state.release = source is not None and releasable(value)
        return last_value, value
    raise AssertionError("an object after the header is an entry")


def _session(state: ParseState, path: Path | None, size: int, resume: PrefixState | None, known: int) -> Session:
    """The Session the lines read gave: the lines Pi skips noted, migrated to v3, its entries by id."""
    header, entries, diagnostics = state.header, state.entries, state.diagnostics
    assert header is not None, "a file without a header is refused"
    torn = not state.last_terminated and not state.last_parsed_ok
    note_line_ends(state.malformed, torn, state.lines, state.last_terminated, state.last_parsed_ok, diagnostics)
    tail = (state.prev_chunk[-TAIL_BYTES:] + state.last_chunk)[-TAIL_BYTES:]
    original_version = migrate(header, entries, diagnostics, state.header_line)
    by_id: dict[str, Entry] = state.by_id  # type: ignore[assignment]
    if original_version < CURRENT_VERSION or len(by_id) != len(entries) or None in by_id:
        by_id = _index_ids(entries, diagnostics)  # migrated ids, or ones to report
    parent_slots: Sequence[int] | None = None
    if resume is None and by_id is state.by_id:  # ids all distinct, none migrated: the parents the lines named
        # The heads' slots (the index's) are settled already where they cover every entry (``prefix_state``)
        parent_slots = _settled(state.heads.slots if state.heads is not None else state.slots, entries, by_id)
    # The prefix's parent links hold for the whole file unless a later entry took one of its ids (ids all distinct
    # rules that out) or one of the ids its parents name in vain
    if resume is not None and len(by_id) == len(entries) and not any(p in by_id for p in resume.dangling):
        parent_slots = resume.parent_slots
    leafless = no_leaf(state.last_value, state.non_objects, entries, original_version, diagnostics)
    diagnostics.sort(key=lambda d: (d.line is None, d.line or 0))  # in line order, stable
    return Session(
        path=path,
        header=header,
        entries=entries,
        by_id=by_id,
        diagnostics=diagnostics,
        original_version=original_version,
        synthetic_ids=original_version < 2,
        size=size,
        ends_with_newline=state.last_terminated,
        torn_last_line=torn,
        tail=tail,
        no_leaf=leafless,
        decorated=state.decorated,
        parent_slots=parent_slots,
        mutations=state.mutations,
        mutations_known=known,
        facts=state.facts if state.facts_of is not None else None,
    )


def _settled(slots: array[int] | None, entries: list[Entry], by_id: dict[str, Entry]) -> array[int] | None:
    """``slots`` taken as the lines were read (``Heads.slots``), for every entry, with a parent found only after
    its child (slot 1) looked up again among all the entries; None unless there is one per entry."""
    if slots is None or len(slots) != len(entries):
        return None
    at = -1
    with contextlib.suppress(ValueError):
        while True:
            at = slots.index(1, at + 1)
            found = by_id.get(entries[at].parent_id)  # type: ignore[arg-type]
            if found is not None:
                slots[at] = found.index + 2
    return slots


def _index_ids(entries: list[Entry], diagnostics: list[Diagnostic]) -> dict[str, Entry]:
    """Entries by id, the later of a repeated id winning as in Pi; warnings for entries without an id and for
    repeated ids."""
    by_id = dict(zip(map(_ID, entries), entries, strict=True))
    if len(by_id) == len(entries) and None not in by_id:
        return by_id  # every id present and distinct, as in every file Pi wrote: nothing to report
    by_id = {}
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
    return by_id


def check_regular_file(path: str | os.PathLike[str]) -> int:
    """The size of ``path`` if it is a regular file (or a symlink to one); SessionError naming the file otherwise.

    Checked before opening: opening a FIFO would wait forever for a writer, and a device never ends.
    """
    where = os.fspath(path)
    try:
        st = os.stat(path)
    except OSError as exc:
        raise os_error(exc, where) from None
    if stat.S_ISDIR(st.st_mode):
        raise SessionError("is a directory, not a session file", path=where, code="unreadable")
    if not stat.S_ISREG(st.st_mode):
        kind = "a FIFO" if stat.S_ISFIFO(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode) else "a device"
        raise SessionError(f"not a regular file ({kind}): not a session file", path=where, code="not-regular-file")
    return st.st_size


def os_error(exc: OSError, where: str) -> SessionError:
    """An OS error on a session path as a message naming the file (never a traceback)."""
    if isinstance(exc, FileNotFoundError):
        return NotFoundError("no such file", path=where, code="not-found")
    if isinstance(exc, PermissionError):
        return SessionError("permission denied", path=where, code="unreadable")
    if isinstance(exc, IsADirectoryError):
        return SessionError("is a directory, not a session file", path=where, code="unreadable")
    reason = exc.strerror or type(exc).__name__
    return SessionError(f"cannot read: {reason}", path=where, code="unreadable")


def load_session(
    path: str | os.PathLike[str],
    *,
    keep_bodies: bool = False,
    decorate: Decorate | None = None,
    cache: bool = False,
    release_bytes: int = 0,
    facts: MessageFacts | None = None,
) -> Session:
    """Load a session file. Fatal problems raise SessionError/NotFoundError; others become diagnostics.

    The parsed bodies of old messages are dropped and read back when asked for (see ``session.source``); a caller
    that will read every entry anyway passes ``keep_bodies`` to parse once; one that reads each body once, one at
    a time (lint), passes ``release_bytes`` to drop them whenever they hold that many bytes of the file, compaction
    or not (memory then does not grow with a session that was never compacted; ``HOLD_BYTES`` is such a bound), and
    ``facts(message)`` to keep what it needs of each message so dropped (``Session.facts``).
    ``decorate(entry)`` is kept in ``Session.decorated`` for each entry whose body is dropped, computed while the
    body is still in memory (grep's decorated-only rendering).

    ``cache`` keeps an index of the file in the user's cache and resumes after the part it describes
    (``session.index``; off under ``PICOMPACT_NO_CACHE``). The session is the same as without it, except that every
    body of the indexed part is read back on demand (and, with ``decorate``, every entry of it has its decorated
    lines). It applies to loads that release bodies."""
    p = Path(path)
    where = str(path)
    check_regular_file(p)
    try:
        source = FileSource.open(p, parse_json_line)
    except OSError as exc:
        raise os_error(exc, where) from None
    resumed_lines = 0  # the lines of the prefix an index covered, which the stream read starts after
    try:
        with open(source.fileno(), "rb", buffering=0, closefd=False) as stream:
            st = os.fstat(stream.fileno())
            size = st.st_size
            if size == 0:
                raise SessionError("empty file: not a Pi session", path=where, code="empty-file")
            use_cache = cache and not keep_bodies and hasattr(os, "pread")
            state: PrefixState | None = None
            snapshot: list[PrefixState] | None = None
            read_from: Any = stream
            hashed: PrefixHash | None = None
            if use_cache:
                from pi_compact.session import index

                use_cache = not index.disabled()
                state = index.read(p, stream.fileno(), st, decorate is not None) if use_cache else None
                if state is not None:
                    stream.seek(state.prefix_len)
                    resumed_lines = state.lines
                    source.indexed(lambda: index.drop(p, decorate is not None))
                if use_cache and index.worth_writing(state, size):
                    snapshot = []
                    start, crc = (0, 0) if state is None else (state.prefix_len, state.crc or 0)
                    read_from = hashed = index.PrefixHash(stream, start, crc)
            lines = read_lines(read_from)
            session = parse_session(
                lines, p, size, None if keep_bodies else source, decorate, state, snapshot, release_bytes, facts
            )
            if snapshot and hashed is not None and (state is None or snapshot[0].prefix_len > state.prefix_len):
                snapshot[0].crc = hashed.crc_of(snapshot[0].prefix_len)
                index.write(p, os.fstat(stream.fileno()), snapshot[0])
    except OSError as exc:
        source.close()
        raise os_error(exc, where) from None
    except SessionError as exc:
        source.close()
        if exc.path is None:  # read_lines knows the line (from where it began), not the file
            exc.path = where
            if exc.line is not None:
                exc.line += resumed_lines
        raise
    except BaseException:
        source.close()
        raise
    if not any(not entry.loaded for entry in session.entries):
        source.close()  # nothing to read back: do not hold the file open
    return session


def load_session_bytes(data: bytes, path: str | None = None) -> Session:
    """Parse a session held in memory (tests, stdin)."""
    if not data:
        raise SessionError("empty file: not a Pi session", path=path or "<session>")
    chunks = data.split(b"\n")
    lines = [c + b"\n" for c in chunks[:-1]]
    if chunks[-1]:
        lines.append(chunks[-1])
    return parse_session(lines, Path(path) if path else None, len(data))
