"""What the cross-session index keeps of an entry: the text ``picompact show`` renders of it, without the lines
picompact writes itself (the ENTRY header, the ``[section]`` markers), and what the filters need (role or type,
time, tool names, whether it is a failed tool result); all of it text SQLite can hold."""

from __future__ import annotations

import functools
import math
from datetime import UTC, datetime
from typing import Any

from pi_compact.session.entries import Entry


def _epoch_ms(text: str | None) -> int | None:
    if not text:
        return None
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    try:
        return math.floor(when.timestamp() * 1000)
    except (OverflowError, OSError, ValueError):
        return None


def clean(text: str) -> str:
    """Text SQLite can hold (UTF-8): a lone surrogate becomes U+FFFD."""
    if text.isascii():  # a flag of the string, read at no cost: most ids, kinds and times
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return text


@functools.cache
def _text_class() -> Any:
    """``search.render``'s line collector, keeping only what the index holds: the lines picompact writes itself
    (``mark``) are left out, and a JSON string from the entry (``body``) is kept whole rather than split into its
    lines, which the text would join again. Joined with newlines, the pieces are ``show``'s lines without the
    marker lines, the same text, at a fraction of the cost."""
    from pi_compact.search import render  # only when indexing: a search with nothing new skips it

    class Text(render._Lines):
        __slots__ = ()

        def deco(self, text: str, section: str) -> None:
            self.lines.append(text)

        def mark(self, text: str, section: str) -> None:
            pass

        def body(self, text: str, section: str) -> None:
            self.lines.append(text)

    return Text, render._render_into


def entry_text(entry: Entry) -> str:
    """The text ``picompact show`` renders of ``entry``, without the lines picompact writes itself."""
    text_class, render_into = _text_class()
    out = text_class(True)
    released = not entry.loaded
    render_into(out, entry)
    if released:
        _ = entry.timestamp  # kept on the entry, as ``render_entry`` keeps it
        entry.forget()
    return "\n".join(out.lines)


def document(entry: Entry) -> tuple[str, str, str | None, int | None, str, int]:
    """What the index keeps of an entry: (text, role or type, timestamp, its epoch ms, tool names, failed)."""
    text = entry_text(entry)
    kind = entry.role or entry.type
    ts = entry.timestamp
    tools: list[str] = []
    failed = 0
    msg = entry.message
    if msg is not None:
        if entry.role == "toolResult":
            name = msg.get("toolName")
            if isinstance(name, str):
                tools.append(name)
            failed = 1 if msg.get("isError") is True else 0
        elif entry.role == "assistant" and isinstance(msg.get("content"), list):
            for block in msg["content"]:
                name = block.get("name") if isinstance(block, dict) and block.get("type") == "toolCall" else None
                if isinstance(name, str) and name not in tools:
                    tools.append(name)
    tool_text = "\n" + "\n".join(tools) + "\n" if tools else ""
    return clean(text), clean(kind), clean(ts) if ts else None, _epoch_ms(ts), clean(tool_text), failed
