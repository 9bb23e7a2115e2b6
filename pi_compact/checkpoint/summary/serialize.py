"""Conversation → labelled plain text for a summarising model (Pi's serializeConversation).

A summariser handed something that reads like a live chat tends to answer it; handed labelled lines
(``[User]:``, ``[Assistant]:``, ``[Assistant tool calls]:``, ``[Tool result]:``) it describes them. The output is
byte-identical to Pi 1.6's for the same messages, so a summary request carries exactly what Pi would send.

Tool results are cut to 2000 UTF-16 code units (never between the halves of a surrogate pair) with a marker that
says how many were cut: they are the bulk of most contexts and the summary needs their gist, not their bytes.
Thinking is left out, as Pi 1.6 does (replayed reasoning is often not what the model saw, and it can make the
request larger than the context it summarises); ``include_thinking=True`` adds it back the way earlier Pi
versions did, as an ``[Assistant thinking]:`` block before the visible text.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from pi_compact.js import js_join, js_len, js_string, js_stringify
from pi_compact.pi.messages import convert_to_llm
from pi_compact.session.entries import JsonDict

TOOL_RESULT_MAX_CHARS = 2000

__all__ = [
    "TOOL_RESULT_MAX_CHARS",
    "js_slice_head",
    "serialize_conversation",
    "serialize_messages",
    "truncate_for_summary",
]


def _content_text(content: Any, separator: str = "\n") -> str:
    """Pi's contentText: a string as is, else the text blocks joined (a missing text joins as empty)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return js_join(
        (block.get("text") for block in content if isinstance(block, dict) and block.get("type") == "text"), separator
    )


def js_slice_head(text: str, units: int) -> str:
    """At most ``units`` UTF-16 code units from the start, dropping a high surrogate whose pair would be split."""
    end = max(0, units)
    if text.isascii():
        return text[:end]
    raw = text.encode("utf-16-le", "surrogatepass")
    if len(raw) // 2 <= end:
        return text

    def unit(i: int) -> int:
        return raw[2 * i] | (raw[2 * i + 1] << 8)

    if end > 0 and 0xD800 <= unit(end - 1) <= 0xDBFF and 0xDC00 <= unit(end) <= 0xDFFF:
        end -= 1
    return raw[: 2 * end].decode("utf-16-le", "surrogatepass")


def truncate_for_summary(text: str, max_chars: int = TOOL_RESULT_MAX_CHARS) -> str:
    """The head of ``text`` plus a marker counting the cut units (Pi counts from ``max_chars``, as here)."""
    length = js_len(text)
    if length <= max_chars:
        return text
    return f"{js_slice_head(text, max_chars)}\n\n[... {length - max_chars} more characters truncated]"


def _entries(args: Any) -> list[tuple[str, Any]]:
    """``Object.entries(args)`` for JSON-shaped values."""
    if isinstance(args, dict):
        return [(str(k), v) for k, v in args.items()]
    if isinstance(args, list):
        return [(str(i), v) for i, v in enumerate(args)]
    if isinstance(args, str):
        return [(str(i), ch) for i, ch in enumerate(args)]
    return []


def _tool_call_text(block: JsonDict) -> str:
    args = ", ".join(f"{key}={js_stringify(value) or 'undefined'}" for key, value in _entries(block.get("arguments")))
    name = js_string(block["name"]) if "name" in block else "undefined"
    return f"{name}({args})"


def _assistant_parts(message: JsonDict, include_thinking: bool) -> list[str]:
    content = message.get("content")
    blocks = [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []
    parts: list[str] = []
    if include_thinking:
        thinking = [b.get("thinking") for b in blocks if b.get("type") == "thinking"]
        if thinking:
            parts.append("[Assistant thinking]: " + js_join(thinking, "\n"))
    if any(b.get("type") == "text" for b in blocks):
        parts.append("[Assistant]: " + _content_text(blocks))
    calls = [_tool_call_text(b) for b in blocks if b.get("type") == "toolCall"]
    if calls:
        parts.append("[Assistant tool calls]: " + "; ".join(calls))
    return parts


def serialize_conversation(
    messages: Iterable[JsonDict], *, include_thinking: bool = False, mask: Callable[[str], str] | None = None
) -> str:
    """Serialise messages already converted for the wire (``convert_to_llm``); blocks joined by a blank line.

    System messages are skipped: they are prompt state, not conversation. ``mask`` (secret redaction) is applied to a
    tool result's whole text before it is cut, so a cut never leaves the first part of a key unmasked.
    """
    parts: list[str] = []
    for message in messages:
        role = message.get("role")
        if role == "user":
            text = _content_text(message.get("content"), "")
            if text:
                parts.append(f"[User]: {text}")
        elif role == "assistant":
            parts.extend(_assistant_parts(message, include_thinking))
        elif role == "toolResult":
            text = _content_text(message.get("content"), "")
            if text:
                parts.append(f"[Tool result]: {truncate_for_summary(mask(text) if mask is not None else text)}")
    return "\n\n".join(parts)


def serialize_messages(
    messages: Iterable[JsonDict], *, include_thinking: bool = False, mask: Callable[[str], str] | None = None
) -> str:
    """Context messages (custom, bash, summaries included) → text: ``convert_to_llm`` then serialise, as Pi does."""
    return serialize_conversation(convert_to_llm(messages), include_thinking=include_thinking, mask=mask)
