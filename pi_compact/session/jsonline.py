"""Parse one session line as Pi's ``JSON.parse`` does, whatever the line holds.

Pi decodes the file as UTF-8 with replacement characters and hands each line to ``JSON.parse``, which accepts
escaped lone surrogates, integers of any size and nesting as deep as memory allows. picompact parses with orjson
(fast, but stricter) and falls back to the standard library, then to an iterative parser for nesting deeper than
either can follow. Values nested deeper than ``MAX_DEPTH`` are replaced by a marker string: the rest of picompact
walks entries recursively, and no real session nests that deep.
"""

from __future__ import annotations

import json
import re
from functools import cache
from gc import get_referents
from itertools import compress
from json.decoder import scanstring  # type: ignore[attr-defined]
from typing import Any

import orjson

MAX_DEPTH = 200
DEEP_MARKER = f"[JSON nested deeper than {MAX_DEPTH} levels: not loaded by picompact]"

_LITERALS = {"true": True, "false": False, "null": None}


@cache
def _patterns() -> tuple[re.Pattern[str], re.Pattern[str], re.Pattern[str]]:
    """(whitespace, number, lone surrogate), compiled when first needed: not on every start."""
    return (
        re.compile(r"[ \t\n\r]*"),
        re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?"),
        re.compile("[\ud800-\udfff]"),
    )


def safe_text(text: str) -> str:
    """Lone surrogates (legal in JSON escapes, not in UTF-8) become U+FFFD, so the text can be printed or dumped."""
    if _patterns()[2].search(text) is None:
        return text
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


class ParsedLine:
    """A parsed line and what had to be done to read it."""

    __slots__ = ("depth_cut", "replaced_utf8", "value")

    def __init__(self, value: Any, replaced_utf8: bool = False, depth_cut: bool = False) -> None:
        self.value = value
        self.replaced_utf8 = replaced_utf8  # invalid UTF-8 bytes were read as U+FFFD, as Pi reads them
        self.depth_cut = depth_cut  # parts nested deeper than MAX_DEPTH were replaced by DEEP_MARKER


def _reject_constant(name: str) -> Any:
    raise ValueError(f"invalid JSON constant {name}")


def parse_line(line: bytes) -> ParsedLine:
    """Parse one line (its trailing newline allowed) or raise ValueError when ``JSON.parse`` would throw."""
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        return _parse_slow(line, deep="depth limit" in str(exc))
    if may_nest_deeper(line, value):
        value, cut = cut_depth(value)
        return ParsedLine(value, depth_cut=cut)
    return ParsedLine(value)


def _parse_slow(line: bytes, *, deep: bool) -> ParsedLine:
    try:
        text = line.decode("utf-8")
        replaced = False
    except UnicodeDecodeError:
        text = line.decode("utf-8", errors="replace")
        replaced = True
    value: Any
    if deep:
        value = parse_iterative(text)
    else:
        try:
            value = json.loads(text, parse_constant=_reject_constant)
        except RecursionError:
            value = parse_iterative(text)
    if deep or may_nest_deeper(line, value):
        value, cut = cut_depth(value)
        return ParsedLine(value, replaced, cut)
    return ParsedLine(value, replaced)


COUNT_BELOW = 4096  # lines up to this long are bounded by counting brackets; longer ones by walking the value
SHALLOW_BELOW = 2 * (MAX_DEPTH + 1)  # a shorter line cannot hold MAX_DEPTH + 1 levels, each opened and closed
_IS_CONTAINER = frozenset((dict, list)).__contains__


def may_nest_deeper(line: bytes, value: Any) -> bool:
    """False when ``value``, parsed from ``line``, surely holds no container deeper than MAX_DEPTH levels (then
    ``cut_depth`` would change nothing); True when it may (``cut_depth`` decides).

    A value cannot nest deeper than its line's count of opening brackets, nor than half its length (every level
    opens and closes: ``MAX_DEPTH + 1`` levels take ``SHALLOW_BELOW`` bytes at least); counting reads every byte
    twice, which on a long line (mostly string contents: file bodies, base64 images) costs more than walking the
    parsed value's containers level by level, in C (``gc.get_referents`` visits every item of a dict or list).
    """
    if len(line) <= COUNT_BELOW:
        return len(line) >= SHALLOW_BELOW and line.count(b"[") + line.count(b"{") > MAX_DEPTH
    return nests_deeper(value)


def nests_deeper(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether any dict or list lies more than ``limit`` levels deep (``value`` itself at level 1)."""
    if not _IS_CONTAINER(type(value)):
        return False
    level = [value]
    for _ in range(limit):
        items = get_referents(*level)
        level = list(compress(items, map(_IS_CONTAINER, map(type, items))))
        if not level:
            return False
    return True


def cut_depth(value: Any) -> tuple[Any, bool]:
    """Replace containers nested deeper than MAX_DEPTH by DEEP_MARKER (iteratively; no recursion)."""
    cut = False
    todo: list[tuple[Any, int]] = [(value, 1)]
    while todo:
        container, depth = todo.pop()
        items = container.items() if isinstance(container, dict) else enumerate(container)
        for key, child in list(items):
            if isinstance(child, (dict, list)) and child:
                if depth >= MAX_DEPTH:
                    container[key] = DEEP_MARKER
                    cut = True
                else:
                    todo.append((child, depth + 1))
    return value, cut


def parse_iterative(text: str) -> Any:
    """``JSON.parse`` without recursion: any nesting depth. Raises ValueError on invalid JSON."""
    _WS, _NUMBER, _ = _patterns()
    n = len(text)
    stack: list[Any] = []
    keys: list[str | None] = []
    pos = _WS.match(text, 0).end()  # type: ignore[union-attr]

    def key_at(pos: int) -> tuple[str, int]:
        if pos >= n or text[pos] != '"':
            raise ValueError(f"expected a string key at character {pos}")
        key, pos = scanstring(text, pos + 1, True)
        pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
        if pos >= n or text[pos] != ":":
            raise ValueError(f"expected ':' at character {pos}")
        return key, _WS.match(text, pos + 1).end()  # type: ignore[union-attr]

    while True:
        if pos >= n:
            raise ValueError("unexpected end of JSON input")
        char = text[pos]
        value: Any
        if char in "{[":
            after = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
            closer = "}" if char == "{" else "]"
            if after < n and text[after] == closer:
                value = {} if char == "{" else []
                pos = after + 1
            elif char == "{":
                key, pos = key_at(after)
                stack.append({})
                keys.append(key)
                continue
            else:
                stack.append([])
                keys.append(None)
                pos = after
                continue
        elif char == '"':
            value, pos = scanstring(text, pos + 1, True)
        else:
            number = _NUMBER.match(text, pos)
            if number:
                token = number.group()
                value = float(token) if number.group(1) or number.group(2) else int(token)
                pos = number.end()
            else:
                for word, literal in _LITERALS.items():
                    if text.startswith(word, pos):
                        value = literal
                        pos += len(word)
                        break
                else:
                    raise ValueError(f"unexpected character at {pos}")
        while True:  # attach the finished value to the open containers, closing those that end here
            pos = _WS.match(text, pos).end()  # type: ignore[union-attr]
            if not stack:
                if pos != n:
                    raise ValueError(f"unexpected data after JSON at character {pos}")
                return value
            top = stack[-1]
            if isinstance(top, list):
                top.append(value)
            else:
                top[keys[-1]] = value
            if pos >= n:
                raise ValueError("unexpected end of JSON input")
            if text[pos] == ",":
                pos = _WS.match(text, pos + 1).end()  # type: ignore[union-attr]
                if isinstance(top, dict):
                    keys[-1], pos = key_at(pos)
                break
            if text[pos] != ("]" if isinstance(top, list) else "}"):
                raise ValueError(f"unexpected character at {pos}")
            pos += 1
            value = stack.pop()
            keys.pop()
