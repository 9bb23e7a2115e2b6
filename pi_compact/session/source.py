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

from pi_compact.errors import FileChangedError, SessionError

if TYPE_CHECKING:
    from pi_compact.session.entries import Entry


READ_CHUNK = 1024 * 1024
# The longest line read. Pi reads a session line into one JavaScript string, which holds at most 536,870,888
# UTF-16 units (Node 20's limit; ``PI_MAX_LINE_CHARS``): Pi cannot open a file with a longer line. picompact stops
# at 1 GiB, before holding more of one line in memory (a 2 GB file without a newline is refused after 1 GiB).
MAX_LINE_BYTES = 1024 * 1024 * 1024
PI_MAX_LINE_CHARS = 536_870_888


def read_lines(stream: Any, chunk: int = READ_CHUNK, max_line: int | None = None) -> Iterator[bytes]:
    """The lines of a binary file, split on b"\\n" only, each with its "\\n" (the last one maybe without).

    The same lines as iterating over the file object, at about 60% of the cost on large files: the file is read
    a chunk at a time into one reused buffer and each line is copied out once (long lines are joined from pieces).
    A line longer than ``max_line`` bytes (default ``MAX_LINE_BYTES``) is a SessionError (``line-too-long``, its
    line number counted from the stream's start) as soon as that much of it is read, not after reading it all.
    """
    limit = MAX_LINE_BYTES if max_line is None else max_line
    buf = bytearray(chunk)
    view = memoryview(buf)
    find = buf.find
    carry: list[bytes] = []
    carried = 0  # bytes in ``carry``
    lines = 0  # lines yielded
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
                if carry:
                    if carried + nl + 1 - start > limit:
                        raise _too_long(lines + 1, limit)
                    carry.append(view[start : nl + 1].tobytes())
                    yield b"".join(carry)
                    carry = []
                    carried = 0
                else:
                    if nl + 1 - start > limit:
                        raise _too_long(lines + 1, limit)
                    yield view[start : nl + 1].tobytes()
                lines += 1
                start = nl + 1
            if start < n:
                carried += n - start
                if carried > limit:
                    raise _too_long(lines + 1, limit)
                carry.append(view[start:n].tobytes())
        if carry:
            yield b"".join(carry)
    finally:
        view.release()


def _too_long(line: int, limit: int) -> SessionError:
    return SessionError(
        f"line is longer than {limit:,} bytes: picompact does not read it (Pi cannot read a line of more than "
        f"{PI_MAX_LINE_CHARS:,} characters either: it fails to open the file)",
        line=line,
        code="line-too-long",
    )


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
