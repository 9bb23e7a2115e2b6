"""What a pattern costs to compile, measured before ``regex`` compiles it.

``regex`` writes out the required part of a counted repeat when it compiles a pattern: ``a{1000}`` becomes a thousand
characters of program, ``(?:a{1000}){1000}`` a million, at a few hundred bytes each, and ``(?:a{65535}){65535}``
would take more memory than the machine has. The regex timeout does not cover compiling, and a pattern can come
from a model (``context_grep``), so every pattern is measured first and refused when it is too big:

* ``expanded_size`` is the number of characters, classes and other atoms the pattern stands for once every counted
  repeat is written out: an atom counts 1, a sequence or an alternation the sum of its parts, and a repeat its body
  times its count (the upper count of ``{m,n}``, ``m`` for ``{m,}``, 1 for ``*``, ``+`` and ``?``, which ``regex``
  compiles as loops). Nested repeats multiply: ``(?:a{1000}){1000}`` is 1,000,000.
* It reads the tree of ``regex``'s own parser (the parse step of ``regex.compile``, which expands nothing), so no
  syntax (verbose mode, inline flags, nested sets, comments) can hide a repeat from it. Should ``regex`` change that
  private interface, the pattern's own text gives a coarser bound (see ``_text_bound``), which may refuse a
  pattern that would compile, never accept one that would not.

``MAX_EXPANDED`` atoms is about 30 MB of compiled program; no search of a session needs more (RE2, used for the raw
prefilter, stops at 1,000 per repeat).

``compile_pattern`` measures and compiles (here, not in ``matching``, so that a cross-session search compiles a
pattern without importing what renders a transcript).
"""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Any

from pi_compact.errors import PatternError

MAX_EXPANDED = 100_000
_CAP = MAX_EXPANDED + 1


def check_size(pattern: str, flags: int = 0, *, given: str | None = None) -> None:
    """PatternError, naming the limit, when ``pattern`` expands past ``MAX_EXPANDED`` atoms (see the module's doc);
    ``given``: the pattern as the user wrote it, when ``pattern`` is derived from it (``-F`` escapes it).

    A pattern ``regex`` cannot parse passes: compiling it then reports the error, before anything is expanded."""
    shown = _shown(pattern if given is None else given)
    if len(pattern) > MAX_EXPANDED:
        raise PatternError(f"regular expression {shown} is too long: more than {MAX_EXPANDED:,} characters")
    if expanded_size(pattern, flags) > MAX_EXPANDED:
        raise PatternError(
            f"regular expression {shown} is too large: written out, its repeats come to more than "
            f"{MAX_EXPANDED:,} characters (nested counts multiply: (?:a{{1000}}){{1000}} is 1,000,000); "
            "use smaller counts, or + and *"
        )


def _shown(pattern: str, width: int = 80) -> str:
    return repr(pattern) if len(pattern) <= width else f"{pattern[:width]!r}… ({len(pattern):,} characters)"


def expanded_size(pattern: str, flags: int = 0) -> int:
    """The pattern's size with every counted repeat written out, at most ``MAX_EXPANDED + 1`` (beyond that, how much
    does not matter); 0 for a pattern ``regex`` cannot parse (or nests too deep to parse)."""
    if len(pattern) > MAX_EXPANDED:
        return _CAP  # every character is at least one atom; parsing it would cost the memory at issue
    return _measured(pattern, flags)


@lru_cache(maxsize=64)  # grep compiles a pattern more than once (alone, joined, the parts of -e)
def _measured(pattern: str, flags: int) -> int:
    import regex

    try:
        tree = _parse(pattern, flags)
    except (regex.error, RecursionError):
        return 0  # compiling it fails the same way, in the parse, before anything is expanded
    except Exception:  # regex's private parser: anything but its own errors means that it changed
        return _text_bound(pattern)
    return _tree_size(tree)


def _parse(pattern: str, flags: int) -> Any:
    """The tree ``regex.compile`` builds before compiling (``regex._main._compile`` does the same)."""
    from regex import _regex_core as core

    global_flags = flags
    while True:
        source = core.Source(pattern)
        info = core.Info(global_flags, source.char_type, {})
        info.guess_encoding = core.UNICODE
        source.ignore_space = bool(info.flags & core.VERBOSE)
        try:
            return core._parse_pattern(source, info)
        except core._UnscopedFlagSet:  # a flag that applies to the whole pattern: parsed again with it
            global_flags = info.global_flags


def _tree_size(root: Any) -> int:
    """``expanded_size`` of a parsed tree, walked without recursion (saturating at ``_CAP``)."""
    from regex import _regex_core as core

    # Each frame: a node, its subpatterns, how many of them are measured, and their sizes so far.
    stack: list[tuple[Any, list[Any], list[int]]] = [(root, _children(root, core), [])]
    while True:
        node, children, sizes = stack[-1]
        if len(sizes) < len(children):
            child = children[len(sizes)]
            stack.append((child, _children(child, core), []))
            continue
        stack.pop()
        total = min(sum(sizes), _CAP) if children else 1
        if isinstance(node, core.GreedyRepeat):  # lazy and possessive repeats are subclasses
            count = node.max_count if node.max_count is not None else node.min_count
            total = min(total * max(count, 1), _CAP)
        elif isinstance(node, core.String):
            total = max(len(node.characters), 1)
        if not stack:
            return total
        stack[-1][2].append(total)


def _children(node: Any, core: Any) -> list[Any]:
    """The subpatterns of a node (a class counts as one atom: its members are not written out)."""
    if isinstance(node, core.SetBase) or not hasattr(node, "__dict__"):
        return []
    out: list[Any] = []
    for value in vars(node).values():
        if isinstance(value, core.RegexBase):
            out.append(value)
        elif isinstance(value, (list, tuple)):
            out.extend(item for item in value if isinstance(item, core.RegexBase))
    return out


_COUNT = re.compile(r"\{\s*(\d*)\s*(?:,\s*(\d*)\s*)?\}")


def _text_bound(pattern: str) -> int:
    """An upper bound from the text alone: the pattern's length times every count in it, nested or not."""
    total = max(len(pattern), 1)
    for low, high in _COUNT.findall(pattern):
        digits = high or low or "1"
        count = int(digits) if len(digits) <= 9 else _CAP
        total = min(total * max(count, 1), _CAP)
    return total


def compile_pattern(pattern: str, *, ignore_case: bool = False, fixed: bool = False, multiline: bool = False) -> Any:
    """A compiled ``regex`` pattern, or PatternError saying where it is wrong, or that it is too large to compile
    (``patternsize``: measured before ``regex`` expands its repeats)."""
    import regex

    source = regex.escape(pattern) if fixed else pattern
    flags = regex.VERSION0 | (regex.IGNORECASE if ignore_case else 0) | (regex.MULTILINE if multiline else 0)
    check_size(source, flags, given=pattern)
    try:
        return regex.compile(source, flags)
    except regex.error as exc:
        where = f" at position {exc.pos}" if exc.pos is not None else ""
        raise PatternError(f"invalid regular expression {pattern!r}{where}: {exc.msg}") from None
    except (OverflowError, RecursionError, ValueError) as exc:
        raise PatternError(f"invalid regular expression {pattern!r}: {exc}") from None
