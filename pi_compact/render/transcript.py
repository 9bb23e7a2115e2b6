"""The raw branch as readable lines, with an index that says which entry and section every line belongs to.

Each entry renders to an ``ENTRY <id> <kind> <time>`` header followed by marked sections (``[thinking]``,
``[text]``, ``[toolCall]``, ``[toolResult]``, ...). Thinking, tool arguments and textual tool outputs are kept in
full. A line's entry and section come from how it was produced, never from its text, so an output that prints
"ENTRY abc123" cannot pass itself off as entry abc123.

Lines are either *decorated* (headers, markers, ``key: value`` first lines, generated JSON) or *pure*: a slice
between newlines of one JSON string from the entry, exactly as decoded. grep relies on that split: a pure line can
only match if the string's JSON encoding is in the raw line, so it renders only entries whose raw bytes can match,
plus the decorated lines of the others (see ``render_entry(..., decorated_only=True)``).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import orjson

from pi_compact.session.model import Entry, Session
from pi_compact.session.rawfile import FileBytes
from pi_compact.session.tree import Branch, get_branch

HEADER = "header"
THINKING = "thinking"
TEXT = "text"
TOOL_CALL = "toolCall"
TOOL_RESULT = "toolResult"
BASH = "bash"
SUMMARY = "summary"
CUSTOM = "custom"
SYSTEM = "system"
META = "meta"
SECTIONS = (HEADER, THINKING, TEXT, TOOL_CALL, TOOL_RESULT, BASH, SUMMARY, CUSTOM, SYSTEM, META)

_BASE_KEYS = frozenset({"type", "id", "parentId", "timestamp"})
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*\Z")
_SURROGATE = re.compile("[\ud800-\udfff]")
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_RENDER_CACHE = 64


def safe_text(text: str) -> str:
    """Lone surrogates (legal in JSON escapes, not in UTF-8) become U+FFFD, so the text can be printed or dumped."""
    if _SURROGATE.search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def entry_label(entry: Entry) -> str:
    """The id to show for an entry; one without an id (a damaged file) is named by its line."""
    entry_id = entry.id
    return entry_id if isinstance(entry_id, str) else f"line{entry.line}"


def header_line(entry: Entry) -> str:
    raw = entry.raw
    entry_id = raw.get("id")
    label = entry_id if isinstance(entry_id, str) else f"line{entry.line}"
    kind = raw.get("type")
    msg = raw.get("message") if kind == "message" else None
    role = msg.get("role") if isinstance(msg, dict) else None
    if not (isinstance(role, str) and role):
        role = kind if isinstance(kind, str) and kind else "?"
    ts = raw.get("timestamp")
    return f"ENTRY {label} {role} {ts}" if isinstance(ts, str) and ts else f"ENTRY {label} {role}"


def _json(value: Any) -> str:
    try:
        return orjson.dumps(value).decode()
    except TypeError:  # a lone surrogate or a huge integer: fall back to the standard library
        import json

        return json.dumps(value, ensure_ascii=False)


class _Lines:
    """Collects rendered lines and their sections; in decorated-only mode pure lines are dropped unrendered."""

    __slots__ = ("full", "lines", "markers", "sections")

    def __init__(self, full: bool) -> None:
        self.full = full
        self.lines: list[str] = []
        self.sections: list[str] = []
        self.markers: list[int] = []

    def deco(self, text: str, section: str) -> None:
        self.lines.append(text)
        self.sections.append(section)

    def mark(self, text: str, section: str) -> None:
        """A line picompact writes itself (``ENTRY …``, ``[toolResult] read id=… ok``): searched only on request."""
        self.markers.append(len(self.lines))
        self.deco(text, section)

    def body(self, text: str, section: str) -> None:
        """A JSON string from the entry, every line of it pure."""
        if not self.full:
            return
        parts = text.split("\n")
        self.lines.extend(parts)
        self.sections.extend([section] * len(parts))

    def field(self, prefix: str, text: str, section: str) -> None:
        """``prefix`` + a JSON string: its first line is decorated, the rest pure."""
        cut = text.find("\n")
        if cut < 0:
            self.deco(prefix + text, section)
            return
        self.deco(prefix + text[:cut], section)
        self.body(text[cut + 1 :], section)

    def value(self, path: str, value: Any, section: str) -> None:
        """Any JSON value, flattened to ``path: leaf`` lines; strings decoded, so multi-line text stays readable."""
        if isinstance(value, str):
            self.field(f"{path}: ", value, section)
        elif isinstance(value, dict) and value:
            for key, item in value.items():
                self.value(path + _member(key), item, section)
        elif isinstance(value, list) and value:
            for i, item in enumerate(value):
                self.value(f"{path}[{i}]", item, section)
        else:
            self.deco(f"{path}: {_json(value)}", section)

    def fields(self, obj: dict[str, Any], section: str, skip: frozenset[str] = frozenset()) -> None:
        for key, item in obj.items():
            if key in skip:
                continue
            self.value(_member(key)[1:] if _IDENT.match(key) else _member(key), item, section)


@lru_cache(maxsize=4096)
def _member(key: str) -> str:
    """How a key extends a path: ``.name``, or ``["odd key"]``."""
    return f".{key}" if _IDENT.match(key) else f"[{_json(key)}]"


def _image_line(block: dict[str, Any]) -> str:
    data = block.get("data")
    size = f", {len(data) * 3 // 4} bytes" if isinstance(data, str) else ""
    return f"[image] {block.get('mimeType', '?')}{size}"


def _content(out: _Lines, content: Any, section: str, marker: str | None) -> None:
    """Text content (a string or blocks): each text block under its marker, images as one line."""
    if isinstance(content, str):
        if marker:
            out.mark(marker, section)
        out.body(content, section)
        return
    if not isinstance(content, list):
        if content is not None:
            out.value("content", content, section)
        return
    for block in content:
        if not isinstance(block, dict):
            out.value("block", block, section)
            continue
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            if marker:
                out.mark(marker, section)
            out.body(block["text"], section)
        elif kind == "image":
            out.mark(_image_line(block), section)
        else:
            out.mark(f"[{kind}]", section)
            out.fields(block, section, frozenset({"type"}))


def _assistant(out: _Lines, msg: dict[str, Any]) -> None:
    content = msg.get("content")
    blocks = content if isinstance(content, list) else [{"type": "text", "text": content}] if content else []
    for block in blocks:
        if not isinstance(block, dict):
            out.value("block", block, TEXT)
            continue
        kind = block.get("type")
        if kind == "thinking":
            out.mark("[thinking] (redacted)" if block.get("redacted") else "[thinking]", THINKING)
            if isinstance(block.get("thinking"), str):
                out.body(block["thinking"], THINKING)
        elif kind == "text":
            out.mark("[text]", TEXT)
            if isinstance(block.get("text"), str):
                out.body(block["text"], TEXT)
        elif kind == "toolCall":
            out.mark(f"[toolCall] {block.get('name', '?')} id={block.get('id', '?')}", TOOL_CALL)
            args = block.get("arguments")
            if isinstance(args, dict):
                out.fields(args, TOOL_CALL)
            elif args is not None:
                out.value("arguments", args, TOOL_CALL)
        else:
            out.mark(f"[{kind}]", META)
            out.fields(block, META, frozenset({"type"}))
    if msg.get("stopReason") in ("error", "aborted"):
        out.mark(f"[stop] {msg.get('stopReason')}", META)
        if isinstance(msg.get("errorMessage"), str):
            out.body(msg["errorMessage"], META)


def _tool_result(out: _Lines, msg: dict[str, Any]) -> None:
    status = "error" if msg.get("isError") else "ok"
    out.mark(f"[toolResult] {msg.get('toolName', '?')} id={msg.get('toolCallId', '?')} {status}", TOOL_RESULT)
    _content(out, msg.get("content"), TOOL_RESULT, None)
    nested = msg.get("nestedCalls")
    if isinstance(nested, dict):
        out.mark(f"[nestedCalls] complete={_json(nested.get('complete'))}", TOOL_RESULT)
        for i, call in enumerate(nested.get("calls") or []):
            out.value(f"calls[{i}]", call, TOOL_RESULT)


def _bash(out: _Lines, msg: dict[str, Any]) -> None:
    status = "cancelled" if msg.get("cancelled") else f"exit {msg.get('exitCode')}"
    extra = " truncated" if msg.get("truncated") else ""
    out.mark(f"[bash] {status}{extra}", BASH)
    command = msg.get("command")
    if isinstance(command, str):
        out.field("$ ", command, BASH)
    output = msg.get("output")
    if isinstance(output, str):
        out.body(output, BASH)
    if isinstance(msg.get("fullOutputPath"), str):
        out.field("full output: ", msg["fullOutputPath"], BASH)


def _system(out: _Lines, msg: dict[str, Any]) -> None:
    _content(out, msg.get("content"), SYSTEM, "[system]")
    sections = msg.get("sections")
    if isinstance(sections, dict):
        for name, text in sections.items():
            if isinstance(text, str):
                out.mark(f"[system section] {name}", SYSTEM)
                out.body(text, SYSTEM)
            else:
                out.mark(f"[system section] {name} removed", SYSTEM)
    for key, label in (("toolsAdded", "tools added"), ("toolsRemoved", "tools removed")):
        tools = msg.get(key)
        if isinstance(tools, list) and tools:
            names = [str(t.get("name")) for t in tools if isinstance(t, dict)]
            out.mark(f"[{label}] {', '.join(names)}", SYSTEM)


def _message(out: _Lines, msg: dict[str, Any]) -> None:
    role = msg.get("role")
    if role == "user":
        _content(out, msg.get("content"), TEXT, "[text]")
    elif role == "assistant":
        _assistant(out, msg)
    elif role == "toolResult":
        _tool_result(out, msg)
    elif role == "bashExecution":
        _bash(out, msg)
    elif role == "system":
        _system(out, msg)
    elif role == "custom":
        out.mark(f"[custom] {msg.get('customType', '?')}", CUSTOM)
        _content(out, msg.get("content"), CUSTOM, None)
    elif role in ("branchSummary", "compactionSummary"):
        out.mark(f"[summary] {role}", SUMMARY)
        if isinstance(msg.get("summary"), str):
            out.body(msg["summary"], SUMMARY)
    else:
        out.mark(f"[{role}]", META)
        out.fields(msg, META, frozenset({"role"}))


def _render_into(out: _Lines, entry: Entry) -> None:
    raw = entry.raw
    kind = raw.get("type")
    out.mark(header_line(entry), HEADER)
    if kind == "message":
        msg = raw.get("message")
        if isinstance(msg, dict):
            _message(out, msg)
        return
    if kind == "compaction":
        out.mark(
            f"[summary] compaction firstKeptEntryId={raw.get('firstKeptEntryId')} "
            f"tokensBefore={raw.get('tokensBefore')}",
            SUMMARY,
        )
        if isinstance(raw.get("summary"), str):
            out.body(raw["summary"], SUMMARY)
        system = raw.get("systemMessage")
        if isinstance(system, dict):
            _system(out, system)
        out.fields(raw, META, _BASE_KEYS | {"summary", "firstKeptEntryId", "tokensBefore", "systemMessage"})
    elif kind == "branch_summary":
        out.mark(f"[summary] branch fromId={raw.get('fromId')}", SUMMARY)
        if isinstance(raw.get("summary"), str):
            out.body(raw["summary"], SUMMARY)
        out.fields(raw, META, _BASE_KEYS | {"summary", "fromId"})
    elif kind == "custom_message":
        out.mark(f"[custom] {raw.get('customType', '?')}", CUSTOM)
        _content(out, raw.get("content"), CUSTOM, None)
        out.fields(raw, META, _BASE_KEYS | {"customType", "content"})
    elif kind == "custom":
        out.mark(f"[custom] {raw.get('customType', '?')}", CUSTOM)
        out.fields(raw, CUSTOM, _BASE_KEYS | {"customType"})
    elif kind == "context_edit":
        replacement = raw.get("replacement")
        action = "omit" if replacement is None else "replace"
        out.mark(f"[contextEdit] {action} {raw.get('targetId')}", META)
        if isinstance(replacement, dict):
            _content(out, replacement.get("content"), META, None)
        out.fields(raw, META, _BASE_KEYS | {"targetId", "replacement"})
    else:
        out.fields(raw, META, _BASE_KEYS)


@dataclass(frozen=True, slots=True)
class RenderedEntry:
    """One entry's lines and, for each, its section: the authoritative index for that entry."""

    entry: Entry
    lines: tuple[str, ...]
    sections: tuple[str, ...]
    markers: frozenset[int] = frozenset()  # indices of the lines picompact wrote (header, section markers)

    @property
    def chars(self) -> int:
        return sum(len(line) for line in self.lines) + max(len(self.lines) - 1, 0)

    def text(self) -> str:
        return "\n".join(self.lines)


def render_entry(entry: Entry, *, decorated_only: bool = False) -> RenderedEntry:
    """Render one entry. ``decorated_only`` keeps just the lines not copied verbatim from one JSON string."""
    released = not entry.loaded
    out = _Lines(full=not decorated_only)
    _render_into(out, entry)
    if released:
        _ = entry.timestamp  # kept on the entry: grep reports it for every match
        entry.forget()  # a body the loader released is read again for this rendering only
    return RenderedEntry(entry, tuple(out.lines), tuple(out.sections), frozenset(out.markers))


# ---------------------------------------------------------------------------------------------------------------
# One-line previews


def _first_line(text: str, width: int) -> str:
    head = text[: width * 4 + 200]
    for line in head.split("\n"):
        if line.strip():
            return line
    return ""


def _content_preview(content: Any, width: int) -> str:
    if isinstance(content, str):
        return _first_line(content, width)
    if isinstance(content, list):
        images = 0
        for block in content:
            if not isinstance(block, dict):
                continue
            if block.get("type") == "text" and isinstance(block.get("text"), str):
                line = _first_line(block["text"], width)
                if line:
                    return line
            elif block.get("type") == "image":
                images += 1
        if images:
            return f"[{images} image{'s' if images > 1 else ''}]"
    return ""


def _assistant_preview(msg: dict[str, Any], width: int) -> str:
    content = msg.get("content")
    blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    for block in blocks:
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            line = _first_line(block["text"], width)
            if line:
                return line
    calls = [b for b in blocks if b.get("type") == "toolCall"]
    if calls:
        parts = [f"{c.get('name')}({_json(c.get('arguments', {}))[1:-1][: width * 2]})" for c in calls[:3]]
        more = f" +{len(calls) - 3} more" if len(calls) > 3 else ""
        return "; ".join(parts) + more
    if msg.get("stopReason") in ("error", "aborted"):
        return f"[{msg.get('stopReason')}] {_first_line(str(msg.get('errorMessage') or ''), width)}".rstrip()
    for block in blocks:
        if block.get("type") == "thinking":
            return "[thinking] " + _first_line(str(block.get("thinking") or ""), width)
    return ""


def _preview_text(entry: Entry, width: int) -> str:
    raw = entry.raw
    msg = entry.message
    if msg is not None:
        role = msg.get("role")
        if role == "assistant":
            return _assistant_preview(msg, width)
        if role == "toolResult":
            status = "error" if msg.get("isError") else "ok"
            return f"{msg.get('toolName')} {status}: {_content_preview(msg.get('content'), width)}"
        if role == "bashExecution":
            return f"$ {_first_line(str(msg.get('command') or ''), width)} (exit {msg.get('exitCode')})"
        if role == "custom":
            return f"{msg.get('customType')}: {_content_preview(msg.get('content'), width)}"
        if role in ("branchSummary", "compactionSummary"):
            return _first_line(str(msg.get("summary") or ""), width)
        if role == "system":
            text = _content_preview(msg.get("content"), width)
            sections = msg.get("sections")
            if not text and isinstance(sections, dict) and sections:
                text = "sections: " + ", ".join(str(name) for name in sections)
            return text
        return _content_preview(msg.get("content"), width)
    kind = entry.type
    if kind in ("compaction", "branch_summary"):
        return _first_line(str(raw.get("summary") or ""), width)
    if kind == "custom_message":
        return f"{raw.get('customType')}: {_content_preview(raw.get('content'), width)}"
    if kind == "custom":
        return f"{raw.get('customType')}"
    if kind == "model_change":
        return f"{raw.get('provider')}/{raw.get('modelId')}"
    if kind == "thinking_level_change":
        return str(raw.get("thinkingLevel"))
    if kind == "label":
        return f"{raw.get('targetId')}: {_json(raw.get('label'))}"
    if kind == "session_info":
        return _json(raw.get("name"))
    if kind == "context_edit":
        replacement = raw.get("replacement")
        if replacement is None:
            return f"omit {raw.get('targetId')}"
        text = _content_preview(replacement.get("content") if isinstance(replacement, dict) else None, width)
        return f"replace {raw.get('targetId')}: {text}"
    rest = {k: v for k, v in raw.items() if k not in _BASE_KEYS}
    return _json(rest)[: width * 2]


def preview(entry: Entry, width: int = 100) -> str:
    """A single printable line saying what the entry holds, at most ``width`` characters."""
    text = " ".join(_preview_text(entry, width).split())
    text = safe_text(_CONTROL.sub("?", text))
    return text if len(text) <= width else text[: width - 1] + "…"


# ---------------------------------------------------------------------------------------------------------------
# The transcript: a scope of entries (one branch, or every entry), rendered on demand


@dataclass(frozen=True, slots=True)
class TranscriptLine:
    """One line of the transcript with its authoritative attribution."""

    entry: Entry
    number: int  # 1-based line within the entry's rendering
    section: str
    text: str


@dataclass(eq=False)
class Transcript:
    """The entries to search (the branch root → leaf, or with ``all_branches`` every entry in file order),
    rendered lazily and cached, plus what pagination needs: positions, branch labels, a fingerprint.

    Build it once with ``build_transcript`` and pass it to every list/grep/show call on the same session.
    """

    session: Session
    branch: Branch
    entries: tuple[Entry, ...]
    all_branches: bool = False
    _positions: dict[int, int] = field(default_factory=dict, repr=False)
    _on_branch: set[int] = field(default_factory=set, repr=False)
    _branch_of: dict[int, str] | None = field(default=None, repr=False)
    _cache: dict[int, RenderedEntry] = field(default_factory=dict, repr=False)
    _raw: bytes | FileBytes | None = field(default=None, repr=False)
    _raw_loaded: bool = field(default=False, repr=False)
    _fingerprint: str | None = field(default=None, repr=False)
    _ids: dict[str, Entry] | None = field(default=None, repr=False)
    census: Any = field(default=None, repr=False)  # lookup.prefilter.Census of the raw bytes, once taken

    def __post_init__(self) -> None:
        self._positions = {id(e): i for i, e in enumerate(self.entries)}
        self._on_branch = {id(e) for e in self.branch.entries}

    @property
    def leaf(self) -> Entry | None:
        return self.branch.leaf

    def __len__(self) -> int:
        return len(self.entries)

    def position(self, entry: Entry) -> int:
        """Position of an entry in the scope, or -1."""
        return self._positions.get(id(entry), -1)

    def on_branch(self, entry: Entry) -> bool:
        return id(entry) in self._on_branch

    def branch_leaf(self, entry: Entry) -> str | None:
        """The leaf id of the branch an entry belongs to: the current leaf for the current branch, else the
        latest leaf (in file order) below it."""
        if self.on_branch(entry):
            return entry_label(self.leaf) if self.leaf is not None else None
        if self._branch_of is None:
            self._branch_of = self._label_branches()
        return self._branch_of.get(id(entry))

    def _label_branches(self) -> dict[int, str]:
        from pi_compact.session.tree import leaves

        labels: dict[int, str] = {}
        by_id = self.session.by_id
        for tip in reversed(leaves(self.session)):
            current: Entry | None = tip
            while current is not None and id(current) not in labels and id(current) not in self._on_branch:
                labels[id(current)] = entry_label(tip)
                parent = current.parent_id
                current = by_id.get(parent) if parent is not None else None
        return labels

    def find(self, entry_id: str) -> Entry | None:
        """The entry with this id in the scope; a unique prefix of at least 4 characters also works."""
        if self._ids is None:
            self._ids = {entry_label(e): e for e in self.entries}
        found = self._ids.get(entry_id)
        if found is not None or len(entry_id) < 4:
            return found
        hits = [e for key, e in self._ids.items() if key.startswith(entry_id)]
        return hits[0] if len(hits) == 1 else None

    def render(self, entry: Entry) -> RenderedEntry:
        key = id(entry)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        rendered = render_entry(entry)
        if len(self._cache) >= _RENDER_CACHE:
            self._cache.pop(next(iter(self._cache)))
        self._cache[key] = rendered
        return rendered

    def lines(self, start: int = 0) -> Iterator[TranscriptLine]:
        """Every line of the transcript from scope position ``start``, each with its entry and section."""
        for entry in self.entries[start:]:
            rendered = self.render(entry)
            for number, (text, section) in enumerate(zip(rendered.lines, rendered.sections, strict=True), 1):
                yield TranscriptLine(entry, number, section, text)

    # -- raw bytes -------------------------------------------------------------------------------------------

    def raw_bytes(self) -> bytes | FileBytes | None:
        """The session file's bytes, if they are still the ones that were loaded (same size and tail).

        A file is read a window at a time (``FileBytes``), not copied into memory next to the parsed session."""
        if not self._raw_loaded:
            self._raw_loaded = True
            self._raw = self._read_raw()
        return self._raw

    def _read_raw(self) -> FileBytes | None:
        path = self.session.path
        if path is None:
            return None
        size, tail = self.session.size, self.session.tail
        try:
            if Path(path).stat().st_size != size:
                return None
            data = FileBytes(path, size)
            if tail and data.read(size - len(tail), size) != tail:
                return None
        except OSError:
            return None
        return data

    def attach_raw(self, data: bytes) -> None:
        """Supply the bytes a session was loaded from (``load_session_bytes``), for fast search and ``--raw``."""
        if len(data) == self.session.size:
            self._raw, self._raw_loaded = data, True

    def entry_bytes(self, entry: Entry) -> bytes | None:
        """The entry's line exactly as in the file, without its newline."""
        data = self.raw_bytes()
        if data is None:
            return None
        try:
            return data[entry.offset : entry.offset + entry.length]
        except OSError:
            return None

    # -- identity --------------------------------------------------------------------------------------------

    def fingerprint(self) -> str:
        """Changes whenever the file or the scope changes: its size and last bytes, and the id, line and byte
        length of every entry in scope. Content only (no mtime or path), so the same file gives the same cursors."""
        if self._fingerprint is None:
            digest = hashlib.blake2b(digest_size=12)
            digest.update(f"{self.session.size}\0{self.session.session_id}\0{int(self.all_branches)}\0".encode())
            digest.update(self.session.tail)
            parts = "\0".join(f"{entry_label(e)}\0{e.line}\0{e.length}" for e in self.entries)
            digest.update(parts.encode("utf-8", "surrogatepass"))
            self._fingerprint = digest.hexdigest()
        return self._fingerprint


def build_transcript(session: Session, *, leaf_id: str | None = None, all_branches: bool = False) -> Transcript:
    """The transcript for a session: the branch to ``leaf_id`` (default: Pi's leaf), or every entry."""
    branch = get_branch(session, leaf_id)
    if all_branches:
        scope = tuple(e for e in session.entries if not isinstance(e.id, str) or session.by_id.get(e.id) is e)
    else:
        scope = tuple(branch.entries)
    return Transcript(session, branch, scope, all_branches)


def as_transcript(source: Transcript | Branch | Session) -> Transcript:
    """Accept what a caller has at hand: a Transcript, a Branch (its session and leaf) or a Session."""
    if isinstance(source, Transcript):
        return source
    if isinstance(source, Branch):
        return Transcript(source.session, source, tuple(source.entries))
    return build_transcript(source)
