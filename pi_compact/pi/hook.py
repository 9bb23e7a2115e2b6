"""What the Pi extension asks of picompact, as data: a checkpoint for Pi's ``session_before_compact``, one recovery
tool call, and the effective configuration. No printing; ``pi_compact.cli.pi`` turns these into JSON.

The checkpoint comes from ``draft_compaction``, the code path of ``picompact compact --dry-run`` (a verbatim
mode's preview is its checkpoint), so for the same session prefix (``--leaf``), settings and environment the
extension's verbatim checkpoint and the dry run's are the same bytes.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pi_compact.errors import UsageError

if TYPE_CHECKING:
    from pi_compact.search.transcript import Transcript

# The extension's tool names -> the search tools of ``picompact lookup`` they run.
TOOLS = {
    "context_list_entries": "list_entries",
    "context_grep": "grep",
    "context_show_entry": "show_entry",
}


@dataclass(frozen=True)
class CheckpointRequest:
    """Everything Pi decided that picompact must not decide differently."""

    session: Path
    leaf: str
    context_window: int
    reserve_tokens: int
    keep_recent_tokens: int
    mode: str = "verbatim"
    cap: int | None = None
    no_cap: bool = False
    model: str | None = None  # summary mode: PROVIDER/ID of the model that writes the summary
    base_url: str | None = None  # summary mode: the model's server (a provider picompact does not know)
    instructions: str | None = None  # summary mode: /compact's focus text
    timeout: float | None = None  # summary mode: seconds per model answer


def build_checkpoint(request: CheckpointRequest) -> dict[str, Any]:
    """The compaction Pi should append: ``summary``, ``firstKeptEntryId``, ``tokensBefore``, ``details``, plus the
    re-orientation ``reminder`` (verbatim mode), the settings used and the figures for ``/picompact``."""
    from pi_compact.check import CheckOptions
    from pi_compact.checkpoint.mode import CheckpointMode, get_mode
    from pi_compact.compact import CompactOptions, draft_compaction
    from pi_compact.llm import model_available

    mode: CheckpointMode
    if request.mode == "verbatim":
        mode = get_mode("verbatim", cap_tokens=request.cap, no_cap=request.no_cap, lookup_available=model_available)
    elif request.mode == "summary":
        from pi_compact.checkpoint.summary import SummaryOptions

        options = SummaryOptions(
            model=request.model,
            base_url=request.base_url,
            instructions=request.instructions or None,
            timeout=request.timeout if request.timeout is not None else SummaryOptions.timeout,
        )
        mode = get_mode("summary", options=options)
    else:
        raise UsageError(f"--mode must be verbatim or summary (got {request.mode!r})")
    result = draft_compaction(
        request.session,
        mode,
        CompactOptions(
            check=CheckOptions(
                context_window=request.context_window,
                model=request.model,
                reserve_tokens=request.reserve_tokens,
                keep_recent_tokens=request.keep_recent_tokens,
                leaf_id=request.leaf,
            ),
        ),
    )
    compaction = result.entries[0]
    reminder = next((e for e in result.entries if e["type"] == "custom_message"), None)
    check = result.check
    return {
        "mode": request.mode,
        "summary": compaction["summary"],
        "firstKeptEntryId": compaction["firstKeptEntryId"],
        "tokensBefore": compaction["tokensBefore"],
        "details": compaction.get("details"),
        "usage": compaction.get("usage"),
        "reminder": reminder["content"] if reminder else None,
        "reminderCustomType": reminder["customType"] if reminder else None,
        "leafId": check.branch.leaf.id if check.branch.leaf else None,
        "settings": {
            "enabled": check.enabled,
            "reserveTokens": check.reserve_tokens,
            "keepRecentTokens": check.keep_recent_tokens,
        },
        "contextWindow": check.context_window,
        "stats": result.stats.to_json() if result.stats else None,
        "trimmed": bool(result.checkpoint.trimmed) if result.checkpoint else False,
        # The checkpoint's own warnings (a cap it cannot keep, say); not compact's advice about flags, since Pi
        # decided when and where to compact.
        "warnings": [*check.warnings, *(result.checkpoint.warnings if result.checkpoint else ())],
    }


def run_tool(session: Path, leaf: str | None, tool: str, arguments: Mapping[str, Any]) -> str:
    """One recovery tool call on the raw branch ending at ``leaf``: the text the agent reads."""
    from pi_compact.search.transcript import build_transcript
    from pi_compact.session.load import load_session

    inner = TOOLS.get(tool)
    if inner is None:
        raise UsageError(f"unknown tool {tool!r}: one of {', '.join(sorted(TOOLS))}")
    transcript = build_transcript(load_session(session), leaf_id=leaf)
    return run_search_tool(transcript, inner, arguments, name=tool)


def run_search_tool(transcript: Transcript, tool: str, arguments: Mapping[str, Any], *, name: str = "") -> str:
    """One call of the lookup model's ``list_entries``, ``grep`` or ``show_entry``, with the same argument checks,
    limits and result text; ``name`` is the tool's name as the agent knows it, for the "call … again" hint."""
    from pi_compact.lookup.agent import call_tool

    return call_tool(transcript, tool, arguments, name=name or None)


def effective_config(
    cwd: str, project_trusted: bool | None, session_model: str | None, env: Mapping[str, str] | None = None
) -> dict[str, Any]:
    """The configuration the extension runs with: settings, and whether ``context_lookup`` has a model."""
    from pi_compact.catalog import parse_model_ref
    from pi_compact.llm import model_available
    from pi_compact.pi.config import load_config

    config = load_config(cwd, project_trusted)
    model: tuple[str, str] | None = None
    if session_model and "/" in session_model:
        with contextlib.suppress(UsageError):
            model = parse_model_ref(session_model)
    env = os.environ if env is None else env
    return {
        **config.to_json(),
        "capArgs": config.cap_args(),
        "lookupAvailable": model_available(model, config.lookup_model, env),
    }
