"""Searching the raw history without a model: the transcript (a scope of entries rendered as attributed lines),
list_entries, grep and show_entry (paginated and bounded, with cursors), and the context view.

from pi_compact.session import load_session
from pi_compact.search import GrepQuery, build_transcript, grep

transcript = build_transcript(load_session("session.jsonl"))
query = GrepQuery.of(r"TypeError: .*undefined", context=2)
page = grep(transcript, query)
for match in page.matches:
    print(match.entry_id, match.line.section, match.line.text)
more = grep(transcript, query, cursor=page.next_cursor)
"""

from typing import TYPE_CHECKING, Any

from pi_compact.search.grepping import GrepLine, GrepMatch, GrepPage, GrepQuery, grep
from pi_compact.search.listing import EntryPage, list_entries
from pi_compact.search.matching import compile_pattern
from pi_compact.search.pages import DEFAULT_LIMITS, EntryInfo, Limits
from pi_compact.search.render import SECTIONS, RenderedEntry, header_line, preview, render_entry
from pi_compact.search.show import ShowLine, ShowPage, entry_raw, resolve_in_scope, show_entry
from pi_compact.search.transcript import Transcript, TranscriptLine, as_transcript, build_transcript

if TYPE_CHECKING:
    from pi_compact.search.context import ContextMessage, ContextView, build_context_view

_CONTEXT = frozenset({"ContextMessage", "ContextView", "build_context_view"})


def __getattr__(name: str) -> Any:
    """The context view is imported when first asked for: grep, list and show do not need the projection."""
    if name in _CONTEXT:
        from pi_compact.search import context

        return getattr(context, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DEFAULT_LIMITS",
    "SECTIONS",
    "ContextMessage",
    "ContextView",
    "EntryInfo",
    "EntryPage",
    "GrepLine",
    "GrepMatch",
    "GrepPage",
    "GrepQuery",
    "Limits",
    "RenderedEntry",
    "ShowLine",
    "ShowPage",
    "Transcript",
    "TranscriptLine",
    "as_transcript",
    "build_context_view",
    "build_transcript",
    "compile_pattern",
    "entry_raw",
    "grep",
    "header_line",
    "list_entries",
    "preview",
    "render_entry",
    "resolve_in_scope",
    "show_entry",
]
