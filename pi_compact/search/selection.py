"""What grep selects, as grep and ripgrep users expect it: several patterns (``-e``), whole words (``-w``),
non-matching lines (``-v``), and only the lines of the session itself.

picompact writes some lines of the transcript itself: the ``ENTRY <id> <role> <time>`` header of every entry, and
the marker that opens each part of it (``[text]``, ``[toolResult] read id=… error``, ``[bash] exit 1``). Matching
them by default would make ``grep assistant`` list every assistant header instead of what an assistant said, so they
are selected only on request: headers with ``--section header``, markers with ``--section meta`` (which also selects
the metadata values, such as a label's text or an error message, that every search includes).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pi_compact.errors import UsageError
from pi_compact.search.matching import Searcher, compile_pattern
from pi_compact.search.render import HEADER, META, RenderedEntry


def compose_pattern(
    patterns: Sequence[str], *, fixed: bool = False, word: bool = False, ignore_case: bool = False
) -> tuple[str, bool]:
    """One pattern (and whether it is a fixed string) matching where any of ``patterns`` matches, as whole words
    with ``word``. Each pattern is checked on its own first, so an error names the pattern at fault."""
    if not patterns:
        raise UsageError("no pattern given: give PATTERN or -e PATTERN")
    for pattern in patterns:
        compile_pattern(pattern, ignore_case=ignore_case, fixed=fixed)
    if len(patterns) == 1 and not word:
        return patterns[0], fixed
    if fixed:
        import regex

        body = "|".join(regex.escape(p) for p in patterns)  # a plain alternation: the prefilter still applies
    else:
        body = patterns[0] if len(patterns) == 1 else "|".join(f"(?:{p})" for p in patterns)
    if word:
        body = rf"(?<!\w)(?:{body})(?!\w)"  # grep -w: no word character just before or just after
    return body, False


@dataclass(frozen=True, slots=True)
class LineSelector:
    """Which lines of an entry grep may select: in the asked sections, and picompact's own lines only on request."""

    sections: frozenset[str] | None = None

    @property
    def synthetic(self) -> bool:
        """Whether any of picompact's own lines can be selected."""
        return self.sections is not None and bool(self.sections & {HEADER, META})

    def __call__(self, rendered: RenderedEntry, index: int) -> bool:
        section = rendered.sections[index]
        wanted = self.sections
        if section == HEADER:
            return wanted is not None and HEADER in wanted
        if index in rendered.markers:  # a marker picompact wrote: only with --section meta
            return wanted is not None and META in wanted
        return wanted is None or section in wanted  # the session's own text, metadata values included


class _NoMatch:
    """Stands for the match of a line selected by -v: it has none, so nothing is highlighted."""

    def start(self) -> int:
        return 0


NO_MATCH: Any = _NoMatch()


def inverted_lines(
    rendered: RenderedEntry, searcher: Searcher, keep: LineSelector, start: int
) -> Iterator[tuple[int, Any]]:
    """(line index, NO_MATCH) for each selectable line from ``start`` on that does not match (grep -v)."""
    for index in range(start, len(rendered.lines)):
        if keep(rendered, index) and searcher.search(rendered.lines[index]) is None:
            yield index, NO_MATCH
