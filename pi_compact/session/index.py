"""An index of a session file's already-read prefix, kept in the user's cache so that reading the file again after
a few appended lines parses only those lines.

Pi only ever appends to a session file, and people run ``picompact check`` again and again on the same growing
file. The loader's state after the last complete line (``PrefixState``: the header, per entry its line, byte
offset, length, id, parentId, type and role and which entry its parentId names, the warnings found so far, the
malformed lines, the file modifications its messages record for the file evidence: ``session.mutations``) is
written to ``$XDG_CACHE_HOME/picompact/`` (or ``~/.cache/picompact/``), one file per session path. The next
load that finds an index which still describes the file resumes after the prefix; every body in the prefix is read
back from the file on demand, as the loader already does for old messages (``session.source``),
and a body read back is checked against the entry's head fields. The branch walk follows the prefix's parent
links by number (``Session.parent_slots``) unless a later line reuses one of its ids or gives an id its parents
name in vain. A load that resumed writes the
index again only once the part after it is worth it (``worth_writing``): a few appended lines are parsed again by
the next run instead, which costs less than writing the index.

When an index is used (every key must agree, otherwise it is ignored and rebuilt):

- the same path, device and inode (a file renamed over the old one, as a rewrite does, has another inode);
- the file is at least as long as the prefix, and when its size is the one recorded, its mtime is too (an edit
  in place that keeps the length);
- the CRC-32 of the whole prefix agrees (``fingerprint``, read again at every use). Every byte of what the index
  describes is compared, so any change to it is seen, whatever it keeps (inode, length, mtime) and wherever it
  lies, except with a chance of one in 2**32 per change: an accident, never a forger, is what it guards against
  (who can write the session can write a wrong one anyway). It is ISA-L's CRC-32 (``isal``; the same checksum
  as zlib's, which is used where isal is missing), about 10 GB/s: 9 ms for a 100 MB prefix, most of it copying
  the bytes out of the page cache, against 45 ms with zlib and 300 ms for a cold run. The CRC written is that of
  the very bytes the parse read (``PrefixHash``), so an edit made while the index is built cannot end up
  described by it either;
- the index file itself: a magic header, the format version, the session it describes (path, device, inode), the
  picompact version that wrote it, and checksums of its body; then its fields are checked for shape and type, and
  every line number, offset and length against the file's size (``index_format``). A corrupt, truncated or
  foreign file is ignored.

Why no cheaper rule: checking only the prefix's last block (its hash) with the inode, size and mtime would do for
a file that is only ever appended to, but it cannot tell an append from a rewrite in place that also grows the
file. Both keep the inode and change the size and the mtime, and such a rewrite can leave the prefix's last block
as it was (an editor that saves in place, a tool that changes one early line and appends, ``dd conv=notrunc``);
an mtime can also be set back (``touch -d``, ``rsync -t``, ``tar x``) and is coarse on some file systems. Any rule
that reads less than the whole prefix therefore answers from a stale index for some rewritten file, which breaks
"never a different answer from a cold run"; sampling has the same hole. The whole prefix is read, as fast as a
checksum can be read.

What is not seen up front: a change to the prefix that leaves its CRC-32 as it was (one in 2**32), and a change
made while the command runs, after the CRC was checked (a cold run reading a file under change has the same
problem). A body read back from such a file fails its head check (``source.FileSource.reload``): the index is then
deleted (``drop``) and the CLI answers again without it (``cli.core``), so a stale index costs one cold run, never
a different answer and never a failure that repeats. ``--no-cache`` or ``PICOMPACT_NO_CACHE=1`` leave the cache
out entirely.

The cache may be shared, so nothing in it is trusted for what it claims to be (``cachedir``): an index is read
only from a directory of this user's, as a regular file of this user's of at most ``size_limit`` bytes. Anything
else is no index: the load answers from the file alone, as a cold run does.

Only v3 files are indexed (older ones are migrated in memory, which changes bodies read back). Writing goes to a
temporary file renamed over the index, so two processes at once each see a whole index or none. Each write also
tidies the directory (``cachedir.sweep``): temporaries of writes that did not finish and the indexes of sessions
that are gone are deleted, so that grep's index, which holds text of the session, does not outlive it.
"""

from __future__ import annotations

import contextlib
import os
import struct
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

try:  # ISA-L's CRC-32 (SIMD): the same checksum as zlib's, 3 to 4 times as fast; zlib's where it is not installed
    from isal.isal_zlib import crc32
except ImportError:  # pragma: no cover - isal is a dependency; a tree without it is only slower
    from zlib import crc32

from pi_compact.session.cachedir import index_name, open_cache, read_bounded, sweep, write_new
from pi_compact.session.index_format import Coded, decode_fields, encode_state, owner, seal, split, unpack, well_formed
from pi_compact.session.mutations import Facts
from pi_compact.version import __version__

NO_CACHE_ENV = "PICOMPACT_NO_CACHE"
SIZE_FACTOR = 4  # an index is at most this many times the size of its session, plus SIZE_SLACK (``size_limit``)
SIZE_SLACK = 1024 * 1024
HASH_CHUNK = 1024 * 1024  # ``fingerprint`` reads the prefix this much at a time into one buffer


class PrefixState:
    """The loader's state after the last complete line of a file's prefix (see ``load._parse_session``)."""

    __slots__ = (
        "_parents",
        "_roles",
        "_types",
        "coded",
        "crc",
        "dangling",
        "decorated",
        "diagnostics",
        "header",
        "header_line",
        "ids",
        "last_tail",
        "last_value",
        "last_value_line",
        "length",
        "line",
        "lines",
        "malformed",
        "mutations",
        "offset",
        "parent_slots",
        "prefix_len",
        "prev_tail",
        "released_to",
    )

    def __init__(
        self,
        *,
        prefix_len: int,  # bytes up to and including the last "\n" read
        lines: int,  # physical lines in the prefix
        header: dict[str, Any],
        header_line: int,
        last_value: Any,  # the last parsed non-header value: for an object only its "id" is kept
        last_value_line: int,  # 0: none
        released_to: int,
        malformed: list[int],
        diagnostics: list[tuple[str, str, str, int | None]],  # (level, code, message, line) found reading lines
        prev_tail: bytes,
        last_tail: bytes,
        # Per entry, in file order
        line: Sequence[int],
        offset: Sequence[int],
        length: Sequence[int],
        ids: list[str | None],
        # The parents, types and roles as lists, or None with ``coded``: as the index holds them, made into lists
        # only when asked for
        parents: list[str | None] | None,
        types: list[str] | None,
        roles: list[str | None] | None,
        # Per entry, where its parentId leads among the prefix's entries (``Session.parent_slots``), and the parent
        # ids that lead nowhere in it
        parent_slots: Sequence[int],
        dangling: list[str],
        # Per entry, its decorated-only rendered lines (grep's index; see ``load_session(decorate=...)``), or None
        decorated: list[list[str]] | None = None,
        # The CRC-32 of the prefix's bytes (``fingerprint``), when known: read from the index, or from the parse
        crc: int | None = None,
        # (entry index, its facts) of every entry whose body records tracked modifications (``session.mutations``)
        mutations: Sequence[tuple[int, Facts]] = (),
        coded: Coded | None = None,
    ) -> None:
        self.prefix_len = prefix_len
        self.lines = lines
        self.header = header
        self.header_line = header_line
        self.last_value = last_value
        self.last_value_line = last_value_line
        self.released_to = released_to
        self.malformed = malformed
        self.diagnostics = diagnostics
        self.prev_tail = prev_tail
        self.last_tail = last_tail
        self.line = line
        self.offset = offset
        self.length = length
        self.ids = ids
        self._parents = parents
        self._types = types
        self._roles = roles
        self.coded = coded
        self.parent_slots = parent_slots
        self.dangling = dangling
        self.decorated = decorated
        self.crc = crc
        self.mutations = mutations

    @property
    def parents(self) -> list[str | None]:
        if self._parents is None:
            assert self.coded is not None, "a state without its parents has them coded"
            self._parents = self.coded.parents(self.ids, self.parent_slots)
        return self._parents

    @property
    def types(self) -> list[str]:
        if self._types is None:
            assert self.coded is not None, "a state without its types has them coded"
            self._types = self.coded.types()
        return self._types

    @property
    def roles(self) -> list[str | None]:
        if self._roles is None:
            assert self.coded is not None, "a state without its roles has them coded"
            self._roles = self.coded.roles()
        return self._roles


REWRITE_FRACTION = 64  # an index is written again once the part after it is this fraction of what it covers


def worth_writing(state: PrefixState | None, size: int) -> bool:
    """Whether a load of a file of ``size`` bytes that resumed from ``state`` (None: no usable index) should write
    the index again. Writing costs about what the index covers; a few appended lines cost a re-run next to
    nothing to parse again, so the index is rewritten only once the part after it has grown to 1/64 of it (or 64
    KiB, whichever is more)."""
    return state is None or size - state.prefix_len >= max(state.prefix_len // REWRITE_FRACTION, 64 * 1024)


def disabled() -> bool:
    """``PICOMPACT_NO_CACHE`` set to anything but "" or "0" turns the cache off (so does ``suspended``)."""
    return _suspended or os.environ.get(NO_CACHE_ENV, "") not in ("", "0")


def size_limit(session_size: int) -> int:
    """The largest index read or written for a session of ``session_size`` bytes: grep's index, the larger, holds
    about a tenth of its session (its decorated lines, and per entry a few numbers and ids)."""
    return SIZE_FACTOR * session_size + SIZE_SLACK


def fingerprint(fd: int, length: int) -> int | None:
    """The CRC-32 of the first ``length`` bytes of the open file (None when it has fewer), read into one reused
    buffer (see the module's doc for why all of them)."""
    buf = bytearray(min(HASH_CHUNK, max(length, 1)))
    view = memoryview(buf)
    crc = at = 0
    try:
        while at < length:
            want = view[: min(len(buf), length - at)]
            if hasattr(os, "preadv"):
                got = os.preadv(fd, [want], at)
            else:  # pragma: no cover - no preadv (macOS before 11)
                chunk = os.pread(fd, len(want), at)
                got = len(chunk)
                want[:got] = chunk
            if not got:
                return None
            crc = crc32(want[:got], crc)
            at += got
    finally:
        view.release()
    return crc


class PrefixHash:
    """A binary stream (what ``source.read_lines`` reads) that keeps the CRC-32 of what was read up to its last
    b"\n": the fingerprint of the prefix a snapshot of the same parse describes, computed from the very bytes the
    parse read. ``start`` and ``crc``: where the stream is, and the CRC of the file before it (a resumed load)."""

    def __init__(self, stream: Any, start: int = 0, crc: int = 0) -> None:
        self._stream = stream
        self._read = start
        self._running = crc  # of the file's bytes read so far (those after the last b"\n" too: none are held)
        self.through = start  # the offset after the last b"\n" read
        self.crc = crc  # of the file's bytes before ``through``

    def readinto(self, buf: bytearray) -> int:
        n: int = self._stream.readinto(buf)
        if not n:
            return 0
        view = memoryview(buf)[:n]
        nl = buf.rfind(b"\n", 0, n)
        if nl < 0:
            self._running = crc32(view, self._running)
        else:
            self.crc = crc32(view[: nl + 1], self._running)
            self._running = crc32(view[nl + 1 :], self.crc) if nl + 1 < n else self.crc
            self.through = self._read + nl + 1
        view.release()
        self._read += n
        return n

    def crc_of(self, prefix_len: int) -> int | None:
        """The CRC-32 of the file's first ``prefix_len`` bytes, if that is where the last b"\n" read ends."""
        return self.crc if prefix_len == self.through else None


def _keys(path: Path, st: os.stat_result) -> dict[str, Any]:
    return {"path": os.path.abspath(path), "dev": st.st_dev, "ino": st.st_ino}


def read(path: Path, fd: int, st: os.stat_result, decorated: bool = False) -> PrefixState | None:
    """The index of ``path`` (open as ``fd``, ``st`` its fstat) if one exists and still describes the file;
    ``decorated``: grep's index, with every entry's decorated lines."""
    try:
        dir_fd = open_cache(create=False)
    except (OSError, RuntimeError):  # RuntimeError: no home directory to find a cache in
        return None
    if dir_fd is None:
        return None
    try:
        data = read_bounded(dir_fd, index_name(path, decorated), size_limit(st.st_size))
    finally:
        os.close(dir_fd)
    if data is None:
        return None
    try:
        state = _decode(data, path, fd, st)
    except Exception:  # whatever is wrong with a cache file, it is ignored and rebuilt
        return None
    if state is not None and (state.decorated is not None) != decorated:
        return None
    return state


def drop(path: Path, decorated: bool = False) -> None:
    """Delete the index of ``path`` (one found not to describe the file after all); nothing when there is none."""
    with contextlib.suppress(OSError, RuntimeError):
        dir_fd = open_cache(create=False)
        if dir_fd is None:
            return
        try:
            os.unlink(index_name(path, decorated), dir_fd=dir_fd)
        finally:
            os.close(dir_fd)


_suspended = False


@contextlib.contextmanager
def suspended() -> Iterator[None]:
    """Within it, loads neither read nor write an index (as under ``PICOMPACT_NO_CACHE``): the CLI's second answer
    after a stale index was found (``cli.core``)."""
    global _suspended
    saved, _suspended = _suspended, True
    try:
        yield
    finally:
        _suspended = saved


def _decode(data: bytes, path: Path, fd: int, st: os.stat_result) -> PrefixState | None:
    parts = split(data)
    if parts is None or parts[0] != owner(path, st):
        return None
    doc, columns = unpack(parts[1])
    if doc.get("picompact") != __version__ or doc.get("keys") != _keys(path, st):
        return None
    prefix_len = doc["prefix_len"]
    if type(prefix_len) is not int or not 0 < prefix_len <= st.st_size:
        return None
    if st.st_size == doc["size"] and st.st_mtime_ns != doc["mtime_ns"]:
        return None  # the same length but written since: an edit in place
    crc = doc["crc"]
    if type(crc) is not int or crc != fingerprint(fd, prefix_len):
        return None
    state = PrefixState(prefix_len=prefix_len, crc=crc, **decode_fields(doc, columns))
    return state if well_formed(state) else None


def write(path: Path, st: os.stat_result, state: PrefixState) -> None:
    """Write the index of ``path`` atomically (a temporary file renamed over it); any failure leaves no index.
    ``state.crc`` must be the fingerprint of the bytes it was parsed from (``PrefixHash``): without it, nothing is
    written."""
    if state.crc is None:
        return
    meta = {"picompact": __version__, "keys": _keys(path, st), "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    try:
        body = encode_state(state, meta)
    except (TypeError, ValueError, OverflowError):  # a state the format cannot hold exactly
        return
    try:
        data = seal(body, owner(path, st))
    except struct.error:  # a device or inode number past 64 bits
        return
    if len(data) > size_limit(st.st_size):
        return  # it would be refused when read
    # A cache that cannot be written is only a slower next run.
    with contextlib.suppress(OSError, RuntimeError):
        dir_fd = open_cache(create=True)
        if dir_fd is None:
            return  # not a directory of this user's: nothing is written there
        try:
            sweep(dir_fd, time.time())
            write_new(dir_fd, index_name(path, state.decorated is not None), data)
        finally:
            os.close(dir_fd)
