"""An index of a session file's already-read prefix, kept in the user's cache so that reading the file again after
a few appended lines parses only those lines.

Pi only ever appends to a session file, and people run ``picompact check`` again and again on the same growing
file. The loader's state after the last complete line (``PrefixState``: the header, per entry its line, byte
offset, length, id, parentId, type and role and which entry its parentId names, the warnings found so far, the
malformed lines) is written to ``$XDG_CACHE_HOME/picompact/`` (or ``~/.cache/picompact/``), one file per session
path. The next load that finds an index which still describes the file resumes after the prefix; every body in the
prefix is read back from the file on demand, as the loader already does for old messages (``session.source``),
and a body read back is checked against the entry's head fields, so a file changed under the index is an error,
never a different answer. The branch walk follows the prefix's parent links by number (``Session.parent_slots``)
unless a later line reuses one of its ids or gives an id its parents name in vain. A load that resumed writes the
index again only once the part after it is worth it (``worth_writing``): a few appended lines are parsed again by
the next run instead, which costs less than writing the index.

When an index is used (every key must agree, otherwise it is ignored and rebuilt):

- the same path, device and inode (a file renamed over the old one, as a rewrite does, has another inode);
- the file is at least as long as the prefix, and when its size is the one recorded, its mtime is too (an edit
  in place that keeps the length);
- a hash of the prefix agrees: its length, and its whole content up to ``FULL_HASH_BYTES``; for a longer prefix,
  its first and last ``EDGE_BYTES`` and ``SAMPLES`` blocks of ``SAMPLE_BYTES`` spread evenly over it. Reading the
  whole of a 100 MB prefix would cost a cold run's time; appends, truncations (the end of the prefix moves or
  vanishes), and rewrites (new inode, new length, or new bytes at the edges or a sample) are all seen. An edit in
  place that keeps the inode, the length beyond the prefix and every sampled byte is the one change not seen up
  front; a body read back from such a file still fails its head check, and ``--no-cache`` or
  ``PICOMPACT_NO_CACHE=1`` leave the cache out entirely;
- the index file itself: a magic header, the format version, the picompact version that wrote it, and checksums
  of its body; then its fields are checked for shape and type. A corrupt, truncated or foreign file is ignored.

Only v3 files are indexed (older ones are migrated in memory, which changes bodies read back). Writing goes to a
temporary file renamed over the index, so two processes at once each see a whole index or none.
"""

from __future__ import annotations

import contextlib
import os
import struct
import sys
import time
import zlib
from array import array
from collections.abc import Sequence
from itertools import chain
from pathlib import Path
from typing import Any

import orjson

from pi_compact import __version__
from pi_compact.session.source import read_at

NO_CACHE_ENV = "PICOMPACT_NO_CACHE"
MAGIC = b"picompact-index\n"
FORMAT = 3
_HEAD = struct.Struct(">HII")  # format version, CRC-32 and Adler-32 of the body
FULL_HASH_BYTES = 4 * 1024 * 1024
EDGE_BYTES = 64 * 1024
SAMPLES = 256
SAMPLE_BYTES = 4096


class PrefixState:
    """The loader's state after the last complete line of a file's prefix (see ``load._parse_session``)."""

    __slots__ = (
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


REWRITE_FRACTION = 64  # an index is written again once the part after it is this fraction of what it covers


def worth_writing(state: PrefixState | None, size: int) -> bool:
    """Whether a load of a file of ``size`` bytes that resumed from ``state`` (None: no usable index) should write
    the index again. Writing costs about what the index covers; a few appended lines cost a re-run next to
    nothing to parse again, so the index is rewritten only once the part after it has grown to 1/64 of it (or 64
    KiB, whichever is more)."""
    return state is None or size - state.prefix_len >= max(state.prefix_len // REWRITE_FRACTION, 64 * 1024)


def disabled() -> bool:
    """``PICOMPACT_NO_CACHE`` set to anything but "" or "0" turns the cache off."""
    return os.environ.get(NO_CACHE_ENV, "") not in ("", "0")


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/picompact`` (when that is an absolute path), else ``~/.cache/picompact``."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".cache"
    return root / "picompact"


class _Digest:
    """CRC-32 and Adler-32 side by side (64 bits): a change in the bytes shows; zlib is loaded at start-up anyway,
    where hashlib would cost its import on every run. Nothing here guards against a forger: who can write the
    user's cache can write the session file too."""

    def __init__(self, data: bytes = b"") -> None:
        self.crc = zlib.crc32(data)
        self.adler = zlib.adler32(data)

    def update(self, data: bytes) -> None:
        self.crc = zlib.crc32(data, self.crc)
        self.adler = zlib.adler32(data, self.adler)

    def hexdigest(self) -> str:
        return f"{self.crc:08x}{self.adler:08x}"


def index_path(path: Path, decorated: bool = False) -> Path:
    """The index file of a session path (two paths sharing one only take turns at it: the path is a key too).
    grep's index, which also holds every entry's decorated lines, is a file of its own."""
    kind = ".grep" if decorated else ""
    return cache_dir() / f"{_Digest(os.fsencode(os.path.abspath(path))).hexdigest()}{kind}.idx"


def fingerprint(fd: int, length: int) -> str:
    """A hash of the first ``length`` bytes of the open file (see the module's doc for what it reads)."""
    digest = _Digest(str(length).encode())
    if length <= FULL_HASH_BYTES:
        digest.update(read_at(fd, length, 0))
        return digest.hexdigest()
    digest.update(read_at(fd, EDGE_BYTES, 0))
    digest.update(read_at(fd, EDGE_BYTES, length - EDGE_BYTES))
    span = length - EDGE_BYTES * 2 - SAMPLE_BYTES
    for k in range(SAMPLES):
        digest.update(read_at(fd, SAMPLE_BYTES, EDGE_BYTES + span * k // (SAMPLES - 1)))
    return digest.hexdigest()


def seal(body: bytes) -> bytes:
    """An index file holding ``body``: the magic, the format version and the body's checksums, then the body."""
    return MAGIC + _HEAD.pack(FORMAT, zlib.crc32(body), zlib.adler32(body)) + body


def _keys(path: Path, st: os.stat_result) -> dict[str, Any]:
    return {"path": os.path.abspath(path), "dev": st.st_dev, "ino": st.st_ino}


def read(path: Path, fd: int, st: os.stat_result, decorated: bool = False) -> PrefixState | None:
    """The index of ``path`` (open as ``fd``, ``st`` its fstat) if one exists and still describes the file;
    ``decorated``: grep's index, with every entry's decorated lines."""
    try:
        data = index_path(path, decorated).read_bytes()
    except (OSError, RuntimeError):  # RuntimeError: no home directory to find a cache in
        return None
    try:
        state = _decode(data, path, fd, st)
    except Exception:  # whatever is wrong with a cache file, it is ignored and rebuilt
        return None
    if state is not None and (state.decorated is not None) != decorated:
        return None
    return state


def _decode(data: bytes, path: Path, fd: int, st: os.stat_result) -> PrefixState | None:
    if not data.startswith(MAGIC) or len(data) < len(MAGIC) + _HEAD.size:
        return None
    version, crc, adler = _HEAD.unpack_from(data, len(MAGIC))
    body = data[len(MAGIC) + _HEAD.size :]
    if version != FORMAT or zlib.crc32(body) != crc or zlib.adler32(body) != adler:
        return None
    doc, columns = unpack(body)
    if doc.get("picompact") != __version__ or doc.get("keys") != _keys(path, st):
        return None
    prefix_len = doc["prefix_len"]
    if not _is_int(prefix_len) or not 0 < prefix_len <= st.st_size:
        return None
    if st.st_size == doc["size"] and st.st_mtime_ns != doc["mtime_ns"]:
        return None  # the same length but written since: an edit in place
    if doc["fingerprint"] != fingerprint(fd, prefix_len):
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
    )
    return state if _well_formed(state) else None


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
    if n and (s.line[-1] > s.lines or s.offset[-1] + s.length[-1] >= s.prefix_len):
        return False
    if not 0 <= s.released_to <= n or not 0 < s.header_line <= s.lines or s.last_value_line > s.lines:
        return False
    return s.header.get("type") == "session" and isinstance(s.header.get("id"), str)


def write(path: Path, fd: int, st: os.stat_result, state: PrefixState) -> None:
    """Write the index of ``path`` atomically (a temporary file renamed over it); any failure leaves no index."""
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
                "fingerprint": fingerprint(fd, state.prefix_len),
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
    data = seal(body)
    tmp = None
    # A cache that cannot be written is only a slower next run.
    with contextlib.suppress(OSError, RuntimeError):
        try:
            target = index_path(path, state.decorated is not None)
            target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            tmp = _create_temporary(target)
            with open(tmp, "wb", closefd=True) as out:
                out.write(data)
            os.replace(tmp, target)
            tmp = None
        finally:
            if tmp is not None:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)


def _create_temporary(target: Path) -> Path:
    """A new file beside ``target`` that no other process has (``tempfile`` costs its imports at every first run)."""
    for attempt in range(100):
        tmp = target.parent / f".tmp-{os.getpid()}-{time.monotonic_ns()}-{attempt}.idx"
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        except FileExistsError:
            continue
        return tmp
    raise FileExistsError(f"no free temporary name beside {target}")
