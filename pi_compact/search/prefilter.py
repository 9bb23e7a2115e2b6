"""Find the entries whose raw JSON line can contain a match, without rendering anything.

grep renders entries and matches rendered lines; rendering everything is the slow part on a big session. So it
first searches the file's bytes for a literal that every match must contain, and renders fully only the entries
where it occurs (the others get their few decorated lines checked when a match could lie there, see
``search.matching.Candidates``).

This must never lose a match, and JSON escaping is where it could: the rendered text ``a"b`` is ``a\\"b`` in the
file, ``é`` may be ``\\u00e9``, and a writer may escape any character as ``\\u`` and four hex digits. So:

* literals are taken only from simple patterns (``-F``, plain text, ``a|b|c``, a literal run before the first
  group or class); other patterns are searched with RE2 over the bytes instead (``search.rawregex``);
* each character is searched in every JSON encoding it can have (itself, its ``\\u`` escape in either hex case, or a
  short escape); with ``-i`` also in every case the regex module folds it to (``k`` also matches U+212A);
* a literal of printable ASCII is searched as it is, with RE2, together with the census escapes (``Census``) of
  its characters: a line holding none of them writes the literal only as itself (``plain_literal_filter``);
  otherwise a census of the whole file decides, and plain ``bytes.find`` is used when it shows no escaped
  printable ASCII, the common case (JavaScript's JSON.stringify never writes one).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from pi_compact.session.rawfile import FileBytes, raw_search, raw_search_block

# Characters outside ASCII that the regex module's IGNORECASE (simple case folding) matches for an ASCII letter.
# tests/search/test_prefilter.py checks this table against every code point.
# The table is not symmetric: the pattern "i" matches U+0130, the pattern "I" matches U+0131.
CASE_EXTRA: dict[str, str] = {
    "i": "\u0130",
    "k": "\u212a",
    "s": "\u017f",
    "I": "\u0131",
    "K": "\u212a",
    "S": "\u017f",
}
_SHORT_ESCAPES: dict[str, bytes] = {
    '"': b'\\"',
    "\\": b"\\\\",
    "/": b"\\/",
    "\b": b"\\b",
    "\f": b"\\f",
    "\n": b"\\n",
    "\r": b"\\r",
    "\t": b"\\t",
}
_META = frozenset(".^$*+?{}[]\\|()")
_CUT = frozenset("([{")
_QUANT_DROP = frozenset("*?{")
# Escapes of printable ASCII (\\u0041), \\/, and escapes of control characters that JSON.stringify and orjson
# would write otherwise (\\u000a for \\n, upper-case hex digits).
_CENSUS_SOURCE = rb"\\(?:u00[2-7][0-9a-fA-F]|/|u00(?:0[89aAcCdD]|[01][A-F]))"
_CENSUS = re.compile(_CENSUS_SOURCE)
_PLAIN_ASCII = frozenset(chr(c) for c in range(0x20, 0x7F)) - {'"', "\\", "/"}


def _tokens(pattern: str) -> list[tuple[bool, str]] | None:
    """(is_literal, char) tokens; an escape of a letter, digit or non-ASCII char is a non-literal."""
    out: list[tuple[bool, str]] = []
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            if i + 1 >= len(pattern):
                return None
            nxt = pattern[i + 1]
            literal = nxt.isascii() and not nxt.isalnum() and (nxt.isprintable() or nxt == " ")
            out.append((literal, nxt if literal else "\\" + nxt))
            i += 2
            continue
        out.append((ch not in _META, ch))
        i += 1
    return out


def _runs(tokens: list[tuple[bool, str]], cut_at_brace: bool) -> list[str]:
    """Literal runs that every match of this token sequence contains."""
    runs: list[str] = []
    current: list[str] = []

    def close() -> None:
        if current:
            runs.append("".join(current))
            current.clear()

    for i, (literal, ch) in enumerate(tokens):
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if not literal:
            close()
            continue
        if nxt is not None and not nxt[0] and nxt[1] in _QUANT_DROP:
            close()  # the character may be absent (a*, a?, a{0})
        elif nxt is not None and not nxt[0] and nxt[1] == "+":
            current.append(ch)
            close()
        elif nxt is None and cut_at_brace:
            close()  # the sequence was cut at "{": this character is its operand
        else:
            current.append(ch)
    close()
    return runs


def _top_level_bars(tokens: list[tuple[bool, str]]) -> list[int] | None:
    """Positions of ``|`` outside groups; None when a character class makes that uncertain."""
    bars: list[int] = []
    depth = 0
    for i, (literal, ch) in enumerate(tokens):
        if literal:
            continue
        if ch == "[":
            return None if any(not lit and c == "|" for lit, c in tokens) else bars
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "|" and depth == 0:
            bars.append(i)
    return bars


def required_literals(pattern: str, *, fixed: bool = False) -> list[str] | None:
    """Strings one of which every match contains, or None when the pattern is not simple enough to tell."""
    if fixed:
        return [pattern] if pattern and "\n" not in pattern else None
    if "(?" in pattern:
        return None  # inline flags or lookarounds may change what the literals mean
    tokens = _tokens(pattern)
    if tokens is None:
        return None
    bars = _top_level_bars(tokens)
    if bars is None:
        return None
    first_cut = next((i for i, (lit, ch) in enumerate(tokens) if not lit and ch in _CUT), None)
    if first_cut is not None:
        if bars:
            return None
        alternatives = [(tokens[:first_cut], tokens[first_cut][1] == "{")]
    else:
        alternatives = []
        start = 0
        for bar in [*bars, len(tokens)]:
            alternatives.append((tokens[start:bar], False))
            start = bar + 1
    literals: list[str] = []
    for alt, cut_at_brace in alternatives:
        runs = [r for r in _runs(alt, cut_at_brace) if "\n" not in r]
        if not runs:
            return None
        best = max(runs, key=len)
        if best not in literals:
            literals.append(best)
    return literals


def _hex_forms(code: int) -> bytes:
    """A bytes-regex fragment matching the ``\\u`` escape of this UTF-16 code unit, hex digits in any case."""
    out = b"\\\\u"
    for digit in f"{code:04x}":
        out += f"[{digit}{digit.upper()}]".encode() if digit.isalpha() else digit.encode()
    return out


def _char_forms(ch: str) -> list[bytes]:
    """Every way one character can be written inside a JSON string, as bytes-regex fragments."""
    forms = [re.escape(ch.encode("utf-8"))]
    code = ord(ch)
    if code > 0xFFFF:
        high, low = 0xD800 + ((code - 0x10000) >> 10), 0xDC00 + ((code - 0x10000) & 0x3FF)
        forms.append(_hex_forms(high) + _hex_forms(low))
    else:
        forms.append(_hex_forms(code))
    if ch in _SHORT_ESCAPES:
        forms.append(re.escape(_SHORT_ESCAPES[ch]))
    return forms


@dataclass(frozen=True, slots=True)
class Census:
    """Which unusual JSON escapes a file uses at all: escaped printable ASCII (``\\u0041``) and ``\\/``; and
    ``unusual_escapes``: a control character escaped otherwise than JSON.stringify and orjson write it
    (``\\u000a`` for ``\\n``, or upper-case hex digits), or an escaped quote or backslash."""

    escaped_ascii: frozenset[str]
    escaped_slash: bool
    unusual_escapes: bool = False

    def plain(self, ch: str) -> bool:
        """True when this character can only appear in the file as itself."""
        if ch in self.escaped_ascii:
            return False
        if ch == "/":
            return not self.escaped_slash
        return ch in _PLAIN_ASCII


def take_census(data: bytes | FileBytes) -> Census:
    escaped: set[str] = set()
    slash = unusual = False
    pattern = _census_pattern()
    found_all = data.findall(pattern, 6) if isinstance(data, FileBytes) else set(pattern.findall(data))
    for found in found_all:
        if found == b"\\/":
            slash = True
            continue
        code = int(found[2:], 16)
        if code < 0x20:
            unusual = True
        else:
            escaped.add(chr(code))
    return Census(frozenset(escaped), slash, unusual or bool(escaped & {'"', "\\"}))


@lru_cache(maxsize=1)
def _census_pattern() -> Any:
    """The census pattern, run by RE2 when it is installed (four times faster than ``re`` here)."""
    from pi_compact.search.rawregex import compile_raw

    compiled = compile_raw(_CENSUS_SOURCE)
    return compiled if compiled is not None else _CENSUS


def _present(data: bytes | FileBytes, ch: str) -> bool:
    """Whether a character occurs in the file at all, raw or as a ``\\u`` escape."""
    if data.find(ch.encode("utf-8")) >= 0:
        return True
    return raw_search(data, re.compile(_hex_forms(ord(ch))), 0, 6) >= 0


@dataclass(slots=True)
class RawFilter:
    """Searches raw file bytes for any of the required literals, in any JSON encoding they can have.

    Calls must ask for non-decreasing ``start`` offsets: each literal's next occurrence is remembered, so a
    rare literal is not searched for again from every entry."""

    plain: tuple[bytes, ...]  # literals searched with bytes.find
    pattern: Any = None  # or one compiled bytes regex (regex module, or RE2)
    longest: int = 0  # bytes in the longest match the pattern can have; 0: unbounded, but never across b"\n"
    # With ``census_of``: every census escape (see ``Census``) of a character in this set, or of a control
    # character written unusually, is a hit too. The filter then needs no census of the whole file: a line holding
    # no such escape writes each of those characters as itself.
    census_of: frozenset[str] | None = None
    _next: list[int] = field(default_factory=list)

    def reset(self) -> None:
        """Forget the remembered occurrences (before asking for an earlier ``start``)."""
        self._next = []

    def find_from(self, data: bytes | FileBytes, start: int) -> int:
        """The offset of the first occurrence at or after ``start``, or -1."""
        if self.pattern is not None and self.longest:
            return raw_search(data, self.pattern, start, self.longest)
        if self.pattern is not None:
            return self._find_blocks(data, start)
        if not self._next:
            self._next = [-2] * len(self.plain)
        best = -1
        for i, literal in enumerate(self.plain):
            at = self._next[i]
            if at == -2 or (0 <= at < start):  # each search runs on from where it stopped, never back
                at = data.find(literal, start)
                self._next[i] = at
            if at >= 0 and (best < 0 or at < best):
                best = at
        return best

    def _find_blocks(self, data: bytes | FileBytes, start: int) -> int:
        """The pattern and the census escapes, searched in step a block of lines at a time (one read per block).

        Per search, ``_next`` holds a pair: the first hit at or after the last start asked for, or -1 and the end
        of the part searched without one."""
        searches = 1 if self.census_of is None else 2
        if not self._next:
            self._next = [-1, 0] * searches
        size = len(data)
        while True:
            for i in range(searches):
                hit, upto = self._next[2 * i], self._next[2 * i + 1]
                if hit < start and not (hit < 0 and upto > start):
                    self._next[2 * i : 2 * i + 2] = self._block(data, i, start)
            hits = [self._next[2 * i] for i in range(searches) if self._next[2 * i] >= 0]
            best = min(hits) if hits else -1
            pending = [self._next[2 * i + 1] for i in range(searches) if self._next[2 * i] < 0]
            frontier = min((upto for upto in pending if upto < size), default=-1)
            if frontier < 0 or 0 <= best < frontier:
                return best
            for i in range(searches):  # searched up to an earlier block than the best hit: go on from there
                if self._next[2 * i] < 0 and self._next[2 * i + 1] == frontier:
                    self._next[2 * i : 2 * i + 2] = self._block(data, i, frontier)

    def _block(self, data: bytes | FileBytes, i: int, start: int) -> tuple[int, int]:
        if i == 0:
            return raw_search_block(data, self.pattern, start)
        assert self.census_of is not None
        while True:
            hit, upto = raw_search_block(data, _census_pattern(), start)
            if hit < 0 or not _other_escape(data[hit : hit + 6], self.census_of):
                return hit, upto
            start = hit + 1


def _other_escape(head: bytes, chars: frozenset[str]) -> bool:
    """Whether ``head`` starts with a census escape that says nothing about ``chars``: an escaped printable ASCII
    character not in ``chars`` (an unusually escaped control character always counts)."""
    if _CENSUS.match(head) is None:
        return False
    if head.startswith(b"\\/"):
        return "/" not in chars
    code = int(head[2:6], 16)
    return code >= 0x20 and chr(code) not in chars and chr(code) not in {'"', "\\"}


def plain_literal_filter(literals: list[str]) -> RawFilter | None:
    """A filter for literals of printable ASCII, searched as they are, with no census of the file (RE2), or None."""
    chars = frozenset(ch for literal in literals for ch in literal)
    if not chars <= _PLAIN_ASCII | {"/"}:
        return None
    from pi_compact.search.rawregex import compile_raw, quote

    program = compile_raw(b"|".join(quote(lit.encode()) for lit in literals))
    return None if program is None else RawFilter((), program, 0, chars)


def build_raw_filter(
    literals: list[str], data: bytes | FileBytes, *, ignore_case: bool, census: Census
) -> RawFilter | None:
    """A filter for these literals in ``data``, or None if one of them cannot be searched for soundly."""
    chars = {ch for literal in literals for ch in literal}
    if ignore_case and not all(ch.isascii() for ch in chars):
        return None  # non-ASCII case folding is not modelled: search without prefilter
    if any(0xD800 <= ord(ch) <= 0xDFFF for ch in chars):
        return None
    if not ignore_case and all(census.plain(ch) for ch in chars):
        return RawFilter(tuple(lit.encode() for lit in literals))
    extras: dict[str, str] = {}
    if ignore_case:
        for ch in chars:
            extra = CASE_EXTRA.get(ch)  # the letter as the pattern writes it
            if extra is not None and _present(data, extra):
                extras[ch] = extra
    alternatives: list[bytes] = []
    # A character is at most 12 bytes in the file (a surrogate pair as two \\u escapes).
    longest = 12 * max(len(literal) for literal in literals)
    for literal in literals:
        parts: list[bytes] = []
        for ch in literal:
            forms = [re.escape(ch.encode())]  # with IGNORECASE this also covers the other ASCII case
            cases = sorted({ch, ch.lower(), ch.upper()}) if ignore_case else [ch]
            escaped = [form for case in cases if not census.plain(case) for form in _char_forms(case)[1:]]
            if ignore_case and ch in extras:
                escaped.extend(_char_forms(extras[ch]))
            forms.extend(f for f in dict.fromkeys(escaped) if f not in forms)
            parts.append(forms[0] if len(forms) == 1 else b"(?:" + b"|".join(forms) + b")")
        alternatives.append(b"".join(parts))
    import regex  # finds the literal parts of such a pattern much faster than re does

    flags = regex.IGNORECASE if ignore_case else 0  # on bytes: ASCII letters only, the extras are listed above
    return RawFilter((), regex.compile(b"|".join(alternatives), flags), longest)
