"""One entry as readable lines, each attributed to its entry and section; and one-line previews.

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

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import orjson

from pi_compact.checkpoint.prune_stub import PRUNE_MARK, is_prune_stub, replacement_text
from pi_compact.session.entries import Entry
from pi_compact.session.jsonline import safe_text

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
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


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
        action = "omit" if replacement is None else "prune" if is_prune_stub(raw) else "replace"
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


class _TextLines(_Lines):
    """The lines of ``entry_text``: what picompact writes itself (``mark``) is left out, and a JSON string from the
    entry (``body``) is kept whole instead of being split into the lines the text would join again."""

    __slots__ = ()

    def deco(self, text: str, section: str) -> None:
        self.lines.append(text)

    def mark(self, text: str, section: str) -> None:
        """A line picompact writes (``ENTRY …``, section markers) is not the entry's text: nothing is kept."""

    def body(self, text: str, section: str) -> None:
        self.lines.append(text)


def entry_text(entry: Entry) -> str:
    """The text ``show`` renders of ``entry`` without the lines picompact writes itself (what the cross-session index
    holds of an entry): ``render_entry``'s lines but the markers, joined with newlines, at a fraction of the cost."""
    released = not entry.loaded
    out = _TextLines(True)
    _render_into(out, entry)
    if released:
        _ = entry.timestamp  # kept on the entry, as ``render_entry`` keeps it
        entry.forget()
    return "\n".join(out.lines)


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
        if is_prune_stub(raw):
            stub = (replacement_text(replacement) or "")[len(PRUNE_MARK) :]
            return f"prune {raw.get('targetId')}: {_content_preview(stub.strip(), width)}"
        text = _content_preview(replacement.get("content") if isinstance(replacement, dict) else None, width)
        return f"replace {raw.get('targetId')}: {text}"
    rest = {k: v for k, v in raw.items() if k not in _BASE_KEYS}
    return _json(rest)[: width * 2]


def preview(entry: Entry, width: int = 100) -> str:
    """A single printable line saying what the entry holds, at most ``width`` characters."""
    text = " ".join(_preview_text(entry, width).split())
    text = safe_text(_CONTROL.sub("?", text))
    return text if len(text) <= width else text[: width - 1] + "…"
