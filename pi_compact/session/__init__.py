"""Reading Pi session files: loading, the entry tree, and safe writing."""

from pi_compact.session.entries import Diagnostic, Entry, Session
from pi_compact.session.load import load_session, load_session_bytes
from pi_compact.session.tree import Branch, get_branch, resolve_entry

__all__ = [
    "Branch",
    "Diagnostic",
    "Entry",
    "Session",
    "get_branch",
    "load_session",
    "load_session_bytes",
    "resolve_entry",
]
