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
  every line number, offset and length against the file's size. A corrupt, truncated or foreign file is ignored.

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

The cache may be shared (``XDG_CACHE_HOME`` pointing at a directory others can write), so nothing in it is trusted
for what it claims to be (``_open_cache``, ``_read_bounded``): the directory must be a real directory owned by the
user (made mode 0700 whatever the umask), and an index a regular file owned by the user, opened without following
a symlink and without blocking (a FIFO planted at its name is refused at once), of at most ``size_limit`` bytes.
Anything else is no index: the load answers from the file alone, as a cold run does.

Only v3 files are indexed (older ones are migrated in memory, which changes bodies read back). Writing goes to a
temporary file renamed over the index, so two processes at once each see a whole index or none. Each write also
tidies the directory (``_sweep``): temporaries of writes that did not finish (their process is gone, or they are an
hour old) and the indexes of sessions that are gone (no file at the path, or another file) are deleted, so that
grep's index, which holds text of the session, does not outlive it.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import struct
import sys
import time
import zlib
from array import array
from collections.abc import Iterator, Sequence
from itertools import chain
from pathlib import Path
from typing import Any

import orjson

try:  # ISA-L's CRC-32 (SIMD): the same checksum as zlib's, 3 to 4 times as fast; zlib's where it is not installed
    from isal.isal_zlib import crc32
except ImportError:  # pragma: no cover - isal is a dependency; a tree without it is only slower
    from zlib import crc32

from pi_compact import __version__
from pi_compact.session.mutations import Facts
from pi_compact.session.source import read_at

NO_CACHE_ENV = "PICOMPACT_NO_CACHE"
MAGIC = b"picompact-index\n"
FORMAT = 6
_HEAD = struct.Struct(">HII")  # format version, CRC-32 and Adler-32 of what follows (the owner and the body)
_OWNER = struct.Struct(">QQI")  # the session's device, inode and the length of its path (then the path's bytes)
MAX_OWNER_PATH = 64 * 1024
SIZE_FACTOR = 4  # an index is at most this many times the size of its session, plus SIZE_SLACK (``size_limit``)
SIZE_SLACK = 1024 * 1024
STALE_TEMPORARY_SECONDS = 3600  # a temporary file this old is an abandoned write, whoever made it
_INDEX_NAME = re.compile(r"[0-9a-f]{16}(?:\.grep)?\.idx")
_TEMPORARY_NAME = re.compile(r"\.tmp-(\d{1,10})-\d+-\d+\.idx")
HASH_CHUNK = 1024 * 1024  # ``fingerprint`` reads the prefix this much at a time into one buffer


class PrefixState:
    """The loader's state after the last complete line of a file's prefix (see ``load._parse_session``)."""

    __slots__ = (
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
        "parents",
        "prefix_len",
        "prev_tail",
        "released_to",
        "roles",
        "types",
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
        parents: list[str | None],
        types: list[str],
        roles: list[str | None],
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
        self.parents = parents
        self.types = types
        self.roles = roles
        self.parent_slots = parent_slots
        self.dangling = dangling
        self.decorated = decorated
        self.crc = crc
        self.mutations = mutations


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


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/picompact`` (when that is an absolute path), else ``~/.cache/picompact``."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".cache"
    return root / "picompact"


class _Digest:
    """CRC-32 and Adler-32 side by side (64 bits): a change in the bytes shows; zlib is loaded at start-up anyway,
    where hashlib would cost its import on every run. Nothing here guards against a forger: only files owned by the
    user are read (``_read_bounded``), and who can write those can write the session file too."""

    def __init__(self, data: bytes = b"") -> None:
        self.crc = zlib.crc32(data)
        self.adler = zlib.adler32(data)

    def update(self, data: bytes) -> None:
        self.crc = zlib.crc32(data, self.crc)
        self.adler = zlib.adler32(data, self.adler)

    def hexdigest(self) -> str:
        return f"{self.crc:08x}{self.adler:08x}"


def index_name(path: Path, decorated: bool = False) -> str:
    """The name of a session path's index in the cache directory (two paths sharing one only take turns at it: the
    path is a key too). grep's index, which also holds every entry's decorated lines, is a file of its own."""
    kind = ".grep" if decorated else ""
    return f"{_Digest(os.fsencode(os.path.abspath(path))).hexdigest()}{kind}.idx"


def index_path(path: Path, decorated: bool = False) -> Path:
    """The index file of a session path (see ``index_name``)."""
    return cache_dir() / index_name(path, decorated)


def size_limit(session_size: int) -> int:
    """The largest index read or written for a session of ``session_size`` bytes: grep's index, the larger, holds
    about a tenth of its session (its decorated lines, and per entry a few numbers and ids)."""
    return SIZE_FACTOR * session_size + SIZE_SLACK


def _open_cache(create: bool) -> int | None:
    """The cache directory, opened (the caller closes it), if it is a directory owned by this user (not a symlink
    to one); None otherwise. ``create`` makes it (mode 0700, whatever the umask) and takes group and other
    permissions off one that has them. OSError when it cannot be made; RuntimeError when there is no home."""
    directory = cache_dir()
    created = False
    if create:
        _make_parents(directory.parent)
        try:
            os.mkdir(directory, 0o700)
        except FileExistsError:
            created = False  # there already: checked below like any other
        else:
            created = True
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(directory, flags)
    except PermissionError:
        if not created:
            return None
        os.chmod(directory, 0o700)  # an umask that takes the owner's own permissions away
        fd = os.open(directory, flags)
    except OSError:
        return None
    st = os.fstat(fd)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        os.close(fd)
        return None
    if create and stat.S_IMODE(st.st_mode) != 0o700:
        os.fchmod(fd, 0o700)
    return fd


def _make_parents(directory: Path) -> None:
    """Make ``directory`` and what is missing above it mode 0700, whatever the umask (``~/.cache``, made by
    picompact first, is then not open to others: the XDG base directory rule); existing ones are left alone."""
    missing: list[Path] = []
    while not directory.is_dir() and directory != directory.parent:
        missing.append(directory)
        directory = directory.parent
    for path in reversed(missing):
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            continue
        if stat.S_IMODE(os.stat(path).st_mode) != 0o700:
            os.chmod(path, 0o700)  # an umask that took the owner's own permissions away


def _read_bounded(dir_fd: int, name: str, limit: int) -> bytes | None:
    """The whole of a file in the cache directory if it is a regular file owned by this user of at most ``limit``
    bytes; None for anything else (a symlink, a FIFO, a device, another user's file, a file too large)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_size > limit:
            return None
        data = read_at(fd, st.st_size, 0)
        return data if len(data) == st.st_size else None
    finally:
        os.close(fd)


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
        self._pending: list[bytes] = []  # read after the last b"\n" so far
        self.through = start  # the offset after the last b"\n" read
        self.crc = crc  # of the file's bytes before ``through``

    def readinto(self, buf: bytearray) -> int:
        n: int = self._stream.readinto(buf)
        if not n:
            return 0
        view = memoryview(buf)[:n]
        nl = buf.rfind(b"\n", 0, n)
        if nl < 0:
            self._pending.append(view.tobytes())
        else:
            crc = self.crc
            for piece in self._pending:
                crc = crc32(piece, crc)
            self.crc = crc32(view[: nl + 1], crc)
            self._pending = [view[nl + 1 :].tobytes()] if nl + 1 < n else []
            self.through = self._read + nl + 1
        view.release()
        self._read += n
        return n

    def crc_of(self, prefix_len: int) -> int | None:
        """The CRC-32 of the file's first ``prefix_len`` bytes, if that is where the last b"\n" read ends."""
        return self.crc if prefix_len == self.through else None


def owner(path: Path, st: os.stat_result) -> bytes:
    """The record of the session an index describes (its device, inode and path), read alone by ``_sweep``."""
    encoded = os.fsencode(os.path.abspath(path))
    return _OWNER.pack(st.st_dev, st.st_ino, len(encoded)) + encoded


def seal(body: bytes, owner: bytes) -> bytes:
    """An index file holding ``body``: the magic, the format version, the checksums of what follows, the owner
    record, then the body."""
    crc, adler = zlib.crc32(body, zlib.crc32(owner)), zlib.adler32(body, zlib.adler32(owner))
    return MAGIC + _HEAD.pack(FORMAT, crc, adler) + owner + body


def split(data: bytes) -> tuple[bytes, bytes] | None:
    """The owner record and the body of an index file, or None when it is not one of this format (its magic, its
    version, its checksums)."""
    start = len(MAGIC) + _HEAD.size
    if not data.startswith(MAGIC) or len(data) < start + _OWNER.size:
        return None
    version, crc, adler = _HEAD.unpack_from(data, len(MAGIC))
    if version != FORMAT:
        return None
    rest = memoryview(data)[start:]
    if zlib.crc32(rest) != crc or zlib.adler32(rest) != adler:
        return None
    end = start + _OWNER.size + _OWNER.unpack_from(data, start)[2]
    return data[start:end], data[end:]


def _keys(path: Path, st: os.stat_result) -> dict[str, Any]:
    return {"path": os.path.abspath(path), "dev": st.st_dev, "ino": st.st_ino}


def read(path: Path, fd: int, st: os.stat_result, decorated: bool = False) -> PrefixState | None:
    """The index of ``path`` (open as ``fd``, ``st`` its fstat) if one exists and still describes the file;
    ``decorated``: grep's index, with every entry's decorated lines."""
    try:
        dir_fd = _open_cache(create=False)
    except (OSError, RuntimeError):  # RuntimeError: no home directory to find a cache in
        return None
    if dir_fd is None:
        return None
    try:
        data = _read_bounded(dir_fd, index_name(path, decorated), size_limit(st.st_size))
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
        dir_fd = _open_cache(create=False)
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
    if not _is_int(prefix_len) or not 0 < prefix_len <= st.st_size:
        return None
    if st.st_size == doc["size"] and st.st_mtime_ns != doc["mtime_ns"]:
        return None  # the same length but written since: an edit in place
    crc = doc["crc"]
    if not _is_int(crc) or crc != fingerprint(fd, prefix_len):
        return None
    cols = doc["entries"]
    types, roles = _decode_codes(columns["type"], cols["types"]), _decode_codes(columns["role"], cols["roles"])
    if types is None or roles is None:
        return None
    state = PrefixState(
        prefix_len=prefix_len,
        lines=doc["lines"],
        header=doc["header"],
        header_line=doc["header_line"],
        last_value=doc["last_value"],
        last_value_line=doc["last_value_line"],
        released_to=doc["released_to"],
        malformed=doc["malformed"],
        diagnostics=[tuple(d) for d in doc["diagnostics"]],  # type: ignore[misc]
        prev_tail=doc["prev_tail"].encode("latin-1"),
        last_tail=doc["last_tail"].encode("latin-1"),
        line=columns["line"],
        offset=columns["offset"],
        length=columns["length"],
        ids=cols["id"],
        parents=cols["parentId"],
        types=types,  # type: ignore[arg-type]
        roles=roles,
        parent_slots=columns["parent"],
        dangling=cols["dangling"],
        decorated=cols.get("decorated"),
        crc=crc,
        mutations=_decode_mutations(cols["mutations"], len(columns["line"])),
    )
    return state if _well_formed(state) else None


def _decode_mutations(rows: Any, n: int) -> list[tuple[int, Facts]]:
    """``[[index, [toolCallId or null, [[position, path], ...]]], ...]`` back as ``PrefixState.mutations``; ValueError
    for anything else (an index out of range or out of order, a field of another type, no modification)."""
    out: list[tuple[int, Facts]] = []
    last = -1
    for index, (call_id, pairs) in rows:
        if not _is_int(index) or not last < index < n or not (call_id is None or type(call_id) is str) or not pairs:
            raise ValueError("not a mutation row")
        found = tuple((position, path) for position, path in pairs)
        if not all(_is_int(position) and position >= 0 and type(path) is str and path for position, path in found):
            raise ValueError("not a mutation row")
        out.append((index, (call_id, found)))
        last = index
    return out


# The per-entry numbers are kept as machine integers after the JSON part (a JSON list of 70,000 numbers costs more
# to read than the rest of the index), and types and roles as codes into a list of the distinct values.
_LENGTH = struct.Struct(">I")
COLUMNS = ("line", "offset", "length", "type", "role", "parent")


def _typecode(top: int) -> str:
    """The narrowest unsigned array type that holds every value up to ``top``."""
    return "B" if top < 1 << 8 else "I" if top < 1 << 32 and array("I").itemsize == 4 else "Q"


def pack(doc: dict[str, Any], columns: dict[str, Sequence[int]], tops: dict[str, int] | None = None) -> bytes:
    """The body of an index file: the JSON document, then each of ``COLUMNS`` as an array of machine integers,
    described in the document (type code, item size, count, byte order) so that a reader on another machine or a
    damaged file is refused, never misread. ``tops`` bounds each column's values when the caller knows them (a
    pass over 23,000 integers scattered in memory costs milliseconds)."""
    layout, blobs = [], []
    for name in COLUMNS:
        values = columns[name]
        code = _typecode(tops[name] if tops is not None else max(values, default=0))
        blob = array(code, values).tobytes()
        layout.append([name, code, array(code).itemsize, len(values)])
        blobs.append(blob)
    head = orjson.dumps({**doc, "columns": layout, "byteorder": sys.byteorder})
    return b"".join([_LENGTH.pack(len(head)), head, *blobs])


def unpack(body: bytes) -> tuple[dict[str, Any], dict[str, array[int]]]:
    """The JSON document and the columns of an index body (see ``pack``); ValueError (or another error the reader
    ignores) when it is not one."""
    (size,) = _LENGTH.unpack_from(body)
    doc = orjson.loads(body[_LENGTH.size : _LENGTH.size + size])
    if not isinstance(doc, dict) or doc.get("byteorder") != sys.byteorder:
        raise ValueError("not an index of this machine")
    view = memoryview(body)
    at = _LENGTH.size + size
    columns: dict[str, array[int]] = {}
    for (name, code, itemsize, count), expected in zip(doc["columns"], COLUMNS, strict=True):
        if name != expected or code not in ("B", "I", "Q") or array(code).itemsize != itemsize or not _is_int(count):
            raise ValueError("not an index column")
        column = array(code)
        column.frombytes(view[at : at + itemsize * count])
        if len(column) != count:
            raise ValueError("a truncated column")
        columns[name] = column
        at += itemsize * count
    if at != len(body):
        raise ValueError("bytes after the last column")
    return doc, columns


def _decode_codes(codes: array[int], values: Any) -> list[Any] | None:
    """The values that ``codes`` stand for (None when a code points past the list)."""
    if not isinstance(values, list) or max(codes, default=-1) >= len(values):
        return None
    return list(map(values.__getitem__, codes))


def _encode_codes(values: list[Any]) -> tuple[list[int], list[Any]]:
    """Codes into the list of distinct values, in order of first appearance."""
    distinct = list(dict.fromkeys(values))
    return list(map({v: i for i, v in enumerate(distinct)}.__getitem__, values)), distinct


def _is_int(value: object) -> bool:
    return type(value) is int


_STR_OR_NONE = {str, type(None)}


def _well_formed(s: PrefixState) -> bool:
    """Every field has the shape and type the loader relies on (never trust what a file says)."""
    n = len(s.line)
    ints = (s.lines, s.header_line, s.last_value_line, s.released_to)
    if not all(map(_is_int, ints)) or not isinstance(s.header, dict) or not isinstance(s.malformed, list):
        return False
    if not all(isinstance(c, list) for c in (s.ids, s.parents, s.types, s.roles)):
        return False
    if not all(len(c) == n for c in (s.offset, s.length, s.ids, s.parents, s.types, s.roles, s.parent_slots)):
        return False
    if max(s.parent_slots, default=0) >= n + 2 or not isinstance(s.dangling, list):
        return False
    if not set(map(type, s.dangling)) <= {str}:
        return False
    if not set(map(type, s.malformed)) <= {int} or not set(map(type, s.types)) <= {str}:
        return False
    if not (set(map(type, s.ids)) | set(map(type, s.parents)) | set(map(type, s.roles))) <= _STR_OR_NONE:
        return False
    if s.decorated is not None:
        if not isinstance(s.decorated, list) or len(s.decorated) != n or not set(map(type, s.decorated)) <= {list}:
            return False
        if not set(map(type, chain.from_iterable(s.decorated))) <= {str}:
            return False
    for d in s.diagnostics:
        if len(d) != 4 or d[0] not in ("warning", "info") or not (isinstance(d[1], str) and isinstance(d[2], str)):
            return False
        if not (d[3] is None or _is_int(d[3])):
            return False
    # Every number the loader reads the file or counts lines with lies within the file (a forged index with huge
    # offsets or lengths would otherwise read past the end, or ask for more memory than there is).
    if not s.lines <= s.prefix_len:  # a line is at least its "\n"
        return False
    if n and (max(s.line) > s.lines or max(s.offset) >= s.prefix_len or max(s.length) >= s.prefix_len):
        return False
    if n and (s.line[-1] > s.lines or s.offset[-1] + s.length[-1] >= s.prefix_len):
        return False
    if s.malformed and not (min(s.malformed) > 0 and max(s.malformed) <= s.lines):
        return False
    if not 0 <= s.released_to <= n or not 0 < s.header_line <= s.lines or s.last_value_line > s.lines:
        return False
    return s.header.get("type") == "session" and isinstance(s.header.get("id"), str)


def write(path: Path, st: os.stat_result, state: PrefixState) -> None:
    """Write the index of ``path`` atomically (a temporary file renamed over it); any failure leaves no index.
    ``state.crc`` must be the fingerprint of the bytes it was parsed from (``PrefixHash``): without it, nothing is
    written."""
    if state.crc is None:
        return
    try:
        type_codes, type_values = _encode_codes(state.types)
        role_codes, role_values = _encode_codes(state.roles)
        body = pack(
            {
                "picompact": __version__,
                "keys": _keys(path, st),
                "size": st.st_size,
                "mtime_ns": st.st_mtime_ns,
                "prefix_len": state.prefix_len,
                "crc": state.crc,
                "lines": state.lines,
                "header": state.header,
                "header_line": state.header_line,
                "last_value": state.last_value,
                "last_value_line": state.last_value_line,
                "released_to": state.released_to,
                "malformed": state.malformed,
                "diagnostics": state.diagnostics,
                "prev_tail": state.prev_tail.decode("latin-1"),
                "last_tail": state.last_tail.decode("latin-1"),
                "entries": {
                    "id": state.ids,
                    "parentId": state.parents,
                    "types": type_values,
                    "roles": role_values,
                    "dangling": state.dangling,
                    "mutations": state.mutations,
                    **({} if state.decorated is None else {"decorated": state.decorated}),
                },
            },
            {
                "line": state.line,
                "offset": state.offset,
                "length": state.length,
                "type": type_codes,
                "role": role_codes,
                "parent": state.parent_slots,
            },
            {
                "line": state.lines,
                "offset": state.prefix_len,
                "length": state.prefix_len,
                "type": len(type_values),
                "role": len(role_values),
                "parent": len(state.parent_slots) + 1,
            },
        )
    except (TypeError, ValueError, OverflowError):  # a value orjson or array cannot write (past 64 bits, say)
        return
    # Strings orjson either writes exactly or refuses (a lone surrogate, say); a number it may not (1e400 is infinity
    # in JSON.parse, and null in orjson)
    for value in (state.header, state.last_value):
        if orjson.loads(orjson.dumps(value)) != value:
            return  # one it would not read back the same
    try:
        data = seal(body, owner(path, st))
    except struct.error:  # a device or inode number past 64 bits
        return
    if len(data) > size_limit(st.st_size):
        return  # it would be refused when read
    # A cache that cannot be written is only a slower next run.
    with contextlib.suppress(OSError, RuntimeError):
        dir_fd = _open_cache(create=True)
        if dir_fd is None:
            return  # not a directory of this user's: nothing is written there
        try:
            _sweep(dir_fd, time.time())
            _write_new(dir_fd, index_name(path, state.decorated is not None), data)
        finally:
            os.close(dir_fd)


def _write_new(dir_fd: int, name: str, data: bytes) -> None:
    """``data`` as the file ``name`` of the directory: written to a temporary file renamed over it."""
    tmp, out = _create_temporary(dir_fd)
    try:
        try:
            os.fchmod(out, 0o600)  # whatever the umask took away
            view = memoryview(data)
            while view:
                view = view[os.write(out, view) :]
        finally:
            os.close(out)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


def _create_temporary(dir_fd: int) -> tuple[str, int]:
    """A new file in the directory that no other process has, and its descriptor open for writing (``tempfile``
    costs its imports at every first run). Its name holds the writer's pid, for ``_sweep``."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for attempt in range(100):
        tmp = f".tmp-{os.getpid()}-{time.monotonic_ns()}-{attempt}.idx"
        try:
            return tmp, os.open(tmp, flags, 0o600, dir_fd=dir_fd)
        except FileExistsError:
            continue
    raise FileExistsError("no free temporary name in the cache directory")


def _sweep(dir_fd: int, now: float) -> None:
    """Delete what the cache should not keep: temporaries of writes that did not finish (``_abandoned``) and
    indexes whose session is gone (``_orphaned``). Only names picompact writes are looked at."""
    with os.scandir(dir_fd) as listing:
        names = [item.name for item in listing]
    for name in names:
        temporary = _TEMPORARY_NAME.fullmatch(name)
        with contextlib.suppress(OSError):
            if (temporary and _abandoned(dir_fd, name, int(temporary[1]), now)) or (
                _INDEX_NAME.fullmatch(name) and _orphaned(dir_fd, name)
            ):
                os.unlink(name, dir_fd=dir_fd)


def _abandoned(dir_fd: int, name: str, pid: int, now: float) -> bool:
    """A temporary file an hour old, or whose writer (the pid in its name) has exited."""
    if now - os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mtime > STALE_TEMPORARY_SECONDS:
        return True
    if pid == os.getpid() or pid <= 0:
        return False
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError):  # another user's process, or not a pid at all (the age decides)
        return False
    return False


def _orphaned(dir_fd: int, name: str) -> bool:
    """An index whose session file is gone (or another file now holds its path), or that is not a readable index
    of this format owned by this user at all. Only the owner record at its start is read."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return True  # a symlink, say: not something picompact wrote
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
            return True
        start = len(MAGIC) + _HEAD.size
        head = read_at(fd, start + _OWNER.size, 0)
        if len(head) < start + _OWNER.size or not head.startswith(MAGIC):
            return True
        if _HEAD.unpack_from(head, len(MAGIC))[0] != FORMAT:
            return True  # written by another version of picompact: this one would rebuild it anyway
        dev, ino, size = _OWNER.unpack_from(head, start)
        if size > MAX_OWNER_PATH:
            return True
        session = read_at(fd, size, start + _OWNER.size)
    finally:
        os.close(fd)
    try:
        found = os.stat(session)
    except (FileNotFoundError, NotADirectoryError):
        return True
    except OSError:
        return False  # not readable now (permissions, a mount not there): kept, in doubt
    return (found.st_dev, found.st_ino) != (dev, ino)
