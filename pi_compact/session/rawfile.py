"""A session file's bytes, searched through a window instead of held in memory.

grep's prefilter scans the raw file once for a literal; keeping a copy of a 100 MB file next to the parsed
session doubles the peak memory for no gain. ``FileBytes`` reads the file a window at a time (the last window
is kept, so the many nearby searches of a dense pattern cost one read) and answers the few questions the
prefilter asks: ``find``, a compiled bytes pattern's ``search``, ``findall`` and slices; and, for a pattern whose
matches never cross a line, ``search_block``/``search_lines``, a block of whole lines at a time. Every answer is the
one the whole file as ``bytes`` would give; the tests compare the two.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

WINDOW = 2 * 1024 * 1024


class FileBytes:
    """The first ``size`` bytes of a file, read on demand (a window at a time)."""

    def __init__(self, path: str | os.PathLike[str], size: int, window: int | None = None) -> None:
        self.path = Path(path)
        self.size = size
        self.window = max(window if window is not None else WINDOW, 1)
        self._at = -1  # start of the cached window
        self._data = b""
        self._lines_at = -1  # start of the block of whole lines in ``_lines`` (search_lines)
        self._lines_len = 0
        self._lines = bytearray()
        self._skipped_to = 0  # the end of a line too long to search, read past (``search_block``)

    def __len__(self) -> int:
        return self.size

    def read(self, start: int, end: int) -> bytes:
        """Bytes ``start:end`` (clipped to the file's size), read from the file."""
        start, end = max(start, 0), min(end, self.size)
        if end <= start:
            return b""
        with open(self.path, "rb") as stream:
            stream.seek(start)
            return stream.read(end - start)

    def __getitem__(self, key: slice) -> bytes:
        if not isinstance(key, slice) or key.step not in (None, 1):
            raise TypeError("FileBytes supports plain slices only")
        start, stop, _ = key.indices(self.size)
        return self.read(start, stop)

    def _load(self, at: int, overlap: int) -> tuple[int, bytes]:
        """The window starting at ``at`` (a multiple of ``window``), plus ``overlap`` bytes after it."""
        if self._at != at or len(self._data) < min(self.window + overlap, self.size - at):
            self._data = self.read(at, at + self.window + overlap)
            self._at = at
        return at, self._data

    def _scan(self, start: int, overlap: int, probe: Any) -> int:
        """The first offset >= ``start`` where ``probe(chunk, pos)`` finds something (a match no longer than
        ``overlap + 1`` bytes), or -1. A match starting in a window lies wholly within it and its overlap."""
        start = max(start, 0)
        at = start - start % self.window
        while at < self.size:
            base, chunk = self._load(at, overlap)
            found = probe(chunk, max(start - base, 0))
            if found >= 0 and found < self.window:
                return base + found
            at += self.window
        return -1

    def find(self, sub: bytes, start: int = 0) -> int:
        """Like ``bytes.find``."""
        if not sub:
            return min(max(start, 0), self.size) if start <= self.size else -1
        return self._scan(start, len(sub) - 1, lambda chunk, pos: chunk.find(sub, pos))

    def search(self, pattern: Any, start: int, longest: int) -> int:
        """Start of the first match of a compiled bytes pattern at or after ``start``, or -1; every match of the
        pattern must be at most ``longest`` bytes and independent of what surrounds it (no anchors)."""

        def probe(chunk: bytes, pos: int) -> int:
            found = pattern.search(chunk, pos)
            return found.start() if found else -1

        return self._scan(start, max(longest - 1, 0), probe)

    def search_lines(self, pattern: Any, start: int) -> int:
        """Start of the first match of a compiled bytes pattern at or after ``start``, or -1, for a pattern whose
        matches never hold b"\\n" (however long they are): searched a block of whole lines at a time, read into
        one reused buffer (a fresh 2 MB ``bytes`` per block costs more to allocate than to search)."""
        start = max(start, 0)
        while start < self.size:
            hit, start = self.search_block(pattern, start)
            if hit >= 0:
                return hit
        return -1

    def search_block(self, pattern: Any, start: int) -> tuple[int, int]:
        """``search_lines`` within the block of whole lines that starts at ``start`` (or holds it): the match's
        start or -1, and where the block ends. Several patterns searched block by block read the file once.

        A line the loader does not hold (``source.read_lines``: longer than the limit, or longer than a chunk and
        no JSON) is no entry: it is read past unsearched, as a block without a match."""
        if start >= self.size:
            return -1, self.size
        if not (self._lines_at <= start < self._lines_at + self._lines_len):
            self._read_lines(start)
            if self._skipped_to > start:
                return -1, self._skipped_to
            if not self._lines_len:
                return -1, self.size  # the file is shorter than it was: nothing more to search
        found = pattern.search(self._lines, start - self._lines_at, self._lines_len)
        return (self._lines_at + found.start() if found is not None else -1), self._lines_at + self._lines_len

    def _read_lines(self, start: int) -> None:
        """Fill the buffer from ``start`` to the end of the line that holds byte ``start + window`` (or to the end
        of the file); for a line from ``start`` that is not held, set ``_skipped_to`` past it instead."""
        from pi_compact.session.source import READ_CHUNK, cannot_be_json, max_line_bytes

        if len(self._lines) < self.window:
            self._lines = bytearray(self.window)
        self._skipped_to = 0
        filled = 0
        limit = max_line_bytes()
        with open(self.path, "rb", buffering=0) as stream:
            stream.seek(start)
            while True:
                if filled == len(self._lines):  # a line longer than the buffer
                    no_json = (
                        filled >= READ_CHUNK
                        and cannot_be_json(self._lines)
                        and (start == 0 or self.read(start - 1, start) == b"\n")
                    )
                    if filled >= limit or no_json:
                        self._lines_at, self._lines_len = start, 0
                        self._skipped_to = self._line_end(stream, start + filled)
                        return
                    grown = bytearray(min(2 * len(self._lines), limit + 1))
                    grown[:filled] = self._lines
                    self._lines = grown
                room = min(len(self._lines), self.size - start) - filled
                got = stream.readinto(memoryview(self._lines)[filled : filled + room]) if room > 0 else 0
                filled += got or 0
                if not got or start + filled >= self.size:
                    break  # the end of the file (or of the part of it this object covers)
                cut = self._lines.rfind(b"\n", filled - (got or 0), filled)
                if cut >= 0:
                    filled = cut + 1
                    break
        self._lines_at, self._lines_len = start, filled

    def _line_end(self, stream: Any, at: int) -> int:
        """The offset after the first b"\\n" at or after ``at`` (``stream`` positioned there), or the size."""
        buf = memoryview(self._lines)[: self.window]
        while at < self.size:
            got = stream.readinto(buf[: min(self.window, self.size - at)])
            if not got:
                break
            nl = self._lines.find(b"\n", 0, got)
            if nl >= 0:
                return at + nl + 1
            at += got
        return self.size

    def findall(self, pattern: Any, longest: int) -> set[bytes]:
        """The distinct matches of a compiled bytes pattern whose matches are at most ``longest`` bytes long."""
        out: set[bytes] = set()
        overlap = max(longest - 1, 0)
        for at in range(0, self.size, self.window):
            _, chunk = self._load(at, overlap)
            out.update(pattern.findall(chunk))
        return out


def raw_search(data: bytes | FileBytes, pattern: Any, start: int, longest: int) -> int:
    """Start of the first match at or after ``start`` in file bytes held either way, or -1."""
    if isinstance(data, FileBytes):
        return data.search(pattern, start, longest)
    found = pattern.search(data, start)
    return found.start() if found else -1


def raw_search_block(data: bytes | FileBytes, pattern: Any, start: int) -> tuple[int, int]:
    """``FileBytes.search_block`` for file bytes held either way (bytes are one block)."""
    if isinstance(data, FileBytes):
        return data.search_block(pattern, start)
    found = pattern.search(data, start)
    return (found.start() if found else -1), len(data)
