"""The strings every match of a pattern must contain, read from its parsed tree (``search.rawregex.parse``).

``\\w+Error\\b`` has no literal to start from, yet every match holds ``Error``; every match of
``(?:ab|cd)[0-9]{3}x`` holds ``ab`` or ``cd``, and ``x``. ``needed`` finds such sets (a conjunction of
alternatives): an entry holding no string of one of them cannot match, and is not given to RE2 or ``regex`` at all.
Searching a text for a few strings (``bytes.find``) is several times faster than running a pattern over it.

The tree over-approximates the pattern: what looks around a match (anchors, ``\\b``, lookarounds) is dropped, and
each position is the set of characters it can hold, every character outside ASCII one mark (``Chars.other``). So
a string is only ever taken from positions that hold one ASCII character and nothing outside ASCII, which the text
writes as that one byte (UTF-8): a string found this way is in the bytes of every text that holds a match.

With ``-i`` the tree is folded already: a position of a letter holds both its cases, and one of ``i``, ``k``, ``s``
also the characters outside ASCII that fold to it (``other``: not a string's). Such a position stands for the
letter in lower case, and the text is searched lowered (``bytes.lower`` lowers ASCII letters only): the strings
are then lower case, ``Needed.folded`` says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from pi_compact.search.rawregex import Chars, Node

_MOST = 16  # alternatives in one set, at most (each is a search of the text)
_LONGEST = 24  # characters in one string, at most


@dataclass(frozen=True, slots=True)
class Needed:
    """Sets of strings, best first: a text that can hold a match holds a string of every set. ``folded``: the
    strings are lower case and a text is to be searched lowered (``-i``)."""

    sets: tuple[tuple[bytes, ...], ...]
    folded: bool = False

    def held(self, text: bytes) -> bool:
        """Whether ``text`` holds a string of every set (False: it cannot hold a match)."""
        if self.folded:
            text = text.lower()
        return all(any(s in text for s in alternatives) for alternatives in self.sets)


class _Info(NamedTuple):
    """What a node's matches are made of: ``exact``, every string it matches (None: too many or unbounded);
    otherwise ``prefix`` and ``suffix``, strings one of which starts (ends) every match ("" among them: nothing
    known), and ``musts``, sets one string of each every match contains."""

    exact: frozenset[str] | None
    prefix: frozenset[str]
    suffix: frozenset[str]
    musts: tuple[frozenset[str], ...]


_NOTHING = frozenset({""})
_UNKNOWN = _Info(None, _NOTHING, _NOTHING, ())


def needed(tree: Node | None, *, ignore_case: bool = False) -> Needed | None:
    """The sets of strings every match of ``tree`` holds, or None when there is none worth searching for."""
    if tree is None:
        return None
    info = _info(tree, ignore_case)
    sets = list(info.musts)
    if info.exact is not None:
        sets.append(info.exact)
    sets += [info.prefix, info.suffix]
    kept: list[frozenset[str]] = []
    for strings in sorted({s for s in sets if _useful(s)}, key=_order, reverse=True):
        if not any(_implies(better, strings) for better in kept):
            kept.append(strings)
    if not kept:
        return None
    return Needed(tuple(tuple(sorted(x.encode() for x in s)) for s in kept[:3]), ignore_case)


def _order(strings: frozenset[str]) -> tuple[tuple[int, int], tuple[str, ...]]:
    """Best first, and the same order in every run (sets of equal worth by their strings)."""
    return _worth(strings), tuple(sorted(strings))


def _implies(holding: frozenset[str], strings: frozenset[str]) -> bool:
    """Whether a text holding a string of ``holding`` holds one of ``strings`` too (no need to ask)."""
    return all(any(s in h for s in strings) for h in holding)


def _useful(strings: frozenset[str]) -> bool:
    return bool(strings) and "" not in strings and len(strings) <= _MOST


def _worth(strings: frozenset[str]) -> tuple[int, int]:
    """Longer strings first (rarer in a text), then fewer of them."""
    return min(len(s) for s in strings), -len(strings)


def _letter(chars: Chars, ignore_case: bool) -> str | None:
    """The one character a position stands for in a string (lower case with ``-i``), or None."""
    if chars.other:
        return None
    if len(chars.ascii) == 1:
        (ch,) = chars.ascii
        return ch.lower() if ignore_case else ch
    if ignore_case and len(chars.ascii) == 2:
        low, high = sorted(chars.ascii, key=str.swapcase)
        if low.islower() and high == low.upper():
            return low
    return None


def _small(chars: Chars, ignore_case: bool) -> frozenset[str] | None:
    """The characters of a position as strings, when there are few of them (``[ab]``); None otherwise."""
    one = _letter(chars, ignore_case)
    if one is not None:
        return frozenset({one})
    if chars.other or not chars.ascii or len(chars.ascii) > 4 or ignore_case:
        return None
    return frozenset(chars.ascii)


def _product(left: frozenset[str], right: frozenset[str]) -> frozenset[str] | None:
    if len(left) * len(right) > _MOST:
        return None
    out = frozenset(a + b for a in left for b in right)
    return out if all(len(s) <= _LONGEST for s in out) else None


def _known(strings: frozenset[str] | None) -> frozenset[str]:
    return strings if strings is not None and strings else _NOTHING


def _info(node: Node, ignore_case: bool) -> _Info:
    kind = node[0]
    if kind == "chars":
        small = _small(node[1], ignore_case)
        return _UNKNOWN if small is None else _Info(small, small, small, ())
    if kind == "seq":
        out = _Info(_NOTHING, _NOTHING, _NOTHING, ())
        for item in node[1]:
            out = _then(out, _info(item, ignore_case))
        return out
    if kind == "alt":
        return _either([_info(item, ignore_case) for item in node[1]])
    if kind == "rep":
        return _repeated(_info(node[1], ignore_case), node[2], node[3])
    return _Info(_NOTHING, _NOTHING, _NOTHING, ())  # what matches the empty string only (anchors, lookarounds)


def _opened(info: _Info) -> _Info:
    """The same, with exact strings turned into what they say of a longer match."""
    if info.exact is None:
        return info
    musts = (*info.musts, info.exact) if _useful(info.exact) else info.musts
    return _Info(None, info.exact, info.exact, musts)


def _then(left: _Info, right: _Info) -> _Info:
    """A match of ``left`` followed by one of ``right``."""
    if left.exact is not None and right.exact is not None:
        both = _product(left.exact, right.exact)
        if both is not None:
            return _Info(both, both, both, (*left.musts, *right.musts))
    a, b = _opened(left), _opened(right)
    prefix = _product(left.exact, b.prefix) if left.exact is not None else a.prefix
    suffix = _product(a.suffix, right.exact) if right.exact is not None else b.suffix
    joined = _product(a.suffix, b.prefix)
    musts = (*a.musts, *b.musts, *((joined,) if joined is not None and _useful(joined) else ()))
    starts = _known(prefix) if prefix is not None else a.prefix
    ends = _known(suffix) if suffix is not None else b.suffix
    return _Info(None, starts, ends, musts)


def _either(branches: list[_Info]) -> _Info:
    """A match of one of ``branches``."""
    if all(b.exact is not None for b in branches):
        every = frozenset().union(*(b.exact for b in branches if b.exact is not None))
        if len(every) <= _MOST:
            return _Info(every, every, every, ())
    opened = [_opened(b) for b in branches]
    prefix = frozenset().union(*(b.prefix for b in opened))
    suffix = frozenset().union(*(b.suffix for b in opened))
    best = [max((*b.musts, b.prefix, b.suffix), key=_rank) for b in opened]
    must = frozenset().union(*best)
    musts = (must,) if all(_useful(b) for b in best) and _useful(must) else ()
    starts = prefix if len(prefix) <= _MOST else _NOTHING
    ends = suffix if len(suffix) <= _MOST else _NOTHING
    return _Info(None, starts, ends, musts)


def _rank(strings: frozenset[str]) -> tuple[int, int]:
    return _worth(strings) if _useful(strings) else (-1, 0)


def _repeated(inner: _Info, low: int, high: int | None) -> _Info:
    """``inner`` repeated ``low`` to ``high`` times (None: no bound)."""
    if high == 0 or low == 0:
        if inner.exact is not None and high is not None and high <= 4:
            out: frozenset[str] | None = _NOTHING
            every = set(_NOTHING)
            for _ in range(high):
                out = _product(out, inner.exact) if out is not None else None
                if out is None:
                    break
                every |= out
            if out is not None and len(every) <= _MOST:
                return _Info(frozenset(every), frozenset(every), frozenset(every), ())
        return _Info(_NOTHING, _NOTHING, _NOTHING, ()) if high == 0 else _UNKNOWN
    if inner.exact is not None and high == low:
        out = inner.exact
        for _ in range(low - 1):
            out = _product(out, inner.exact) if out is not None else None
            if out is None:
                break
        if out is not None:
            return _Info(out, out, out, ())
    once = _opened(inner)
    musts = once.musts
    if low >= 2:
        joined = _product(once.suffix, once.prefix)
        if joined is not None and _useful(joined):
            musts = (*musts, joined)
    return _Info(None, once.prefix, once.suffix, musts)
