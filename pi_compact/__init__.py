"""picompact: check, compact and search Pi coding-agent sessions, as a library and a command-line tool."""

from __future__ import annotations

__version__ = "0.1.0"

from pi_compact.errors import ExitCode, PiCompactError
from pi_compact.plan import CompactionPlan, plan_compaction, should_compact
from pi_compact.projection import Projection, build_projection, context_tokens
from pi_compact.session import Branch, Entry, Session, get_branch, load_session, load_session_bytes
from pi_compact.tokens import estimate_tokens

__all__ = [
    "Branch",
    "CompactionPlan",
    "Entry",
    "ExitCode",
    "PiCompactError",
    "Projection",
    "Session",
    "__version__",
    "build_projection",
    "context_tokens",
    "estimate_tokens",
    "get_branch",
    "load_session",
    "load_session_bytes",
    "plan_compaction",
    "should_compact",
]
