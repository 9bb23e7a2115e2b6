"""picompact: check, compact and search Pi coding-agent sessions, as a library and a command-line tool.

The public API is imported lazily, so ``picompact --help`` does not pay for modules it does not use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from pi_compact.version import __version__

_EXPORTS = {
    "Branch": "pi_compact.session.tree",
    "CheckOptions": "pi_compact.ops.check",
    "CheckResult": "pi_compact.ops.check",
    "CompactOptions": "pi_compact.ops.compact",
    "CompactionPlan": "pi_compact.pi.plan",
    "CompactionSettings": "pi_compact.pi.settings",
    "Entry": "pi_compact.session.entries",
    "GrepQuery": "pi_compact.search.grepping",
    "ExitCode": "pi_compact.errors",
    "LookupOptions": "pi_compact.lookup.agent",
    "ModelInfo": "pi_compact.pi.catalog",
    "PiCompactError": "pi_compact.errors",
    "Projection": "pi_compact.pi.projection",
    "Session": "pi_compact.session.entries",
    "SessionSummary": "pi_compact.pi.sessions",
    "SummaryOptions": "pi_compact.checkpoint.summary",
    "VerbatimOptions": "pi_compact.checkpoint.verbatim.build",
    "audit_session": "pi_compact.ops.audit",
    "build_context_view": "pi_compact.search.context",
    "build_projection": "pi_compact.pi.projection",
    "build_transcript": "pi_compact.search.transcript",
    "build_verbatim_checkpoint": "pi_compact.checkpoint.verbatim.build",
    "check_session": "pi_compact.ops.check",
    "compact_session": "pi_compact.ops.compact",
    "context_growth": "pi_compact.ops.forecast",
    "context_tokens": "pi_compact.pi.projection",
    "estimate_tokens": "pi_compact.pi.tokens",
    "find_model": "pi_compact.pi.catalog",
    "find_most_recent_session": "pi_compact.pi.sessions",
    "get_branch": "pi_compact.session.tree",
    "grep": "pi_compact.search.grepping",
    "lint_file": "pi_compact.ops.lint",
    "lint_paths": "pi_compact.ops.lint",
    "list_entries": "pi_compact.search.listing",
    "list_sessions": "pi_compact.pi.sessions",
    "load_session": "pi_compact.session.load",
    "load_session_bytes": "pi_compact.session.load",
    "measure_coverage": "pi_compact.ops.coverage",
    "plan_compaction": "pi_compact.pi.plan",
    "resolve_context_window": "pi_compact.pi.catalog",
    "resolve_settings": "pi_compact.pi.settings",
    "run_lookup": "pi_compact.lookup.agent",
    "should_compact": "pi_compact.pi.plan",
    "show_entry": "pi_compact.search.show",
    "CheckpointMode": "pi_compact.checkpoint.mode",
    "CheckpointResult": "pi_compact.checkpoint.mode",
    "SummaryMode": "pi_compact.checkpoint.summary",
    "VerbatimMode": "pi_compact.checkpoint.verbatim.mode",
    "build_compaction": "pi_compact.ops.compact",
    "CheckpointRequest": "pi_compact.ops.checkpoint_request",
    "get_mode": "pi_compact.checkpoint.mode",
    "SessionFile": "pi_compact.ops.session_file",
    "search_sessions": "pi_compact.archive",
    "open_session": "pi_compact.ops.session_file",
    "PruneOptions": "pi_compact.ops.prune",
    "PrunePlan": "pi_compact.ops.prune",
    "PruneResult": "pi_compact.ops.prune",
    "plan_prune": "pi_compact.ops.prune",
    "prune_session": "pi_compact.ops.prune",
}

__all__ = [
    "Branch",
    "CheckOptions",
    "CheckResult",
    "CheckpointMode",
    "CheckpointRequest",
    "CheckpointResult",
    "CompactOptions",
    "CompactionPlan",
    "CompactionSettings",
    "Entry",
    "ExitCode",
    "GrepQuery",
    "LookupOptions",
    "ModelInfo",
    "PiCompactError",
    "Projection",
    "PruneOptions",
    "PrunePlan",
    "PruneResult",
    "Session",
    "SessionFile",
    "SessionSummary",
    "SummaryMode",
    "SummaryOptions",
    "VerbatimMode",
    "VerbatimOptions",
    "__version__",
    "audit_session",
    "build_compaction",
    "build_context_view",
    "build_projection",
    "build_transcript",
    "build_verbatim_checkpoint",
    "check_session",
    "compact_session",
    "context_growth",
    "context_tokens",
    "estimate_tokens",
    "find_model",
    "find_most_recent_session",
    "get_branch",
    "get_mode",
    "grep",
    "lint_file",
    "lint_paths",
    "list_entries",
    "list_sessions",
    "load_session",
    "load_session_bytes",
    "measure_coverage",
    "open_session",
    "plan_compaction",
    "plan_prune",
    "prune_session",
    "resolve_context_window",
    "resolve_settings",
    "run_lookup",
    "search_sessions",
    "should_compact",
    "show_entry",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'pi_compact' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:  # pragma: no cover
    from pi_compact.archive import search_sessions
    from pi_compact.checkpoint.mode import CheckpointMode, CheckpointResult, get_mode
    from pi_compact.checkpoint.summary import SummaryMode, SummaryOptions
    from pi_compact.checkpoint.verbatim.build import VerbatimOptions, build_verbatim_checkpoint
    from pi_compact.checkpoint.verbatim.mode import VerbatimMode
    from pi_compact.errors import ExitCode, PiCompactError
    from pi_compact.lookup.agent import LookupOptions, run_lookup
    from pi_compact.ops.audit import audit_session
    from pi_compact.ops.check import CheckOptions, CheckResult, check_session
    from pi_compact.ops.checkpoint_request import CheckpointRequest
    from pi_compact.ops.compact import CompactOptions, build_compaction, compact_session
    from pi_compact.ops.coverage import measure_coverage
    from pi_compact.ops.forecast import context_growth
    from pi_compact.ops.lint import lint_file, lint_paths
    from pi_compact.ops.session_file import SessionFile, open_session
    from pi_compact.pi.catalog import ModelInfo, find_model, resolve_context_window
    from pi_compact.pi.plan import CompactionPlan, plan_compaction, should_compact
    from pi_compact.pi.projection import Projection, build_projection, context_tokens
    from pi_compact.pi.sessions import SessionSummary, find_most_recent_session, list_sessions
    from pi_compact.pi.settings import CompactionSettings, resolve_settings
    from pi_compact.pi.tokens import estimate_tokens
    from pi_compact.search.context import build_context_view
    from pi_compact.search.grepping import GrepQuery, grep
    from pi_compact.search.listing import list_entries
    from pi_compact.search.show import show_entry
    from pi_compact.search.transcript import build_transcript
    from pi_compact.session.entries import Entry, Session
    from pi_compact.session.load import load_session, load_session_bytes
    from pi_compact.session.tree import Branch, get_branch
