"""Read a session file exactly as Pi 1.6 reads it, and say what it silently skipped.

Pi splits on "\\n" only, skips blank, malformed and falsy (``null``) lines, refuses a file whose first parsed
line is not a session header, takes the id of the last parsed entry as the leaf (none when that entry is not an
object or has no id: then its branch is empty), and migrates v1/v2 files in memory.
"""

from __future__ import annotations

import gc
import json
import math
import os
import re
import stat
from collections.abc import Callable, Iterable
from itertools import compress, repeat
from operator import attrgetter, is_
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from pi_compact.errors import NotFoundError, SessionError
from pi_compact.session.entries import _UNREAD as UNREAD
from pi_compact.session.entries import ENTRY_TYPES, MESSAGE_ROLES, Diagnostic, Entry, JsonDict, Session
from pi_compact.session.jsonline import COUNT_BELOW, DEEP_MARKER, MAX_DEPTH, cut_depth, nests_deeper, parse_line
from pi_compact.session.mutations import Facts, mutation_facts
from pi_compact.session.source import FileSource, read_lines

if TYPE_CHECKING:
    from pi_compact.session.index import PrefixHash, PrefixState

CURRENT_VERSION = 3
_ID = attrgetter("id")
_KNOWN = {name: name for name in (*ENTRY_TYPES, *MESSAGE_ROLES)}
_HEAD_ROW = attrgetter("line", "offset", "length", "id", "parent_id", "type", "role")
BIG_LINE_BYTES = 16 * 1024 * 1024
BOM = b"\xef\xbb\xbf"
TAIL_BYTES = 64


def parse_json_line(line: bytes) -> Any:
    """Parse one line as Pi's UTF-8 decoding and JSON.parse read it (see ``jsonline``); ValueError if it throws."""
    return parse_line(line).value


def _is_falsy(value: Any) -> bool:
    """JavaScript falsiness of a parsed JSON value (null, false, 0, "")."""
    if value is None or value is False:
        return True
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value == 0 or (isinstance(value, float) and math.isnan(value))
    return isinstance(value, str) and value == ""


def synthetic_id(session_id: str, line: int, taken: set[str]) -> str:
    """A stable 8-hex id for an entry of a v1 file, which has none.

    Pi gives such entries random ids on load; picompact derives them from the session id and line number so that
    ``show``, ``grep`` and cursors agree between runs. Collisions get a counter.
    """
    from hashlib import sha1  # only v1 files need it: not imported by every start

    salt = 0
    while True:
        digest = sha1(f"{session_id}:{line}:{salt}".encode()).hexdigest()[:8]
        if digest not in taken:
            return digest
        salt += 1


_JS_SPACE = (
    " \t\n\r\v\f\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_JS_DECIMAL = r"[+-]?(?:Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)"
_JS_RADIX = r"0([xX][0-9a-fA-F]+|[oO][0-7]+|[bB][01]+)"  # compiled when used (re caches them): not on every start


def _js_string(value: Any) -> str:
    """JavaScript's String(value) for parsed JSON values (arrays join their items with commas)."""
    if value is None:
        return ""  # inside an array; a bare null never reaches here
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return ",".join(_js_string(item) for item in value)
    if isinstance(value, dict):
        return "[object Object]"
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    return str(value)


def js_number(value: Any) -> float:
    """JavaScript's ToNumber for a parsed JSON value, as ``header.version >= 3`` applies it (NaN if not a number)."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)):
        return float(value)
    if value is None:
        return 0.0
    text = _js_string(value).strip(_JS_SPACE)
    if not text:
        return 0.0
    if re.fullmatch(_JS_DECIMAL, text):
        return float(text.replace("Infinity", "inf"))
    radix = re.fullmatch(_JS_RADIX, text)
    if radix:
        return float(int(text, 0))
    return math.nan


def _version_text(header: JsonDict) -> str:
    try:
        return json.dumps(header.get("version"), ensure_ascii=False)[:40]
    except (TypeError, ValueError):
        return "?"


def _header_version(header: JsonDict, diagnostics: list[Diagnostic], line: int) -> tuple[int, bool]:
    """(format version Pi migrates from, whether Pi's ``version >= 3`` test fails) for the header's version.

    Pi reads ``header.version ?? 1`` and compares it with JavaScript's ``>=`` and ``<``: the string "3" is 3, true
    is 1, a non-numeric string is NaN (no comparison holds: Pi rewrites the file but migrates nothing).
    """
    raw = header.get("version")
    number = 1.0 if raw is None else js_number(raw)
    if raw is not None and (isinstance(raw, bool) or not isinstance(raw, (int, float))):
        if math.isnan(number):
            reading = "not a number: Pi rewrites the file on open but migrates nothing; picompact migrates nothing"
        else:
            reading = f"{_js_string(number) if math.isfinite(number) else number}, and so does picompact"
        diagnostics.append(
            Diagnostic(
                "warning",
                "version-not-number",
                f"header version {_version_text(header)} is not a JSON number; Pi reads it as {reading}",
                line,
            )
        )
    if math.isnan(number):
        return CURRENT_VERSION, False
    if number < 2:
        return 1, True
    if number < CURRENT_VERSION:
        return 2, True
    return (int(number) if math.isfinite(number) else CURRENT_VERSION), False


def _warn_ids_present(entries: list[Entry], diagnostics: list[Diagnostic], header_line: int) -> None:
    """A v1 header over entries that already carry ids: Pi's migration would replace them and flatten the tree."""
    with_ids = sum(1 for entry in entries if entry.id is not None)
    if not with_ids:
        return
    with_parents = sum(1 for entry in entries if entry.parent_id is not None)
    diagnostics.append(
        Diagnostic(
            "warning",
            "v1-with-ids",
            f"the header says format v1, yet {with_ids} entries carry ids ({with_parents} with a parentId): Pi's "
            "migration gives every entry a new id and chains them in file order, flattening the tree; picompact "
            'shows that flattened branch and will not rewrite the file (if it is really v3, set "version": 3)',
            header_line,
        )
    )


def _migrate(header: JsonDict, entries: list[Entry], diagnostics: list[Diagnostic], header_line: int = 1) -> int:
    """Bring entries to v3 in memory as Pi does; return the original version."""
    version, migrate = _header_version(header, diagnostics, header_line)
    if not migrate:
        return version
    if version < 2:
        _warn_ids_present(entries, diagnostics, header_line)
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


def _pi_finds_no_leaf(value: Any) -> bool:
    """Pi's leaf is the id of the last parsed entry; a non-object has none, and a falsy id ("", 0, null) is none."""
    return not isinstance(value, dict) or _is_falsy(value.get("id"))


def leaf_advice(entries: list[Entry], line: int) -> str:
    """What to do when Pi finds no leaf because of the entry on ``line``: name the last entry before it with an id."""
    before = next((e for e in reversed(entries) if e.line < line and e.id), None)
    if before is None:
        return "no entry before it has an id to give as --leaf"
    return (
        f"give --leaf {before.id} to work on the branch ending at line {before.line} "
        f"(compact --leaf {before.id} appends there, and Pi then finds that leaf again)"
    )


def _check_last_entry(value: Any, line: int, entries: list[Entry], diagnostics: list[Diagnostic]) -> None:
    """Warn that Pi finds no leaf in this file (see ``_pi_finds_no_leaf``), and say how to work on a branch."""
    if not isinstance(value, dict):
        what, context = "is not an object", "empty"
    else:
        raw = value.get("id")
        what = "has no id" if raw is None else f"has the id {json.dumps(raw)}, which Pi reads as none"
        context = "built from this entry and its parents"
    hint = leaf_advice(entries, line)
    diagnostics.append(
        Diagnostic(
            "warning",
            "leaf-without-id",
            f"the last entry {what}, so Pi finds no leaf: its branch is empty, so Pi never compacts this session, and "
            f"the context it sends is {context}; picompact reads the same empty branch; {hint}",
            line,
        )
    )


def _check_v1_primitives(non_objects: list[tuple[int, Any]], diagnostics: list[Diagnostic]) -> None:
    """Pi's v1 migration sets ``id`` on every entry: on a number, string or ``true`` line that throws."""
    for line, value in non_objects:
        if not isinstance(value, list):
            kind = "a string" if isinstance(value, str) else "a number" if not isinstance(value, bool) else "true"
            diagnostics.append(
                Diagnostic(
                    "warning",
                    "pi-throws",
                    f"line is {kind}, not an object, in a v1 file: Pi 1.6 throws when it opens this file (its "
                    "migration cannot give the line an id), so it cannot resume this session; delete the line",
                    line,
                )
            )
            return


def _is_utf8(body: bytes) -> bool:
    try:
        body.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def _note_lossy(replaced: bool, cut: bool, body: bytes, number: int, diagnostics: list[Diagnostic]) -> None:
    if replaced:
        at = 0
        try:
            body.decode("utf-8")
        except UnicodeDecodeError as exc:
            at = exc.start
        diagnostics.append(
            Diagnostic(
                "warning",
                "invalid-utf8",
                f"line is not valid UTF-8 (first bad byte at byte {at + 1} of the line): read with replacement "
                "characters (U+FFFD), as Pi reads it; the line's bytes are left as they are",
                number,
            )
        )
    if cut:
        diagnostics.append(
            Diagnostic(
                "warning",
                "deep-nesting",
                f"JSON nested deeper than {MAX_DEPTH} levels: the deeper parts are shown as {DEEP_MARKER!r} "
                "(Pi loads them in full); the line's bytes are left as they are",
                number,
            )
        )


def _not_a_header(where: str, number: int) -> SessionError:
    return SessionError(
        'not a Pi session: the first JSON line is not a session header ({"type":"session","id":...})',
        path=where,
        line=number,
        code="missing-header",
    )


def _bom_error(where: str) -> SessionError:
    return SessionError(
        "starts with a UTF-8 byte-order mark; Pi 1.6 refuses such a file (remove the first 3 bytes to repair it)",
        path=where,
        line=1,
        code="bom",
    )


Decorate = Callable[[Entry], tuple[str, ...]]


def parse_session(
    stream: Iterable[bytes],
    path: Path | None = None,
    size: int = 0,
    source: FileSource | None = None,
    decorate: Decorate | None = None,
    resume: PrefixState | None = None,
    snapshot: list[PrefixState] | None = None,
) -> Session:
    """Parse session lines (each ending in b"\\n", the last one maybe not) into a Session.

    The cyclic garbage collector is paused meanwhile: parsing creates millions of containers and none of them
    form cycles, so its passes would only cost time (a third of the load on large files).

    With a ``source`` (the same file, open), the parsed bodies of message entries that lie before a compaction's
    first kept entry are dropped as the parse goes on (see ``session.source``).

    ``resume`` (with a ``source``) is the state after the file's first lines (``session.index``): ``stream`` then
    holds the rest of the file, and every entry of the prefix is built released. ``snapshot`` receives the state
    after the last complete line, when the file is one that can be indexed.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _parse_session(stream, path, size, source, decorate, resume, snapshot)
    finally:
        if enabled:
            gc.enable()


def _release_before(
    entries: list[Entry],
    first_kept: Any,
    start: int,
    source: FileSource,
    decorate: Decorate | None,
    decorated: dict[int, tuple[str, ...]],
    mutations: dict[int, Facts],
) -> int:
    """Release the bodies of message entries from ``start`` up to the first kept entry of the compaction just
    appended (or up to that compaction); return where the next release starts. The tracked modifications of each
    body dropped are kept in ``mutations`` (see ``session.mutations``).

    Which bodies are dropped changes only memory and time, never an answer: a dropped body is read again when
    asked for.
    """
    end = len(entries) - 1
    for i in range(end - 1, start - 1, -1):
        if entries[i].id == first_kept:
            end = i
            break
    for entry in entries[start:end]:
        if entry.type != "message":
            continue
        if decorate is not None:
            decorated[entry.index] = decorate(entry)
        raw = entry._raw
        role = entry.role  # a role: the message is a dict
        if raw is not None and (role == "assistant" or role == "toolResult"):  # None: its facts from the index
            message = raw["message"]
            # mutation_facts, called only where it can find something (this runs for every message dropped)
            if isinstance(message.get("content"), list) if role == "assistant" else "nestedCalls" in message:
                facts = mutation_facts(message)
                if facts is not None:
                    mutations[entry.index] = facts
        entry._source = source  # entry.release(source), inlined
        entry._raw = None
    return max(start, end)


def _releasable(header: JsonDict) -> bool:
    """A v3 header: nothing will be migrated in memory, so a dropped body reads back the same."""
    version = header.get("version")
    return isinstance(version, int) and not isinstance(version, bool) and version >= CURRENT_VERSION


def _resumed_entries(state: PrefixState, source: FileSource) -> list[Entry]:
    """The prefix's entries, released, built from the index's columns (as ``Entry.head_only`` builds one, without
    a call per entry: this is most of what a re-run costs)."""
    new = Entry.__new__
    entries: list[Entry] = []
    append = entries.append
    columns = zip(
        state.ids, state.parents, state.types, state.roles, state.line, state.offset, state.length, strict=True
    )
    for index, (entry_id, parent, kind, role, line, offset, length) in enumerate(columns):
        entry = new(Entry)  # one assignment a field: four at once would build and unpack a tuple each time
        entry._raw = None
        entry._source = source
        entry._timestamp = UNREAD
        entry.id = entry_id
        entry.parent_id = parent
        entry.type = kind
        entry.role = role
        entry.line = line
        entry.index = index
        entry.offset = offset
        entry.length = length
        append(entry)
    return entries


def _snapshot(
    at: tuple[Any, ...],
    entries: list[Entry],
    diagnostics: list[Diagnostic],
    malformed: list[int],
    decorate: Decorate | None,
    decorated: dict[int, tuple[str, ...]],
    mutations: dict[int, Facts],
    known: int,
) -> PrefixState:
    """The loader's state ``at`` (see ``_parse_session``) as an index keeps it; with ``decorate``, every entry's
    decorated lines too (those kept for released bodies, the others rendered now); the tracked modifications of
    every entry (those of released bodies as kept, the others' read now)."""
    lines, prefix_len, n_entries, n_diags, n_malformed, header, header_line, last_value, released_to, prev, last = at
    kept = entries[:n_entries]
    value = None
    if last_value is not None:
        value = last_value[0]
        if isinstance(value, dict):
            value = {"id": value["id"]} if "id" in value else {}
    from pi_compact.session.index import PrefixState  # only a load that keeps an index comes here

    facts = {i: f for i, f in mutations.items() if i < n_entries}
    for entry in kept[known:]:  # bodies still held (never released, or parsed after the indexed prefix)
        role = entry.role
        if role == "assistant" or role == "toolResult":
            found = mutation_facts(entry.raw["message"])
            if found is not None:
                facts[entry.index] = found

    # One pass over the entries (they lie far apart in memory, between the bodies they were parsed with), in C
    rows = list(map(_HEAD_ROW, kept))
    line, offset, length, ids, parents, types, roles = map(list, zip(*rows, strict=True)) if rows else ([],) * 7
    where = dict(zip(ids, range(2, len(ids) + 2), strict=True))  # as by_id takes them: the later of an id wins
    slots = list(map(where.get, parents, repeat(1)))
    for i in compress(range(len(parents)), map(is_, parents, repeat(None))):
        slots[i] = 0  # no parent (where.get(None) would find an entry without an id)
    return PrefixState(
        prefix_len=prefix_len,
        lines=lines,
        header=header,
        header_line=header_line,
        last_value=value,
        last_value_line=0 if last_value is None else last_value[1],
        released_to=released_to,
        malformed=malformed[:n_malformed],
        diagnostics=[(d.level, d.code, d.message, d.line) for d in diagnostics[:n_diags]],
        prev_tail=prev[-TAIL_BYTES:],
        last_tail=last[-TAIL_BYTES:],
        line=line,
        offset=offset,
        length=length,
        ids=ids,
        parents=parents,
        types=types,
        roles=roles,
        mutations=sorted(facts.items()),
        parent_slots=slots,
        dangling=sorted(set(compress(parents, map((1).__eq__, slots)))),
        decorated=None
        if decorate is None
        else [list(decorated[e.index] if e.index in decorated else decorate(e)) for e in kept],
    )


def _parse_session(
    stream: Iterable[bytes],
    path: Path | None,
    size: int,
    source: FileSource | None,
    decorate: Decorate | None,
    resume: PrefixState | None = None,
    snapshot: list[PrefixState] | None = None,
) -> Session:
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
    header_line = 1
    last_value: tuple[Any, int] | None = None  # the last parsed entry value (object or not) and its line
    non_objects: list[tuple[int, Any]] = []  # (line, value) of entry lines that are not objects
    binary_line: int | None = None
    release = False
    released_to = 0
    decorated: dict[int, tuple[str, ...]] = {}
    mutations: dict[int, Facts] = {}
    start_line = start_offset = 0
    if resume is not None and source is not None:
        start_line, start_offset = resume.lines, resume.prefix_len
        last_line_no = resume.lines
        header, header_line = resume.header, resume.header_line
        release, released_to = True, resume.released_to
        if resume.last_value_line:
            last_value = (resume.last_value, resume.last_value_line)
        malformed = list(resume.malformed)
        diagnostics = [Diagnostic(*d) for d in resume.diagnostics]  # type: ignore[arg-type]
        prev_chunk, last_chunk = resume.prev_tail, resume.last_tail
        entries = _resumed_entries(resume, source)
        mutations = dict(resume.mutations)
        if decorate is not None and resume.decorated is not None:
            decorated = {i: tuple(lines) for i, lines in enumerate(resume.decorated)}
    at: tuple[Any, ...] | None = None  # the state before an unterminated last line, for ``snapshot``
    number, offset, body = start_line, start_offset, b""
    next_offset = start_offset
    loads, decode_error, new_entry = orjson.loads, orjson.JSONDecodeError, Entry.__new__
    known = _KNOWN.get
    for body in stream:  # split on b"\n" only, each line with its "\n" (JSON allows trailing whitespace)
        number += 1
        offset = next_offset
        next_offset += len(body)
        terminated = body.endswith(b"\n")
        if not terminated and snapshot is not None and release:
            at = (
                number - 1,
                offset,
                len(entries),
                len(diagnostics),
                len(malformed),
                header,
                header_line,
                last_value,
                released_to,
                prev_chunk,
                last_chunk,
            )
        last_terminated = terminated
        prev_chunk, last_chunk = last_chunk, body
        if number == 1 and body.startswith(BOM):
            first_line_bom = True
        if body.isspace() or not body:
            last_parsed_ok = True
            continue
        try:
            value = loads(body)  # the fast path: valid UTF-8, at most 1,024 levels
        except decode_error:
            try:
                parsed = parse_line(body)  # what orjson refuses and JSON.parse reads (see ``jsonline``)
            except ValueError:
                last_parsed_ok = False
                malformed.append(number)
                if header is None and binary_line is None and not _is_utf8(body):
                    binary_line = number
                continue
            value = parsed.value
            if parsed.replaced_utf8 or parsed.depth_cut:
                _note_lossy(parsed.replaced_utf8, parsed.depth_cut, body, number, diagnostics)
        else:
            n = len(body)  # a cheap bound first (see ``jsonline.may_nest_deeper``, inlined: it runs on every line)
            if n > MAX_DEPTH and (
                body.count(b"[") + body.count(b"{") > MAX_DEPTH if n <= COUNT_BELOW else nests_deeper(value)
            ):
                value, cut = cut_depth(value)
                if cut:
                    _note_lossy(False, True, body, number, diagnostics)
        last_parsed_ok = True
        if type(value) is not dict:  # JSON.parse gives exact objects; an object is never falsy
            if _is_falsy(value):
                diagnostics.append(
                    Diagnostic("warning", "null-line", "line is JSON null/false: skipped, as Pi does", number)
                )
                continue
            if header is None:
                if first_line_bom:
                    raise _bom_error(where)
                raise _not_a_header(where, number)
            last_value = (value, number)
            non_objects.append((number, value))
            diagnostics.append(
                Diagnostic(
                    "warning",
                    "non-object-line",
                    "line is JSON but not an object: Pi keeps it as an entry without an id (no entry can be its "
                    "child, and as the last line it leaves Pi no leaf); picompact leaves it out of the tree",
                    number,
                )
            )
            continue
        kind = value.get("type")
        if header is None:
            if not (kind == "session" and isinstance(value.get("id"), str)):
                if first_line_bom:
                    raise _bom_error(where)
                raise _not_a_header(where, number)
            header = value
            header_line = number
            release = source is not None and _releasable(header)
            continue
        if kind == "session":
            diagnostics.append(
                Diagnostic(
                    "warning",
                    "extra-header",
                    "another session header after the first: Pi leaves it out of the tree (no entry, never the leaf), "
                    "and so does picompact",
                    number,
                )
            )
            continue
        last_value = (value, number)
        length = len(body) - (1 if terminated else 0)
        if length >= BIG_LINE_BYTES:
            diagnostics.append(
                Diagnostic("info", "big-line", f"line is {length / 1e6:.1f} MB (loaded in full)", number)
            )
        # The head fields, read as ``Entry.refresh`` reads them
        entry_id = value.get("id")
        parent = value.get("parentId")
        role = None
        if type(kind) is not str:
            kind = ""
        elif (kind := known(kind, kind)) == "message":  # one string for each known type and role: later passes
            msg = value.get("message")  # over every entry compare them by identity and touch no other memory
            if type(msg) is dict:
                role = msg.get("role")
                role = known(role, role) if type(role) is str else None
        elif kind == "session_info" and not isinstance(value.get("name", ""), (str, type(None))):
            diagnostics.append(
                Diagnostic(
                    "warning",
                    "pi-throws",
                    "session_info name is not a string: Pi 1.6 throws on it (name.trim is not a function) when it "
                    "lists sessions (its session list leaves this session out) or shows this one's name",
                    number,
                )
            )
        entry = new_entry(Entry)  # as ``Entry.refresh`` reads the head, inlined: it runs on every line
        entry._raw = value
        entry._source = None
        entry._timestamp = UNREAD
        entry.id = entry_id if type(entry_id) is str else None  # type: ignore[assignment]
        entry.parent_id = parent if type(parent) is str and parent else None
        entry.type = kind
        entry.role = role
        entry.line = number
        entry.index = len(entries)
        entry.offset = offset
        entry.length = length
        entries.append(entry)
        if release and kind == "compaction":
            released_to = _release_before(
                entries,
                value.get("firstKeptEntryId"),
                released_to,
                source,  # type: ignore[arg-type]
                decorate,
                decorated,
                mutations,
            )
    last_line_no = number
    # Every message entry before ``released_to`` was released with its facts taken; so was the indexed prefix
    facts_known = max(released_to, len(resume.ids) if resume is not None and source is not None else 0)

    if snapshot is not None and release and header is not None:
        if at is None and last_terminated and last_line_no > 0:
            counts = (len(entries), len(diagnostics), len(malformed))
            at = (last_line_no, next_offset, *counts, header, header_line, last_value, released_to)
            at = (*at, prev_chunk, last_chunk)
        if at is not None and at[1] > 0 and at[0] >= header_line:
            snapshot.append(_snapshot(at, entries, diagnostics, malformed, decorate, decorated, mutations, facts_known))

    if header is None:
        if last_line_no == 0 or size == 0:
            raise SessionError("empty file: not a Pi session", path=where, code="empty-file")
        if first_line_bom:
            raise _bom_error(where)
        if binary_line is not None:
            raise SessionError(
                "not valid UTF-8 and no session header: not a Pi session file (a binary file?)",
                path=where,
                line=binary_line,
                code="missing-header",
            )
        raise SessionError("not a Pi session: no valid session header", path=where, line=1, code="missing-header")

    torn = not last_terminated and not last_parsed_ok
    for number in malformed:
        if torn and number == last_line_no:
            diagnostics.append(
                Diagnostic(
                    "warning",
                    "truncated-last-line",
                    "last line is incomplete (still being written by another program, or cut short by a crash): "
                    "ignored, as Pi ignores it",
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
    original_version = _migrate(header, entries, diagnostics, header_line)
    by_id = _index_ids(entries, diagnostics)
    parent_slots = None
    # The prefix's parent links hold for the whole file unless a later entry took one of its ids (ids all distinct
    # rules that out) or one of the ids its parents name in vain
    if resume is not None and len(by_id) == len(entries) and not any(p in by_id for p in resume.dangling):
        parent_slots = resume.parent_slots
    no_leaf = False
    if last_value is not None:
        if original_version < 2:  # Pi's v1 migration gives every object (arrays too) an id, and throws on the rest
            _check_v1_primitives(non_objects, diagnostics)
            no_leaf = not isinstance(last_value[0], (dict, list))
        else:
            no_leaf = _pi_finds_no_leaf(last_value[0])
            if no_leaf:
                _check_last_entry(*last_value, entries, diagnostics)
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
        ends_with_newline=last_terminated,
        torn_last_line=torn,
        tail=tail,
        no_leaf=no_leaf,
        decorated=decorated,
        parent_slots=parent_slots,
        mutations=mutations,
        mutations_known=facts_known,
    )


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
) -> Session:
    """Load a session file. Fatal problems raise SessionError/NotFoundError; others become diagnostics.

    The parsed bodies of old messages are dropped and read back when asked for (see ``session.source``); a caller
    that will read every entry anyway (a lint of the whole file, say) passes ``keep_bodies`` to parse once.
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
            session = parse_session(lines, p, size, None if keep_bodies else source, decorate, state, snapshot)
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
