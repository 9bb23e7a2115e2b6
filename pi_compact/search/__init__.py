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

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pi_compact.search.context import ContextMessage, ContextView, build_context_view
    from pi_compact.search.grep_results import GrepLine, GrepMatch, GrepPage
    from pi_compact.search.grepping import GrepQuery, grep
    from pi_compact.search.listing import EntryPage, list_entries
    from pi_compact.search.pages import DEFAULT_LIMITS, EntryInfo, Limits
    from pi_compact.search.patternsize import compile_pattern
    from pi_compact.search.render import SECTIONS, RenderedEntry, header_line, preview, render_entry
    from pi_compact.search.show import ShowLine, ShowPage, entry_raw, resolve_in_scope, show_entry
    from pi_compact.search.transcript import Transcript, TranscriptLine, as_transcript, build_transcript

# Each name is imported from its module when first asked for: importing one submodule (the cross-session search's
# ``pi_compact.search.render``, say) loads only what that submodule needs, not grep, show and the context view.
_HOME = {
    **dict.fromkeys(("ContextMessage", "ContextView", "build_context_view"), "context"),
    **dict.fromkeys(("GrepLine", "GrepMatch", "GrepPage"), "grep_results"),
    **dict.fromkeys(("GrepQuery", "grep"), "grepping"),
    **dict.fromkeys(("EntryPage", "list_entries"), "listing"),
    "compile_pattern": "patternsize",
    **dict.fromkeys(("DEFAULT_LIMITS", "EntryInfo", "Limits"), "pages"),
    **dict.fromkeys(("SECTIONS", "RenderedEntry", "header_line", "preview", "render_entry"), "render"),
    **dict.fromkeys(("ShowLine", "ShowPage", "entry_raw", "resolve_in_scope", "show_entry"), "show"),
    **dict.fromkeys(("Transcript", "TranscriptLine", "as_transcript", "build_transcript"), "transcript"),
}


def __getattr__(name: str) -> Any:
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


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
