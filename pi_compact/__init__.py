"""picompact: check, compact and search Pi coding-agent sessions, as a library and a command-line tool.

The public API is imported lazily, so ``picompact --help`` does not pay for modules it does not use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

_EXPORTS = {
    "Branch": "pi_compact.session.tree",
    "CheckOptions": "pi_compact.check",
    "CheckResult": "pi_compact.check",
    "CompactionPlan": "pi_compact.plan",
    "CompactionSettings": "pi_compact.settings",
    "Entry": "pi_compact.session.model",
    "ExitCode": "pi_compact.errors",
    "ModelInfo": "pi_compact.models",
    "PiCompactError": "pi_compact.errors",
    "Projection": "pi_compact.projection",
    "Session": "pi_compact.session.model",
    "SessionSummary": "pi_compact.session.discovery",
    "analyze": "pi_compact.check",
    "build_projection": "pi_compact.projection",
    "check_session": "pi_compact.check",
    "context_tokens": "pi_compact.projection",
    "estimate_tokens": "pi_compact.tokens",
    "find_model": "pi_compact.models",
    "find_most_recent_session": "pi_compact.session.discovery",
    "get_branch": "pi_compact.session.tree",
    "list_sessions": "pi_compact.session.discovery",
    "load_session": "pi_compact.session.load",
    "load_session_bytes": "pi_compact.session.load",
    "plan_compaction": "pi_compact.plan",
    "resolve_context_window": "pi_compact.models",
    "resolve_settings": "pi_compact.settings",
    "should_compact": "pi_compact.plan",
}

__all__ = [
    "Branch",
    "CheckOptions",
    "CheckResult",
    "CompactionPlan",
    "CompactionSettings",
    "Entry",
    "ExitCode",
    "ModelInfo",
    "PiCompactError",
    "Projection",
    "Session",
    "SessionSummary",
    "__version__",
    "analyze",
    "build_projection",
    "check_session",
    "context_tokens",
    "estimate_tokens",
    "find_model",
    "find_most_recent_session",
    "get_branch",
    "list_sessions",
    "load_session",
    "load_session_bytes",
    "plan_compaction",
    "resolve_context_window",
    "resolve_settings",
    "should_compact",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'pi_compact' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


if TYPE_CHECKING:  # pragma: no cover
    from pi_compact.check import CheckOptions, CheckResult, analyze, check_session
    from pi_compact.errors import ExitCode, PiCompactError
    from pi_compact.models import ModelInfo, find_model, resolve_context_window
    from pi_compact.plan import CompactionPlan, plan_compaction, should_compact
    from pi_compact.projection import Projection, build_projection, context_tokens
    from pi_compact.session.discovery import SessionSummary, find_most_recent_session, list_sessions
    from pi_compact.session.load import load_session, load_session_bytes
    from pi_compact.session.model import Entry, Session
    from pi_compact.session.tree import Branch, get_branch
    from pi_compact.settings import CompactionSettings, resolve_settings
    from pi_compact.tokens import estimate_tokens
