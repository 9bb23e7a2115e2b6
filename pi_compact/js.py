"""The JavaScript semantics Pi relies on, restated once: string lengths in UTF-16 code units, ``JSON.stringify``
and ``JSON.parse``, ``String(value)``, ``Number(value)`` and ``Number.prototype.toString``.

Pi is written in TypeScript; where its answers depend on how JavaScript measures, prints or converts a value,
picompact calls one of these, so that its numbers and bytes agree with Pi's.
"""

from __future__ import annotations

import contextlib
import math
import re
from typing import Any

import orjson

_FLOAT_REPR = r"^(-?)(\d+)(?:\.(\d+))?(?:e([+-]?\d+))?$"  # compiled on first use (re caches it)


def js_len(text: str) -> int:
    """Length of a string in UTF-16 code units, as JavaScript's ``.length`` counts it."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


def js_number_text(value: float) -> str:
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


def json_quote(text: str) -> str:
    """A string as ``JSON.stringify`` writes it (non-ASCII kept, lone surrogates escaped)."""
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
        return js_number_text(value)
    if isinstance(value, str):
        return json_quote(value)
    if isinstance(value, list):
        return "[" + ",".join(_js_stringify_slow(v) or "null" for v in value) + "]"
    if isinstance(value, dict):
        parts = []
        for key, item in value.items():
            encoded = _js_stringify_slow(item)
            if encoded is not None:
                parts.append(json_quote(str(key)) + ":" + encoded)
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
