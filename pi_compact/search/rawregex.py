"""A pattern with no literal to prefilter on, searched in the raw file with RE2 without losing a match.

grep matches rendered lines; the file holds JSON. ``raw_pattern`` turns a pattern into a bytes pattern that matches
the JSON encoding of everything the pattern can match (an over-approximation, never an equivalent): each character
the pattern can match becomes every way JSON can write it (itself, a short escape such as ``\\"``, a ``\\u``
escape, or for a character outside ASCII its UTF-8 bytes), and what looks at the text around a match (``^``, ``$``,
``\\b``, lookarounds) is dropped, so it can only match more. RE2 runs that over the bytes in linear time, and every
entry it marks is then rendered and matched with the real pattern as before.

Only a well-understood part of the ``regex`` syntax is read (``parse``): characters, escapes, classes, ``.``,
groups, alternation, greedy or lazy quantifiers, anchors and lookarounds. Anything else (backreferences, inline
flags, possessive quantifiers, POSIX or nested classes, ``\\p{..}``) makes ``parse`` return None, and grep
renders every entry as it did before.

``text_pattern`` is the same over-approximation for the text itself (UTF-8, no JSON): ``search`` asks it of an
entry's bytes before ``regex`` is asked of the entry's text.

``decorated_safe`` answers the other half: whether a match can lie in a line picompact builds (``path: value``,
``$ command``) in a way the raw bytes would not show. See its docstring for the argument.
"""

from __future__ import annotations

import string
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

ASCII = frozenset(chr(c) for c in range(128))
_CONTROLS = frozenset(chr(c) for c in range(0x20))
_DIGITS = frozenset(string.digits)
_WORD = frozenset(string.ascii_letters + string.digits + "_")
_SPACE = frozenset(" \t\n\r\f\v")  # regex's \s in ASCII (Unicode White_Space: not \x1c-\x1f, unlike re)
_LETTERS = frozenset(string.ascii_letters)
# ASCII letters that a character outside ASCII folds to under IGNORECASE (see prefilter.CASE_EXTRA).
_FOLDS_TO_ASCII = frozenset("iIkKsS")
_SHORT = {'"': '"', "\\": "\\", "/": "/", "\b": "b", "\f": "f", "\n": "n", "\r": "r", "\t": "t"}
_ESCAPE_LETTERS = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "a": "\a"}
_CLASS_ESCAPES: dict[str, tuple[frozenset[str], bool]] = {
    "d": (_DIGITS, True),
    "w": (_WORD, True),
    "s": (_SPACE, True),
    "D": (ASCII - _DIGITS, True),
    "W": (ASCII - _WORD, True),
    "S": (ASCII - _SPACE, True),
}
_ZERO_WIDTH = frozenset("bBAZ")
_MAX_REPEAT = 1000  # RE2's limit on a counted repetition


@dataclass(frozen=True, slots=True)
class Chars:
    """The characters one position of a match can hold: some ASCII ones, and maybe any outside ASCII."""

    ascii: frozenset[str]
    other: bool = False

    def __or__(self, other: Chars) -> Chars:
        return Chars(self.ascii | other.ascii, self.other or other.other)

    def folded(self) -> Chars:
        """The same under IGNORECASE (ASCII letters in both cases; characters outside ASCII may fold to i, k, s)."""
        extra = {c.swapcase() for c in self.ascii if c in _LETTERS}
        if self.other:
            extra |= _FOLDS_TO_ASCII
        has_fold = any(c in _FOLDS_TO_ASCII for c in self.ascii)
        return Chars(self.ascii | extra, self.other or has_fold)


# The parsed pattern: ("chars", Chars) | ("seq", list) | ("alt", list) | ("rep", node, min, max|None) | ("empty",)
Node = tuple[Any, ...]
EMPTY: Node = ("empty",)


class _Unsupported(Exception):
    """Raised inside the parser for syntax it does not read; ``parse`` turns it into None."""


class _Parser:
    def __init__(self, pattern: str) -> None:
        self.p = pattern
        self.i = 0

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.p[j] if j < len(self.p) else ""

    def take(self) -> str:
        if self.i >= len(self.p):
            raise _Unsupported
        ch = self.p[self.i]
        self.i += 1
        return ch

    def alternation(self) -> Node:
        branches = [self.sequence()]
        while self.peek() == "|":
            self.i += 1
            branches.append(self.sequence())
        return branches[0] if len(branches) == 1 else ("alt", branches)

    def sequence(self) -> Node:
        items: list[Node] = []
        while self.i < len(self.p) and self.peek() not in "|)":
            atom = self.atom()
            items.append(self.quantified(atom))
        return ("seq", items)

    def quantified(self, atom: Node) -> Node:
        ch = self.peek()
        if ch in ("*", "+", "?"):
            self.i += 1
            low, high = {"*": (0, None), "+": (1, None), "?": (0, 1)}[ch]
        elif ch == "{":
            bounds = self.counted()
            if bounds is None:
                return atom
            low, high = bounds
        else:
            return atom
        if self.peek() == "?":
            self.i += 1  # lazy: matches the same strings
        elif self.peek() == "+":
            raise _Unsupported  # possessive
        if self.peek() in ("*", "+", "{") and self.peek() != "":
            raise _Unsupported  # a quantifier on a quantifier
        if atom == EMPTY:
            raise _Unsupported  # a quantified anchor or lookaround
        return ("rep", atom, low, high)

    def counted(self) -> tuple[int, int | None] | None:
        end = self.p.find("}", self.i)
        if end < 0:
            raise _Unsupported  # "{" as a literal: leave such patterns alone
        body = self.p[self.i + 1 : end]
        low_text, comma, high_text = body.partition(",")
        if not (low_text.isdigit() or (comma and not low_text)) or not (high_text.isdigit() or not high_text):
            raise _Unsupported
        if not low_text.isascii() or not high_text.isascii():
            raise _Unsupported
        self.i = end + 1
        low = int(low_text) if low_text else 0
        high = (int(high_text) if high_text else None) if comma else low
        if high is not None and high < low:
            raise _Unsupported
        return low, high

    def atom(self) -> Node:
        ch = self.take()
        if ch == "(":
            return self.group()
        if ch == "[":
            return ("chars", self.char_class())
        if ch == ".":
            return ("chars", Chars(ASCII - {"\n"}, True))
        if ch in "^$":
            return EMPTY
        if ch == "\\":
            return self.escape(in_class=False)
        if ch in "*+?{}])":
            raise _Unsupported
        return ("chars", _one(ch))

    def group(self) -> Node:
        lookaround = False
        if self.peek() == "?":
            self.i += 1
            kind = self.take()
            if kind in "=!":
                lookaround = True
            elif kind == "<" and self.peek() in ("=", "!"):
                self.i += 1
                lookaround = True
            elif (kind == "P" and self.peek() == "<") or kind == "<":
                if kind == "P":
                    self.i += 1
                end = self.p.find(">", self.i)
                name = self.p[self.i : end] if end >= 0 else ""
                if not name.isidentifier():
                    raise _Unsupported
                self.i = end + 1
            elif kind != ":":  # "(?:" is a plain group
                raise _Unsupported  # inline flags, atomic groups, conditionals, recursion, ...
        inner = self.alternation()
        if self.take() != ")":
            raise _Unsupported
        return EMPTY if lookaround else inner

    def escape(self, in_class: bool) -> Node:
        ch = self.take()
        if ch in _CLASS_ESCAPES:
            chars, other = _CLASS_ESCAPES[ch]
            return ("chars", Chars(chars, other))
        if ch in _ZERO_WIDTH and not in_class:
            return EMPTY
        if ch in _ESCAPE_LETTERS:
            return ("chars", _one(_ESCAPE_LETTERS[ch]))
        if ch == "x":
            digits = self.p[self.i : self.i + 2]
            if len(digits) != 2 or not all(c in string.hexdigits for c in digits):
                raise _Unsupported
            self.i += 2
            return ("chars", _one(chr(int(digits, 16))))
        if ch.isascii() and not ch.isalnum() and ch != "\n":
            return ("chars", _one(ch))
        raise _Unsupported  # backreferences, \p{..}, \N{..}, \G, \m, octal, ...

    def char_class(self) -> Chars:
        negate = self.peek() == "^"
        if negate:
            self.i += 1
        members = Chars(frozenset())
        first = True
        while True:
            ch = self.take()
            if ch == "]" and not first:
                break
            first = False
            if ch == "[" or (ch in "&|~-" and self.peek() == ch):
                raise _Unsupported  # nested sets, POSIX classes, set operations
            if ch == "\\":
                node = self.escape(in_class=True)
                if node == EMPTY:
                    raise _Unsupported
                item: Chars = node[1]
            else:
                item = _one(ch)
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.i += 1
                high = self.take()
                if high == "\\":
                    node = self.escape(in_class=True)
                    high_chars: Chars = node[1]
                    if len(high_chars.ascii) + high_chars.other != 1:
                        raise _Unsupported
                    high = next(iter(high_chars.ascii)) if high_chars.ascii else ""
                    if not high:
                        raise _Unsupported
                if len(item.ascii) + item.other != 1 or high in ("[",):
                    raise _Unsupported
                low = next(iter(item.ascii)) if item.ascii else ""
                if not low or ord(high) < ord(low):
                    if not low and ord(high) > 127:
                        item = Chars(frozenset(), True)  # a range outside ASCII
                    else:
                        raise _Unsupported
                else:
                    item = Chars(frozenset(chr(c) for c in range(ord(low), min(ord(high), 127) + 1)), ord(high) > 127)
            members = members | item
        if negate:
            return Chars(ASCII - members.ascii, True)
        return members


def _one(ch: str) -> Chars:
    return Chars(frozenset({ch})) if ch.isascii() else Chars(frozenset(), True)


def parse(pattern: str, *, fixed: bool = False, ignore_case: bool = False) -> Node | None:
    """The pattern as a tree of character sets, or None when it uses syntax this module does not read."""
    if fixed:
        tree: Node = ("seq", [("chars", _one(ch)) for ch in pattern])
    else:
        parser = _Parser(pattern)
        try:
            tree = parser.alternation()
            if parser.i != len(pattern):
                return None  # an unbalanced ")"
        except (_Unsupported, ValueError):
            return None
    return _fold(tree) if ignore_case else tree


def _fold(node: Node) -> Node:
    kind = node[0]
    if kind == "chars":
        return ("chars", node[1].folded())
    if kind in ("seq", "alt"):
        return (kind, [_fold(n) for n in node[1]])
    if kind == "rep":
        return ("rep", _fold(node[1]), node[2], node[3])
    return node


def alphabet(node: Node) -> Chars:
    """Every character a match can contain."""
    kind = node[0]
    if kind == "chars":
        chars: Chars = node[1]
        return chars
    if kind in ("seq", "alt"):
        out = Chars(frozenset())
        for item in node[1]:
            out = out | alphabet(item)
        return out
    if kind == "rep":
        return alphabet(node[1]) if node[3] != 0 else Chars(frozenset())
    return Chars(frozenset())


def must_leave(node: Node, allowed: frozenset[str]) -> bool:
    """True when every match holds a character outside ``allowed`` (a set of ASCII characters)."""
    kind = node[0]
    if kind == "chars":
        return not (node[1].ascii & allowed)
    if kind == "seq":
        return any(must_leave(item, allowed) for item in node[1])
    if kind == "alt":
        return all(must_leave(item, allowed) for item in node[1])
    if kind == "rep":
        return node[2] >= 1 and must_leave(node[1], allowed)
    return False


# ---------------------------------------------------------------------------------------------------------------
# The raw-bytes pattern

_U = rb"\\u[0-9a-fA-F]{4}"


def _byte_class(chars: frozenset[str]) -> bytes:
    return b"[" + b"".join(b"\\x%02x" % ord(c) for c in sorted(chars)) + b"]"


def _raw_chars(chars: Chars, escaped_ascii: frozenset[str], escaped_slash: bool) -> bytes:
    """Every way JSON can write one character of ``chars`` (a bytes pattern; never matches b"\\n")."""
    forms: list[bytes] = []
    verbatim = chars.ascii - {"\n"}  # b"\n" only ends a line; other raw control bytes cost nothing to allow
    if verbatim:
        forms.append(_byte_class(frozenset(verbatim)))
    short = {_SHORT[c] for c in chars.ascii if c in _SHORT}
    if short:
        forms.append(b"\\\\" + _byte_class(frozenset(short)))
    if chars.other:
        forms.append(rb"[\x80-\xff]+")
    if chars.other or chars.ascii & (_CONTROLS | {'"', "\\"} | escaped_ascii):
        forms.append(_U + b"(?:" + _U + b")?")
    if not forms:
        return rb"[^\x00-\xff]"  # matches nothing
    return forms[0] if len(forms) == 1 else b"(?:" + b"|".join(forms) + b")"


def raw_pattern(node: Node, escaped_ascii: frozenset[str], escaped_slash: bool) -> bytes:
    """An RE2 bytes pattern (Latin-1) matching the JSON encoding of every string ``node`` matches.

    No empty groups are written: RE2 finds a pattern that starts with a literal by its first bytes, and an empty
    ``(?:)`` in front (a dropped anchor) would hide them."""
    kind = node[0]
    if kind == "chars":
        return _raw_chars(node[1], escaped_ascii, escaped_slash)
    if kind == "seq":
        return b"".join(_group(raw_pattern(item, escaped_ascii, escaped_slash)) for item in node[1])
    if kind == "alt":
        branches = [raw_pattern(item, escaped_ascii, escaped_slash) for item in node[1]]
        return b"(?:" + b"|".join(branches) + b")"
    if kind == "rep":
        return _repeated(raw_pattern(node[1], escaped_ascii, escaped_slash), node[2], node[3])
    return b""


def text_pattern(node: Node) -> bytes:
    """An RE2 bytes pattern (UTF-8) matching every string ``node`` matches, in the text itself rather than its JSON
    (what looks around a match dropped, so it can only match more): what ``search`` asks of an entry's bytes
    before ``regex`` is asked of its text."""
    kind = node[0]
    if kind == "chars":
        chars: Chars = node[1]
        parts = b"".join(b"\\x%02x" % ord(c) for c in sorted(chars.ascii))
        if chars.other:
            parts += rb"\x{80}-\x{10ffff}"
        return b"[" + parts + b"]" if parts else rb"[^\x00-\x{10ffff}]"
    if kind == "seq":
        return b"".join(_group(text_pattern(item)) for item in node[1])
    if kind == "alt":
        return b"(?:" + b"|".join(text_pattern(item) for item in node[1]) + b")"
    if kind == "rep":
        return _repeated(text_pattern(node[1]), node[2], node[3])
    return b""


def _repeated(inner: bytes, low: int, high: int | None) -> bytes:
    """``inner`` repeated ``low`` to ``high`` times (None: no bound), a bound past RE2's limit widened (the pattern
    can only match more)."""
    if not inner:
        return b""
    if high is not None and high > _MAX_REPEAT:
        high = None
    low = min(low, _MAX_REPEAT)
    bounds = b"{%d,}" % low if high is None else b"{%d,%d}" % (low, high)
    return b"(?:" + inner + b")" + bounds


def _group(part: bytes) -> bytes:
    """A part of a sequence, grouped unless it is empty, or one class or group already."""
    if not part or (part.startswith((b"[", b"(?:")) and _closes_at_end(part)):
        return part
    return b"(?:" + part + b")"


def _closes_at_end(part: bytes) -> bool:
    """Whether ``part`` is one bracket or group: its first opening is closed by its last byte."""
    if part.startswith(b"["):
        return part.endswith(b"]") and part.count(b"]") == 1 and b"\\]" not in part
    depth = 0
    i = 0
    while i < len(part):
        byte = part[i : i + 1]
        if byte == b"\\":
            i += 2
            continue
        if byte == b"[":
            i = part.index(b"]", i + 1) + 1  # classes here never hold "]" (bytes are written as \\xNN)
            continue
        if byte == b"(":
            depth += 1
        elif byte == b")":
            depth -= 1
            if depth == 0 and i != len(part) - 1:
                return False
        i += 1
    return depth == 0


def quote(literal: bytes) -> bytes:
    """A bytes pattern matching exactly ``literal``."""
    return b"".join(b"\\x%02x" % byte for byte in literal)


def compile_raw(pattern: bytes) -> Any | None:
    """The RE2 program for a raw pattern, or None when RE2 is not installed or refuses it (too large)."""
    try:
        import re2
    except ImportError:  # pragma: no cover - a dependency; without it grep renders every entry
        return None
    options = re2.Options()
    options.encoding = re2.Options.Encoding.LATIN1
    options.max_mem = 64 << 20
    options.never_capture = True
    options.log_errors = False
    try:
        return re2.compile(pattern, options)
    except re2.error:
        return None


def relaxed_source(node: Node) -> str:
    """The pattern in ``regex`` syntax with anchors and lookarounds dropped (the same characters matched)."""
    kind = node[0]
    if kind == "chars":
        chars: Chars = node[1]
        parts = "".join(f"\\x{ord(c):02x}" for c in sorted(chars.ascii))
        if chars.other:
            parts += "\\u0080-\\U0010ffff"
        return f"[{parts}]" if parts else "(?!)"
    if kind == "seq":
        return "".join(f"(?:{relaxed_source(item)})" for item in node[1])
    if kind == "alt":
        return "|".join(f"(?:{relaxed_source(item)})" for item in node[1])
    if kind == "rep":
        high = "" if node[3] is None else str(node[3])
        return f"(?:{relaxed_source(node[1])}){{{node[2]},{high}}}"
    return ""


# ---------------------------------------------------------------------------------------------------------------
# Lines picompact builds

# Characters that separate what picompact writes from the session's text in a ``path: value`` line.
SEPARATORS = frozenset('.[]:"\\')
# What picompact writes itself in the selectable decorated lines, between separators: the roots of a path, the
# prefix of a bash command's output path, JSON literals; numbers are made of NUMBER_CHARS.
GENERATED_WORDS = ("content", "block", "arguments", "calls", "full output", "true", "false", "null", "{}", "$")
NUMBER_CHARS = frozenset("0123456789.eE+-")


def first_chars(node: Node) -> tuple[Chars, bool]:
    """The characters a match can start with, and whether the node can match the empty string."""
    kind = node[0]
    if kind == "chars":
        return node[1], False
    if kind == "seq":
        out = Chars(frozenset())
        for item in node[1]:
            chars, empty = first_chars(item)
            out = out | chars
            if not empty:
                return out, False
        return out, True
    if kind == "alt":
        out = Chars(frozenset())
        nullable = False
        for item in node[1]:
            chars, empty = first_chars(item)
            out, nullable = out | chars, nullable or empty
        return out, nullable
    if kind == "rep":
        chars, empty = first_chars(node[1])
        return chars, empty or node[2] == 0 or node[3] == 0
    return Chars(frozenset()), True


def decorated_safe(node: Node, search: Callable[[str], Any]) -> bool:
    """Whether every match in a selectable decorated line (``path: value``, ``$ command``, ``full output: …``;
    headers and section markers are not selectable by default) lies in text copied from one JSON string or key
    of the entry, so the raw-bytes search sees it. ``search`` is the relaxed pattern's search (``relaxed_source``).

    Such a line is the session's text joined by separators picompact writes (``. [ ] : "`` and the space after
    ``:`` or ``$``, see ``SEPARATORS``) and a few words of its own (``GENERATED_WORDS``, numbers, indices). When
    the pattern can match no separator, and no match starts with a space (a written space always follows ``:``,
    ``$`` or ``full``), a match lies between two separators: in the session's text (found in the raw bytes), or
    in one of picompact's words (tested here), or in a key written with a JSON escape (``["a\\u001fb"]``), which
    the raw line spells the same way unless the file escapes characters unusually (``Census.unusual_escapes``,
    checked by the caller)."""
    chars = alphabet(node)
    if chars.ascii & SEPARATORS or {" ", "$"} <= chars.ascii:
        return False
    if " " in first_chars(node)[0].ascii:
        return False
    if search("") is not None:
        return False  # matches the empty string: every line
    if any(search(word) is not None for word in GENERATED_WORDS):
        return False
    return must_leave(node, NUMBER_CHARS)
