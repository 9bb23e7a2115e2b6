"""Searching the raw history: list_entries, grep and show_entry (paginated and bounded), and the context view.

from pi_compact.session import load_session
from pi_compact.render import build_transcript
from pi_compact.lookup import grep

transcript = build_transcript(load_session("session.jsonl"))
page = grep(transcript, r"TypeError: .*undefined", context=2)
for match in page.matches:
    print(match.entry_id, match.line.section, match.line.text)
more = grep(transcript, r"TypeError: .*undefined", context=2, cursor=page.next_cursor)
"""

from pi_compact.lookup.context import ContextMessage, ContextView, build_context_view
from pi_compact.lookup.matching import compile_pattern
from pi_compact.lookup.search import (
    DEFAULT_LIMITS,
    EntryInfo,
    EntryPage,
    GrepLine,
    GrepMatch,
    GrepPage,
    Limits,
    ShowLine,
    ShowPage,
    entry_raw,
    grep,
    list_entries,
    resolve_in_scope,
    show_entry,
)

__all__ = [
    "DEFAULT_LIMITS",
    "ContextMessage",
    "ContextView",
    "EntryInfo",
    "EntryPage",
    "GrepLine",
    "GrepMatch",
    "GrepPage",
    "Limits",
    "ShowLine",
    "ShowPage",
    "build_context_view",
    "compile_pattern",
    "entry_raw",
    "grep",
    "list_entries",
    "resolve_in_scope",
    "show_entry",
]
