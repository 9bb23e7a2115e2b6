"""Whether a grep should have the loader keep the decorated lines of the bodies it drops: a question of speed
only (``load_session(decorate=...)``)."""

from __future__ import annotations

from pi_compact.errors import PatternError, UsageError
from pi_compact.search import rawregex
from pi_compact.search.grepping import GrepQuery, check_sections
from pi_compact.search.matching import relaxed_search
from pi_compact.search.selection import LineSelector

# Skeletons of the lines a session is made of: a pattern whose raw form matches all of them has a raw hit in nearly
# every entry, so the decorated lines of entries without one are not worth keeping at load.
_TYPICAL_LINES = (
    b'{"type":"message","id":"0a1b2c3d","parentId":"4e5f6a7b","timestamp":"2025-01-01T00:00:00.000Z",'
    b'"message":{"role":"user","content":[{"type":"text","text":""}],"timestamp":1735689600000}}',
    b'{"type":"message","id":"0a1b2c3d","parentId":"4e5f6a7b","timestamp":"2025-01-01T00:00:00.000Z",'
    b'"message":{"role":"assistant","content":[{"type":"toolCall","id":"c","name":"n","arguments":{}}],'
    b'"api":"a","provider":"p","model":"m","usage":{"input":1,"output":1},"stopReason":"toolUse"}}',
    b'{"type":"message","id":"0a1b2c3d","parentId":"4e5f6a7b","timestamp":"2025-01-01T00:00:00.000Z",'
    b'"message":{"role":"toolResult","toolCallId":"c","toolName":"n","content":[],"isError":false}}',
)


def grep_wants_decorated(query: GrepQuery) -> bool:
    """Whether a grep with these options will check the decorated lines of entries whose raw line has no hit, so
    the loader should keep them for the bodies it drops (``load_session(decorate=...)``).

    Only a question of speed: without them grep renders those lines itself (reading such a body back), with them
    the load renders every dropped body's decorated lines. No when the raw search alone decides
    (``rawregex.decorated_safe``), for -v (which renders every entry), and when the pattern's raw form matches a
    typical line (every entry will be rendered anyway)."""
    if query.invert:
        return False
    try:
        composed, composed_fixed = query.composed()
        synthetic = LineSelector(check_sections(query.sections)).synthetic
    except (PatternError, UsageError):
        return True  # reported by grep itself, after the session's own problems
    tree = rawregex.parse(composed, fixed=composed_fixed, ignore_case=query.ignore_case)
    if tree is None:
        return True
    try:
        relaxed = relaxed_search(tree)
    except PatternError:
        return True  # too large to compile (several -e, each small enough): grep says so, naming the patterns
    if not synthetic and rawregex.decorated_safe(tree, relaxed):
        return False
    program = rawregex.compile_raw(rawregex.raw_pattern(tree, frozenset(), False))
    return program is None or any(program.search(line) is None for line in _TYPICAL_LINES)
