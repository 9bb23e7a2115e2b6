"""What the cross-session index keeps of an entry: the text ``picompact show`` renders of it, without the lines
picompact writes itself (the ENTRY header, the ``[section]`` markers), and what the filters need (role or type,
time, tool names, whether it is a failed tool result); all of it text SQLite can hold."""

from __future__ import annotations

import math
from datetime import UTC, datetime

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


# What an entry's role weighs in the ranking (its BM25 score multiplied by it): what people search their history
# for first is what they said and decided, then what the agent concluded, then what tools printed. An assistant
# reply that calls tools is mostly its calls' arguments (an edit repeats the words of the file it edits).
WEIGHTS = {
    "user": 4.0,
    "assistant": 2.0,
    "compaction": 1.5,
    "branch_summary": 1.5,
    "custom_message": 1.2,
}
TOOL_CALLING_REPLY = 1.0
QUESTION = 1.5  # a user message that ends in a question mark: it asks, the answer is elsewhere
OTHER = 1.0  # tool results, bash output, and what else an entry can be


def weight(kind: str, tools: str, text: str = "") -> float:
    """What an entry of role or type ``kind`` weighs (``tools``: the tools it calls, ``document``'s)."""
    if kind == "assistant" and tools:
        return TOOL_CALLING_REPLY
    if kind == "user" and text.rstrip().endswith(("?", "\uff1f")):
        return QUESTION
    return WEIGHTS.get(kind, OTHER)


def body_row(text: str, kind: str, tools: str) -> tuple[str, str, float]:
    """The ``body`` columns of an entry: its text, that text's words of the scripts without spaces, its weight."""
    from pi_compact.archive.words import cjk_text

    return text, cjk_text(text), weight(kind, tools, text)


def entry_text(entry: Entry) -> str:
    """The text ``picompact show`` renders of ``entry``, without the lines picompact writes itself."""
    from pi_compact.search import render  # only when indexing: a search with nothing new skips it

    return render.entry_text(entry)


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
