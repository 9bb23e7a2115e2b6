"""The bytes of an index file (``session.index``): what a ``PrefixState`` is written as, and read back as only when
every part of it is what the loader relies on.

An index file is the magic, the format version, the CRC-32 and Adler-32 of what follows (``seal``, ``split``), the
owner record (the session's device, inode and path: ``owner``, read alone by ``cachedir.sweep``), then the body: a
JSON document (the header, the warnings, the per-entry ids, the session's keys) followed by the per-entry numbers as
arrays of machine integers (``pack``, ``unpack``). Nothing read is trusted: a body is refused unless it is of this
machine and whole, and a state unless every field has the shape and type the loader relies on (``well_formed``).
"""

from __future__ import annotations

import os
import struct
import sys
from array import array
from collections.abc import Sequence
from itertools import chain, compress
from pathlib import Path
from typing import TYPE_CHECKING, Any

try:  # ISA-L's checksums: the same values as zlib's, several times as fast (an index is read at every run)
    from isal.isal_zlib import adler32, crc32
except ImportError:  # pragma: no cover - isal is a dependency; a tree without it is only slower
    from zlib import adler32, crc32

import orjson

from pi_compact.session.mutations import Facts

if TYPE_CHECKING:
    from pi_compact.session.index import PrefixState

MAGIC = b"picompact-index\n"
FORMAT = 7
_HEAD = struct.Struct(">HII")  # format version, CRC-32 and Adler-32 of what follows (the owner and the body)
_OWNER = struct.Struct(">QQI")  # the session's device, inode and the length of its path (then the path's bytes)
OWNER_AT = len(MAGIC) + _HEAD.size  # where the owner record begins
OWNER_END = OWNER_AT + _OWNER.size  # where the path in it begins
MAX_OWNER_PATH = 64 * 1024


def owner(path: Path, st: os.stat_result) -> bytes:
    """The record of the session an index describes (its device, inode and path), read alone by ``cachedir.sweep``."""
    encoded = os.fsencode(os.path.abspath(path))
    return _OWNER.pack(st.st_dev, st.st_ino, len(encoded)) + encoded


def seal(body: bytes, owner: bytes) -> bytes:
    """An index file holding ``body``: the magic, the format version, the checksums of what follows, the owner
    record, then the body."""
    crc, adler = crc32(body, crc32(owner)), adler32(body, adler32(owner))
    return MAGIC + _HEAD.pack(FORMAT, crc, adler) + owner + body


def split(data: bytes) -> tuple[bytes, bytes] | None:
    """The owner record and the body of an index file, or None when it is not one of this format (its magic, its
    version, its checksums)."""
    if not data.startswith(MAGIC) or len(data) < OWNER_END:
        return None
    version, crc, adler = _HEAD.unpack_from(data, len(MAGIC))
    if version != FORMAT:
        return None
    rest = memoryview(data)[OWNER_AT:]
    if crc32(rest) != crc or adler32(rest) != adler:
        return None
    end = OWNER_END + _OWNER.unpack_from(data, OWNER_AT)[2]
    return data[OWNER_AT:end], data[end:]


def owner_head(head: bytes) -> tuple[int, int, int] | None:
    """The device, inode and path length of the owner record that the first ``OWNER_END`` bytes of an index file
    begin (its path follows them), or None when they are not the start of an index of this format."""
    if len(head) < OWNER_END or not head.startswith(MAGIC):
        return None
    if _HEAD.unpack_from(head, len(MAGIC))[0] != FORMAT:
        return None  # written by another version of picompact: this one would rebuild it anyway
    dev, ino, size = _OWNER.unpack_from(head, OWNER_AT)
    return (dev, ino, size) if size <= MAX_OWNER_PATH else None


def encode_state(state: PrefixState, meta: dict[str, Any]) -> bytes:
    """The body of the index of ``state``, its document holding ``meta`` too (the picompact version and the keys of
    the session it describes). ValueError, TypeError or OverflowError for a state this format cannot hold exactly:
    a value orjson or array cannot write (past 64 bits, say), or one it would not read back the same."""
    type_codes, type_values = _encode_codes(state.types)
    role_codes, role_values = _encode_codes(state.roles)
    slots, parents = state.parent_slots, state.parents
    orphans = [[i, parents[i]] for i in compress(range(len(slots)), map((1).__eq__, slots))]
    body = pack(
        {
            **meta,
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
                "orphans": orphans,  # [index, parentId] of each entry whose parent is none of the entries
                "types": type_values,
                "roles": role_values,
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
    # Strings orjson either writes exactly or refuses (a lone surrogate, say); a number it may not (1e400 is infinity
    # in JSON.parse, and null in orjson)
    for value in (state.header, state.last_value):
        if orjson.loads(orjson.dumps(value)) != value:
            raise ValueError("a value the index would not read back the same")
    return body


class Coded:
    """An index's types, roles and parentIds as its columns hold them (codes into the lists of distinct values, the
    parents' slots with the ``orphans`` list), checked by ``decode_fields``: a resumed load builds its entries from
    them directly (``loadstate._resumed_entries``), and the lists are made only when asked for (``PrefixState``)."""

    __slots__ = ("orphans", "role_codes", "role_values", "type_codes", "type_values")

    def __init__(
        self,
        type_codes: array[int],
        type_values: list[str],
        role_codes: array[int],
        role_values: list[str | None],
        orphans: list[tuple[int, str]],
    ) -> None:
        self.type_codes = type_codes
        self.type_values = type_values
        self.role_codes = role_codes
        self.role_values = role_values
        self.orphans = orphans  # (index, parentId) of each entry whose parent is none of the entries, in order

    def parents(self, ids: list[str | None], slots: Sequence[int]) -> list[str | None]:
        """Each entry's parentId: none (slot 0), its orphan's (slot 1), or the id of the entry at its slot less 2."""
        parents = list(map([None, None, *ids].__getitem__, slots))
        for index, parent in self.orphans:
            parents[index] = parent
        return parents

    def types(self) -> list[str]:
        return list(map(self.type_values.__getitem__, self.type_codes))

    def roles(self) -> list[str | None]:
        return list(map(self.role_values.__getitem__, self.role_codes))


def decode_fields(doc: dict[str, Any], columns: dict[str, array[int]]) -> dict[str, Any]:
    """The fields of the ``PrefixState`` that an index body's document and columns (``unpack``) describe, all but its
    ``prefix_len`` and ``crc`` (which the reader checks against the file first). Each entry's type and role are its
    code into the list of distinct ones, its parentId its parent's slot (the id of the entry there, or the one the
    ``orphans`` list holds, or none), held as ``Coded``: every code and slot is checked to lie within its list here,
    so they stand for values of the types those lists hold. ValueError (or IndexError, KeyError, ...) for a
    document that lacks a field or holds one of another kind, a code or slot past its list: the state built from
    them is good only if it is ``well_formed`` too."""
    cols = doc["entries"]
    ids, slots = cols["id"], columns["parent"]
    if not isinstance(ids, list) or len(ids) != len(slots) or not below(slots, len(ids) + 2):
        raise ValueError("not an index's ids")
    orphans, dangling = _decode_orphans(slots, cols["orphans"])
    coded = Coded(
        _checked_codes(columns["type"], cols["types"], False),
        cols["types"],
        _checked_codes(columns["role"], cols["roles"], True),
        cols["roles"],
        orphans,
    )
    return {
        "lines": doc["lines"],
        "header": doc["header"],
        "header_line": doc["header_line"],
        "last_value": doc["last_value"],
        "last_value_line": doc["last_value_line"],
        "released_to": doc["released_to"],
        "malformed": doc["malformed"],
        "diagnostics": [tuple(d) for d in doc["diagnostics"]],
        "prev_tail": doc["prev_tail"].encode("latin-1"),
        "last_tail": doc["last_tail"].encode("latin-1"),
        "line": columns["line"],
        "offset": columns["offset"],
        "length": columns["length"],
        "ids": ids,
        "parents": None,
        "types": None,
        "roles": None,
        "coded": coded,
        "parent_slots": slots,
        "dangling": dangling,
        "decorated": cols.get("decorated"),
        "mutations": _decode_mutations(cols["mutations"], len(columns["line"])),
    }


def _decode_orphans(slots: array[int], orphans: Any) -> tuple[list[tuple[int, str]], list[str]]:
    """``[[index, parentId], ...]``, one for each slot of 1 in order, as (index, parentId) pairs, and the distinct
    parents; ValueError for orphans that do not agree with the slots."""
    if not isinstance(orphans, list) or len(orphans) != slots.count(1):
        raise ValueError("not the index's orphans")
    out: list[tuple[int, str]] = []
    last = -1
    for index, parent in orphans:  # every one a slot of 1 (counted above), each once (in order), a non-empty string
        if type(index) is not int or not last < index < len(slots) or slots[index] != 1:
            raise ValueError("not an orphan row")
        if type(parent) is not str or not parent:
            raise ValueError("not an orphan row")
        out.append((index, parent))
        last = index
    return out, sorted({parent for _, parent in out})


def _checked_codes(codes: array[int], values: Any, none: bool) -> array[int]:
    """``codes`` when each is the position of one of ``values``, strings (or None with ``none``); ValueError
    otherwise."""
    if not isinstance(values, list) or not {type(v) for v in values} <= (_STR_OR_NONE if none else {str}):
        raise ValueError("not an index's values")
    if not below(codes, len(values)):
        raise ValueError("a code past the index's values")
    return codes


def below(column: array[int], bound: int) -> bool:
    """Whether every value of the unsigned ``column`` is below ``bound``, without a Python object for each value
    where it can: its most significant bytes are looked at first, for all values at once (``bytes.translate``), and
    only the values whose bytes there equal those of ``bound - 1`` are compared one by one."""
    if not column:
        return True
    if bound <= 0:
        return False
    k = column.itemsize
    if bound >> (8 * k):
        return True  # above every value the column's type holds
    top = bound - 1  # every value must be at most this
    data = column.tobytes()
    little = sys.byteorder == "little"
    for lane in range(k - 1, -1, -1):  # the most significant byte first
        byte = (top >> (8 * lane)) & 0xFF
        lane_bytes = data[lane if little else k - 1 - lane :: k]
        higher = lane_bytes.translate(None, _UP_TO[byte])  # the bytes above ``byte``, and those equal to it
        if not higher:
            return True  # every value is below ``top`` in this byte, and equal to it in the more significant ones
        if higher.count(_BYTE[byte]) != len(higher):
            return False  # a value above it in this byte (equal in the more significant ones only if all are)
        if len(higher) == len(lane_bytes):
            continue  # every value equal to it in this byte: the next byte decides
        return _ties_below(column, lane_bytes, _BYTE[byte], top)
    return True  # every value equal to ``top``


def _ties_below(column: array[int], lane_bytes: bytes, byte: bytes, top: int) -> bool:
    """Whether the values of ``column`` whose byte in ``lane_bytes`` is ``byte`` are all at most ``top``."""
    if lane_bytes.count(byte) > len(lane_bytes) // 8:
        return max(column) <= top
    find = lane_bytes.find
    at = find(byte)
    while at >= 0:
        if column[at] > top:
            return False
        at = find(byte, at + 1)
    return True


_UP_TO = [bytes(range(b)) for b in range(256)]  # the bytes below each byte: what ``below`` deletes
_BYTE = [bytes([b]) for b in range(256)]


def _decode_mutations(rows: Any, n: int) -> list[tuple[int, Facts]]:
    """``[[index, [toolCallId or null, [[position, path], ...]]], ...]`` back as ``PrefixState.mutations``; ValueError
    for anything else (an index out of range or out of order, a field of another type, no modification)."""
    out: list[tuple[int, Facts]] = []
    append = out.append
    last = -1
    for index, (call_id, pairs) in rows:
        if type(index) is not int or not last < index < n or not (call_id is None or type(call_id) is str) or not pairs:
            raise ValueError("not a mutation row")
        found = tuple(map(tuple, pairs))
        for position, path in found:  # ValueError too for a pair that is not two values
            if type(position) is not int or position < 0 or type(path) is not str or not path:
                raise ValueError("not a mutation row")
        append((index, (call_id, found)))
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


def _encode_codes(values: list[Any]) -> tuple[list[int], list[Any]]:
    """Codes into the list of distinct values, in order of first appearance."""
    distinct = list(dict.fromkeys(values))
    return list(map({v: i for i, v in enumerate(distinct)}.__getitem__, values)), distinct


def _is_int(value: object) -> bool:
    return type(value) is int


_STR_OR_NONE = {str, type(None)}


def well_formed(s: PrefixState) -> bool:
    """Every field has the shape and type the loader relies on (never trust what a file says)."""
    n = len(s.line)
    ints = (s.lines, s.header_line, s.last_value_line, s.released_to)
    if not all(map(_is_int, ints)) or not isinstance(s.header, dict) or not isinstance(s.malformed, list):
        return False
    coded = s.coded
    per_entry: tuple[Any, ...]
    if coded is None:
        if not all(isinstance(c, list) for c in (s.ids, s.parents, s.types, s.roles)):
            return False
        per_entry = (s.offset, s.length, s.ids, s.parents, s.types, s.roles, s.parent_slots)
    else:  # the parents, types and roles ``decode_fields`` checked are made only when asked for
        if not isinstance(s.ids, list):
            return False
        per_entry = (s.offset, s.length, s.ids, coded.type_codes, coded.role_codes, s.parent_slots)
    if not all(len(c) == n for c in per_entry):
        return False
    # The parents, types and roles ``decode_fields`` made are of the types of the ids and lists it made them from
    if not set(map(type, s.malformed)) <= {int} or not _strings_or_none(s.ids):
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
    if n and not (
        _below_any(s.line, s.lines + 1) and _below_any(s.offset, s.prefix_len) and _below_any(s.length, s.prefix_len)
    ):
        return False
    if n and (s.line[-1] > s.lines or s.offset[-1] + s.length[-1] >= s.prefix_len):
        return False
    if s.malformed and not (min(s.malformed) > 0 and max(s.malformed) <= s.lines):
        return False
    if not 0 <= s.released_to <= n or not 0 < s.header_line <= s.lines or s.last_value_line > s.lines:
        return False
    return s.header.get("type") == "session" and isinstance(s.header.get("id"), str)


def _strings_or_none(values: list[Any]) -> bool:
    """Every value a string or None: ``str.join`` refuses anything but strings, without a Python call for each;
    only when it refuses are the types looked at one by one."""
    try:
        "".join(values)
    except TypeError:  # a None among them, or a value of another type
        return set(map(type, values)) <= _STR_OR_NONE
    return True


def _below_any(column: Sequence[int], bound: int) -> bool:
    """``below`` for an array of the index's kinds, else every value of ``column`` below ``bound`` as ``max`` finds."""
    if isinstance(column, array) and column.typecode in ("B", "I", "Q"):
        return below(column, bound)
    return max(column, default=0) < bound
