"""Where a released entry's JSON comes back from: the session file, read again at the entry's offset.

Most of a long session lies before its latest compaction, and nothing ``check`` computes looks inside those
entries' bodies (their id, parent, type and role are kept on the entry). The loader therefore parses every line
once (Pi skips lines that do not parse, so each must be tried), keeps the head fields, and drops the parsed body
of old message entries instead of holding hundreds of MB of dicts. When something does ask for such an entry's
``raw``, it is parsed again from the same open file descriptor, so a file renamed over meanwhile cannot answer
for it, and the head fields are compared with the first reading: a file rewritten in place under us is an error
(``FileChangedError``), never a silently different answer; when the load resumed from picompact's index, that
index is deleted first, so that answering again does not meet it.
"""

from __future__ import annotations

import contextlib
import os
import threading
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pi_compact.errors import FileChangedError

if TYPE_CHECKING:
    from pi_compact.session.entries import Entry


READ_CHUNK = 1024 * 1024
# The longest line picompact holds in memory, by default: 128 MiB (``PICOMPACT_MAX_LINE_BYTES`` sets another, in
# bytes). A longer line is streamed past unread and counted as a line that does not parse, with a warning naming
# it: so a command's memory stays bounded (about three times this, for the line, its parsed text and one copy)
# whatever the file holds. Pi reads a session line into one JavaScript string, which holds at most 536,870,888
# UTF-16 units (Node's limit; ``PI_MAX_LINE_CHARS``): Pi reads a line up to that length and cannot open a file
# with a longer one.
MAX_LINE_BYTES = 128 * 1024 * 1024
MAX_LINE_ENV = "PICOMPACT_MAX_LINE_BYTES"
PI_MAX_LINE_CHARS = 536_870_888
# The bytes a JSON text can start with after its whitespace (JSON.parse fails on a line starting with any other)
_JSON_STARTS = frozenset(b'{["-0123456789tfn')
_JSON_SPACE = b" \t\r\n"
TAIL_KEPT = 64


def max_line_bytes() -> int:
    """The longest line held in memory: ``PICOMPACT_MAX_LINE_BYTES`` if it is a positive number, else 128 MiB."""
    value = os.environ.get(MAX_LINE_ENV, "")
    try:
        limit = int(value)
    except ValueError:
        return MAX_LINE_BYTES
    return limit if limit > 0 else MAX_LINE_BYTES


class SkippedLine(bytes):
    """A line ``read_lines`` streamed past without holding it: over the limit (``too_long``), or longer than a
    chunk and starting with a byte no JSON text starts with (NULs a crash left, binary data), which Pi skips as
    malformed. Its bytes are a NUL (and the newline, if it had one), which no JSON parser reads; ``size`` is the
    line's real length, ``tail`` its last bytes (for ``Session.tail``)."""

    size: int
    tail: bytes
    too_long: bool
    limit: int

    @classmethod
    def of(cls, size: int, tail: bytes, terminated: bool, too_long: bool, limit: int) -> SkippedLine:
        line = cls(b"\x00\n" if terminated else b"\x00")
        line.size, line.tail, line.too_long, line.limit = size, tail[-TAIL_KEPT:], too_long, limit
        return line


def cannot_be_json(piece: bytes | bytearray | memoryview) -> bool:
    """Whether a line starting with ``piece`` cannot be JSON (its first byte after whitespace starts no JSON text);
    False while ``piece`` is only whitespace."""
    start = bytes(piece[:4096]).lstrip(_JSON_SPACE)
    return bool(start) and start[0] not in _JSON_STARTS


def read_lines(stream: Any, chunk: int = READ_CHUNK, max_line: int | None = None) -> Iterator[bytes]:
    """The lines of a binary file, split on b"\\n" only, each with its "\\n" (the last one maybe without).

    The same lines as iterating over the file object, at about 60% of the cost on large files: the file is read
    a chunk at a time into one reused buffer and each line is copied out once (long lines are joined from pieces).
    A line longer than ``max_line`` bytes (default ``max_line_bytes()``), or one longer than a chunk that cannot
    be JSON, is not held: it is read past a chunk at a time and given as a ``SkippedLine``.
    """
    limit = max_line_bytes() if max_line is None else max_line
    buf = bytearray(chunk)
    view = memoryview(buf)
    find = buf.find
    carry: list[bytes] = []
    carried = 0  # bytes in ``carry``, or of the line being skipped
    skipping = False  # the line being read is skipped: ``carried`` counts it, ``tail`` keeps its last bytes
    too_long = False
    tail = b""
    try:
        while True:
            n = stream.readinto(buf)
            if not n:
                break
            start = 0
            while True:
                nl = find(b"\n", start, n)
                if nl < 0:
                    break
                if skipping:
                    tail = (tail + view[max(start, nl + 1 - TAIL_KEPT) : nl + 1].tobytes())[-TAIL_KEPT:]
                    yield SkippedLine.of(carried + nl + 1 - start, tail, True, too_long, limit)
                    skipping, carried, tail = False, 0, b""
                elif carry:
                    if carried + nl + 1 - start > limit:
                        carry.append(view[start : nl + 1].tobytes())
                        tail = b"".join(carry[-2:])[-TAIL_KEPT:]
                        yield SkippedLine.of(carried + nl + 1 - start, tail, True, True, limit)
                        tail = b""
                    else:
                        carry.append(view[start : nl + 1].tobytes())
                        yield b"".join(carry)
                    carry = []
                    carried = 0
                elif nl + 1 - start > limit:
                    piece = view[max(start, nl + 1 - TAIL_KEPT) : nl + 1].tobytes()
                    yield SkippedLine.of(nl + 1 - start, piece, True, True, limit)
                else:
                    yield view[start : nl + 1].tobytes()
                start = nl + 1
            if start < n:
                rest = view[start:n]
                if skipping:
                    carried += n - start
                    tail = (tail + rest[-TAIL_KEPT:].tobytes())[-TAIL_KEPT:]
                    continue
                carried += n - start
                carry.append(rest.tobytes())
                # Stop holding a line once it is over the limit, or longer than a chunk and no JSON: read it past
                cut = len(carry) == 2 and cannot_be_json(carry[0] + carry[1][:4096])
                if cut or carried > limit:
                    tail = b"".join(carry[-2:])[-TAIL_KEPT:]
                    skipping, too_long, carry = True, not cut, []
        if skipping:
            yield SkippedLine.of(carried, tail, False, too_long, limit)
        elif carry:
            if carried > limit:
                yield SkippedLine.of(carried, b"".join(carry[-2:]), False, True, limit)
            else:
                yield b"".join(carry)
    finally:
        view.release()


def read_at(fd: int, length: int, offset: int, lock: threading.Lock | None = None) -> bytes:
    """``length`` bytes of the open file ``fd`` at ``offset`` (fewer at the end of the file); ``lock`` guards the
    seek and read used where there is no pread, if other threads read the same descriptor."""
    chunks: list[bytes] = []
    while length > 0:
        if hasattr(os, "pread"):
            chunk = os.pread(fd, length, offset)
        else:  # pragma: no cover - Windows
            with lock if lock is not None else contextlib.nullcontext():
                os.lseek(fd, offset, os.SEEK_SET)
                chunk = os.read(fd, length)
        if not chunk:
            break
        chunks.append(chunk)
        offset += len(chunk)
        length -= len(chunk)
    return b"".join(chunks)


class FileSource:
    """An open session file that released entries are parsed again from (closed when no entry needs it)."""

    def __init__(self, path: str | os.PathLike[str], fd: int, parse: Callable[[bytes], Any]) -> None:
        self.path = Path(path)
        self._fd = fd
        self._parse = parse
        self._lock = threading.Lock()  # lseek + read where pread is missing
        self._finalizer = weakref.finalize(self, os.close, fd)
        self._on_stale: Callable[[], None] | None = None  # an index was used: what drops it (``indexed``)

    def indexed(self, drop: Callable[[], None]) -> None:
        """The load resumed from an index of the file; ``drop`` deletes it, called when a body read back shows
        that the file is not what was read."""
        self._on_stale = drop

    @classmethod
    def open(cls, path: str | os.PathLike[str], parse: Callable[[bytes], Any]) -> FileSource:
        return cls(path, os.open(path, os.O_RDONLY | getattr(os, "O_BINARY", 0)), parse)

    def fileno(self) -> int:
        return self._fd

    def close(self) -> None:
        self._finalizer()

    def read(self, offset: int, length: int) -> bytes:
        """``length`` bytes at ``offset`` (fewer at the end of the file)."""
        return read_at(self._fd, length, offset, self._lock)

    def contains(self, entry: Entry, needles: tuple[bytes, ...]) -> bool:
        """Whether the entry's line holds any of these bytes (a cheap test before parsing it again)."""
        line = self.read(entry.offset, entry.length)
        return any(needle in line for needle in needles)

    def reload(self, entry: Entry) -> Any:
        """The entry's JSON, parsed again from its line; SessionError if the line is no longer the same entry."""
        try:
            value = self._parse(self.read(entry.offset, entry.length))
        except ValueError:
            value = None
        if not isinstance(value, dict) or _head(value) != (entry.id, entry.parent_id, entry.type, entry.role):
            drop, self._on_stale = self._on_stale, None
            if drop is not None:
                drop()  # whatever changed, the index may describe it wrongly: the next load builds a new one
            raise FileChangedError(
                "the file changed on disk while it was being read (entry "
                f"{entry.id} is no longer at byte {entry.offset}); run the command again",
                path=str(self.path),
                line=entry.line,
                index_used=drop is not None,
            )
        return value


def _head(raw: dict[str, Any]) -> tuple[Any, ...]:
    """The head fields as ``Entry`` reads them."""
    entry_id = raw.get("id")
    parent = raw.get("parentId")
    kind = raw.get("type")
    kind = kind if isinstance(kind, str) else ""
    role = None
    if kind == "message":
        msg = raw.get("message")
        role = msg.get("role") if isinstance(msg, dict) else None
    return (
        entry_id if isinstance(entry_id, str) else None,
        parent if isinstance(parent, str) and parent else None,
        kind,
        role if isinstance(role, str) else None,
    )
