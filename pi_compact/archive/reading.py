"""Reading session files for the cross-session index: the complete lines after an indexed prefix (a line without
its newline is a write in progress, read once the newline arrives), parsed into ``entries`` rows and their text in
batches, each with the file's state after it; the CRC-32 of a prefix; whether a file is of a format before v3.
A long read is parsed in a thread of its own (``prefetch``), a bounded number of batches ahead.
"""

from __future__ import annotations

import errno
import functools
import os
import stat
import zlib
from collections.abc import Callable, Generator, Iterator
from typing import Any, TypeVar

from pi_compact.archive.document import body_row, clean, document
from pi_compact.archive.scope import FileState
from pi_compact.session.entries import Entry

READ_CHUNK = 1024 * 1024
BATCH_TEXT = 1024 * 1024  # rows are inserted in batches of about this much text, or of READ_BATCH bytes of file
READ_BATCH = 4 * 1024 * 1024

T = TypeVar("T")


def crc_of(fd: int, length: int) -> int | None:
    from pi_compact.session.index import fingerprint

    return fingerprint(fd, length)


class SkippedRange(bytes):
    """A line ``read_lines`` read past without holding it (longer than ``session.source.max_line_bytes()``, or
    longer than a chunk and starting with a byte no JSON starts with: NULs a crash left): its bytes are a NUL and
    the newline, which no JSON parser reads; ``size`` is its real length, whose CRC ``crc`` reads from the file."""

    fd: int
    offset: int
    size: int

    @classmethod
    def of(cls, fd: int, offset: int, size: int) -> SkippedRange:
        line = cls(b"\x00\n")
        line.fd, line.offset, line.size = fd, offset, size
        return line

    def crc(self, crc: int) -> int:
        """``crc`` continued over the line's bytes, read a chunk at a time."""
        at, end = self.offset, self.offset + self.size
        while at < end:
            chunk = os.pread(self.fd, min(READ_CHUNK, end - at), at)
            if not chunk:
                break
            crc = zlib.crc32(chunk, crc)
            at += len(chunk)
        return crc


def read_lines(fd: int, start: int, end: int) -> Iterator[tuple[int, bytes]]:
    """(offset, line with its b"\\n") for each complete line of the file between ``start`` and ``end``; a line too
    long to hold, or a long one no JSON starts like, as a ``SkippedRange`` (so memory stays bounded whatever the
    file holds, as ``session.source.read_lines`` does for a load)."""
    from pi_compact.session.source import cannot_be_json, max_line_bytes

    limit = max_line_bytes()
    buf = bytearray()
    buf_at = start  # the file offset of buf[0]
    pos = start
    skipping = False  # the line at buf_at is read past: buf holds none of it
    while pos < end:
        chunk = os.pread(fd, min(READ_CHUNK, end - pos), pos)
        if not chunk:
            break
        pos += len(chunk)
        if skipping:
            nl = chunk.find(b"\n")
            if nl < 0:
                continue
            line_end = pos - len(chunk) + nl + 1
            yield buf_at, SkippedRange.of(fd, buf_at, line_end - buf_at)
            skipping, buf, buf_at = False, bytearray(chunk[nl + 1 :]), line_end
            scan = 0
        else:
            scan = len(buf)
            buf += chunk
        at = 0
        while True:
            nl = buf.find(b"\n", scan)
            if nl < 0:
                break
            if nl + 1 - at > limit:
                yield buf_at + at, SkippedRange.of(fd, buf_at + at, nl + 1 - at)
            else:
                yield buf_at + at, bytes(buf[at : nl + 1])
            at = scan = nl + 1
        if at:
            del buf[:at]
            buf_at += at
        if len(buf) > limit or (len(buf) > READ_CHUNK and cannot_be_json(buf[:4096])):
            skipping, buf = True, bytearray()  # the line's start is at buf_at; the rest is read past


def last_newline(fd: int, size: int) -> int:
    """The offset just after the file's last b"\\n" (0 when it has none)."""
    at = size
    while at > 0:
        start = max(0, at - READ_CHUNK)
        chunk = os.pread(fd, at - start, start)
        nl = chunk.rfind(b"\n")
        if nl >= 0:
            return start + nl + 1
        at = start
    return 0


@functools.cache
def _readers() -> tuple[Callable[[bytes], Any], Callable[[Any], bool]]:
    from pi_compact.js import js_truthy
    from pi_compact.session.load import parse_json_line

    return parse_json_line, js_truthy


def _value(line: bytes) -> Any:
    """The JSON value of a session line; None for one Pi skips (blank, not JSON, or a falsy value)."""
    if not line or line.isspace():  # what ``line.strip()`` would leave empty, without copying the line
        return None
    parse_json_line, js_truthy = _readers()
    try:
        value = parse_json_line(line)
    except ValueError:
        return None
    return value if js_truthy(value) else None


def is_legacy(fd: int) -> bool:
    """Whether the file's header (its first parsed line) says a format before v3."""
    from pi_compact.session.migrate import header_version

    for _, line in read_lines(fd, 0, min(os.fstat(fd).st_size, 1024 * 1024)):
        value = _value(line)
        if value is None:
            continue
        if isinstance(value, dict) and value.get("type") == "session" and isinstance(value.get("id"), str):
            try:
                return header_version(value, [], 1)[0] < 3
            except Exception as exc:
                raise unindexable(exc, 1) from exc
        return False
    return False


Batch = tuple[list[tuple[Any, ...]], list[tuple[str, str, float]], FileState, int]  # rows (no id), body, after, bytes


def unindexable(exc: Exception, line: int | None = None) -> OSError:
    """What a file's content made the indexing of it fail with (a bug picompact has with some input), as the
    error of a file that cannot be read: that file is skipped with a warning naming it, the search goes on."""
    where = f"line {line}: " if line is not None else ""
    return OSError(errno.EIO, f"{where}cannot be indexed ({type(exc).__name__}: {str(exc)[:200]})")


def parse(fd: int, end: int, state: FileState) -> Iterator[Batch]:
    """The complete lines of the file after ``state.indexed_to`` as batches of rows, each with the state after it
    (``state`` is advanced in place; a copy goes with each batch). A line that cannot be indexed ends it with an
    OSError (``unindexable``): the batches before it stand."""
    try:
        yield from _parse(fd, end, state)
    except OSError:
        raise
    except Exception as exc:
        raise unindexable(exc, state.lines) from exc


def _parse(fd: int, end: int, state: FileState) -> Iterator[Batch]:
    rows: list[tuple[Any, ...]] = []
    texts: list[tuple[str, str, float]] = []
    size = read = 0
    for offset, line in read_lines(fd, state.indexed_to, end):
        if read >= READ_BATCH or size >= BATCH_TEXT:  # the state so far describes every line before this one
            yield rows, texts, state.copy(), read
            rows, texts, size, read = [], [], 0, 0
        if type(line) is SkippedRange:
            state.crc = line.crc(state.crc)
            length = line.size
        else:
            state.crc = zlib.crc32(line, state.crc)
            length = len(line)
        state.lines += 1
        state.indexed_to = offset + length
        read += length
        if state.status == "not-session":
            continue  # a file that is not a session: its bytes still count, so the next look checks that prefix
        value = _value(line)
        if value is None:
            continue
        if state.status == "pending":
            if isinstance(value, dict) and value.get("type") == "session" and isinstance(value.get("id"), str):
                state.status = "session"
                state.session_id = clean(value["id"])
                cwd = value.get("cwd")
                state.cwd = clean(cwd) if isinstance(cwd, str) else None
            else:
                state.status = "not-session"
            continue
        if not isinstance(value, dict):
            state.leaf, state.no_leaf = None, 1
            continue
        entry = Entry(value, state.lines, state.entries, offset, len(line) - 1)
        state.entries += 1
        state.leaf = clean(entry.id) if entry.id else None
        state.no_leaf = 0 if entry.id else 1
        text, kind, ts, ts_ms, tools, failed = document(entry)
        eid = clean(entry.id) if entry.id else None
        parent = clean(entry.parent_id) if entry.parent_id else None
        rows.append((entry.line, entry.offset, entry.length, eid, parent, kind, ts, ts_ms, tools, failed))
        texts.append(body_row(text, kind, tools))
        size += len(text)
    yield rows, texts, state.copy(), read


END: Any = object()  # the last item of a file in ``parse_new``
Ahead = tuple[str, "os.stat_result | OSError", Any]  # (path, its stat or why it cannot be read, a Batch or END)


def parse_new(paths: list[str]) -> Iterator[Ahead]:
    """Each file parsed from its first byte: (path, stat, batch) items, then (path, stat, END); (path, OSError,
    None) for a file that cannot be read, (path, stat, None) for one of a format before v3."""
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            yield path, exc, None
            continue
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                yield path, OSError(21, "not a regular file"), None
                continue
            if is_legacy(fd):
                yield path, st, None
                continue
            for batch in parse(fd, st.st_size, FileState(0)):
                yield path, st, batch
            yield path, st, END
        except OSError as exc:
            yield path, exc, None
        finally:
            os.close(fd)


class _Failed:
    def __init__(self, error: BaseException) -> None:
        self.error = error


def prefetch(items: Iterator[T], depth: int = 4) -> Generator[T, None, None]:
    """``items`` produced by a thread of their own, at most ``depth`` ahead (memory stays bounded)."""
    import queue
    import threading

    box: queue.Queue[Any] = queue.Queue(depth)
    stop = threading.Event()
    end = object()

    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                box.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def work() -> None:
        try:
            for item in items:
                if not put(item):
                    return
            put(end)
        except BaseException as exc:
            put(_Failed(exc))
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()  # a generator left behind closes its file now

    worker = threading.Thread(target=work, name="picompact-index-parse", daemon=True)
    worker.start()
    try:
        while True:
            item = box.get()
            if item is end:
                return
            if isinstance(item, _Failed):
                raise item.error
            yield item
    finally:
        stop.set()
        worker.join()
