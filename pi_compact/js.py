"""The JavaScript semantics Pi relies on, restated once: string lengths in UTF-16 code units, ``JSON.stringify``
and ``JSON.parse``, ``String(value)`` and ``Array.prototype.join``, ``Number(value)`` and
``Number.prototype.toString``, an integer as the double JavaScript holds, truthiness, ``new Date(value)``.

Pi is written in TypeScript; where its answers depend on how JavaScript measures, prints or converts a value,
picompact calls one of these, so that its numbers and bytes agree with Pi's.
"""

from __future__ import annotations

import contextlib
import json
import math
import re
from collections.abc import Iterable
from datetime import UTC, datetime
from typing import Any

import orjson

_FLOAT_REPR = r"^(-?)(\d+)(?:\.(\d+))?(?:e([+-]?\d+))?$"  # compiled on first use (re caches it)
_EXACT = 2**53  # every integer up to this magnitude is a double, and prints as itself
# What String.prototype.trim and ToNumber strip: WhiteSpace and LineTerminator
JS_WHITESPACE = (
    " \t\n\r\v\f\u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)
_JS_DECIMAL = r"[+-]?(?:Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)"
_JS_RADIX = r"0(?:[xX][0-9a-fA-F]+|[oO][0-7]+|[bB][01]+)"  # compiled when used (re caches them): not on every start


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
    if value.is_integer() and abs(value) <= _EXACT:  # past it the shortest digits end in zeros (2**60 …847000)
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
        # JSON.parse holds every number as a double: an integer past 2**53 is printed as its nearest double.
        return str(value) if -_EXACT <= value <= _EXACT else js_number_text(js_double(value))
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


def _has_js_number(value: Any) -> bool:
    """Whether a value holds a number JavaScript prints differently from orjson: a float, or an integer past
    2**53 (not exact as a double). Strings, the most of any arguments, are passed over without a call."""
    if isinstance(value, dict):
        items: Any = value.values()
    elif isinstance(value, list):
        items = value
    elif isinstance(value, float):
        return True
    elif isinstance(value, int):
        return not -_EXACT <= value <= _EXACT and not isinstance(value, bool)
    else:
        return False
    for item in items:  # noqa: SIM110  (a loop, not a generator: this runs for every tool call estimated)
        if type(item) is not str and _has_js_number(item):
            return True
    return False


def js_stringify(value: Any) -> str | None:
    """``JSON.stringify(value)``: compact, non-ASCII kept, key order kept, JavaScript number formatting.

    Returns None where JavaScript returns undefined (an absent value).
    """
    if not _has_js_number(value):
        # orjson refuses lone surrogates; those take the exact path below.
        with contextlib.suppress(TypeError):
            return orjson.dumps(value).decode("utf-8")
    return _js_stringify_slow(value)


def js_stringify_length(value: Any) -> int:
    """The JavaScript length of ``JSON.stringify(value)`` (``js_stringify``), 0 where it is undefined; an ASCII
    encoding is measured as orjson's bytes, not decoded."""
    if not _has_js_number(value):
        with contextlib.suppress(TypeError):  # a lone surrogate: the exact path below
            encoded = orjson.dumps(value)
            return len(encoded) if encoded.isascii() else js_len(encoded.decode("utf-8"))
    text = _js_stringify_slow(value)
    return js_len(text) if text else 0


def json_parse(text: str) -> Any:
    """Parse JSON text as JavaScript's ``JSON.parse`` would (no NaN/Infinity, no BOM, any number size)."""
    return json.loads(text, parse_constant=_reject_constant, parse_int=_parse_int)


def _reject_constant(name: str) -> Any:
    raise ValueError(f"unexpected token {name}")


def _parse_int(text: str) -> int | float:
    # JSON.parse turns any integer literal into a double; very long literals would trip Python's digit limit.
    return int(text) if len(text) <= 300 else float(text)


def js_double(value: int) -> float:
    """An integer as JavaScript holds it: the nearest double (``JSON.parse`` reads the literal 10^30 as 1e+30),
    Infinity past the largest."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


# JavaScript's Infinity where picompact counts in integers (tokens of a usage of 1e400): past the largest double, so
# that ``js_double`` (and so JSON output) makes it Infinity (null) again, and any sum with a real count stays past it.
JS_INFINITY = 2**1024


def js_integer(value: float) -> int:
    """A number of a session as an integer count: truncated, ``JS_INFINITY`` (or its negative) for an infinity
    (``JSON.parse`` reads 1e400 as Infinity), 0 for NaN; an integer as it is."""
    if isinstance(value, int):
        return value
    if math.isnan(value):
        return 0
    if math.isinf(value):
        return JS_INFINITY if value > 0 else -JS_INFINITY
    return int(value)


def js_quotient(dividend: float, divisor: float) -> float:
    """``dividend / divisor`` as JavaScript's doubles give it: an integer count past any double (10^400 tokens)
    over a small one is Infinity, not Python's OverflowError."""
    try:
        return dividend / divisor
    except OverflowError:
        return math.inf if (dividend > 0) == (divisor > 0) else -math.inf


def js_string(value: Any) -> str:
    """JavaScript's ``String(value)`` for a parsed JSON value: ``String([1, [2, 3]])`` is "1,2,3", ``String(1e21)``
    "1e+21", ``String(null)`` "null", an object "[object Object]"."""
    if isinstance(value, str):
        return value
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        if -_EXACT <= value <= _EXACT:
            return str(value)
        value = js_double(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        return js_number_text(value)
    if isinstance(value, list):
        return js_join(value)
    return "[object Object]"


def js_join(items: Iterable[Any], separator: str = ",") -> str:
    """``Array.prototype.join``: each item as ``String(item)``, null and undefined (None) as ""."""
    return separator.join("" if item is None else js_string(item) for item in items)


def js_to_number(value: Any) -> float:
    """JavaScript's ToNumber for a parsed JSON value (what ``value >= 3`` compares): true is 1, null 0, " 0x1F "
    31, "" 0, [5] 5, a string that is no number NaN, an object NaN."""
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, int):
        return js_double(value)
    if isinstance(value, float):
        return value
    if value is None:
        return 0.0
    text = js_string(value).strip(JS_WHITESPACE)
    if not text:
        return 0.0
    if re.fullmatch(_JS_DECIMAL, text):
        return float(text.replace("Infinity", "inf"))
    if re.fullmatch(_JS_RADIX, text):
        return js_double(int(text, 0))  # "0x" and 300 "f": Infinity
    return math.nan


def js_truthy(value: Any) -> bool:
    """JavaScript truthiness of a parsed JSON value: null, false, 0, NaN and "" are falsy, the rest truthy."""
    if value is None or value is False:
        return False
    if isinstance(value, (int, float)):
        return value != 0 and not (isinstance(value, float) and math.isnan(value))
    if isinstance(value, str):
        return value != ""
    return True


def js_date(value: Any) -> datetime | None:
    """``new Date(value)`` for the values sessions hold: epoch milliseconds or an ISO 8601 string; None for an
    invalid date (and for a string Python's datetime cannot read, past the year 9999). A date the offset moves out
    of Python's years 1 to 9999 (year 1 at +05:00, 9999-12-31 late at -05:00), which JavaScript holds, is the
    first or the last moment Python has: it sorts where JavaScript sorts it."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return _from_ms(js_double(value))
    if isinstance(value, float):
        return _from_ms(value)
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = datetime.fromisoformat(value)
    except ValueError:
        return None
    try:
        if parsed.tzinfo is None:
            # JavaScript reads a date-only string as UTC and a date-time without offset as local time.
            parsed = parsed.replace(tzinfo=UTC) if len(value) <= 10 else parsed.astimezone()
        return parsed.astimezone(UTC)
    except (OverflowError, OSError, ValueError):
        return (datetime.min if parsed.year < 5000 else datetime.max).replace(tzinfo=UTC)


def _from_ms(ms: float) -> datetime | None:
    if not math.isfinite(ms):
        return None
    try:
        return datetime.fromtimestamp(ms / 1000, tz=UTC)
    except (OverflowError, OSError, ValueError):
        return None
