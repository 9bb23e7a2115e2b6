"""What the Pi extension asks of picompact, as data: a checkpoint for Pi's ``session_before_compact``, one recovery
tool call, and the effective configuration. No printing; ``pi_compact.cli.pi`` turns these into JSON.

The checkpoint comes from ``build_compaction``, the code path of ``picompact compact --dry-run`` with the mode
built in full (a verbatim mode's preview is its checkpoint), so for the same session prefix (``--leaf``), settings
and environment the extension's verbatim checkpoint and the dry run's are the same bytes.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from pi_compact.errors import UsageError
from pi_compact.extension.tools import SEARCH_MAX_COUNT, SEARCH_SESSIONS
from pi_compact.pi.config import PicompactConfigJSON

if TYPE_CHECKING:
    from pi_compact.ops.check import CheckOptions, CheckResult
    from pi_compact.ops.checkpoint_request import CheckpointRequest
    from pi_compact.ops.compact import CompactStatsJSON
    from pi_compact.ops.prune import PrunePlan
    from pi_compact.ops.prune_policy import Boundary, DecisionJSON, Prices, Warming, WarmingMode
    from pi_compact.search.transcript import Transcript
    from pi_compact.session.tree import Branch

# The extension's tool names -> the search tools of ``picompact lookup`` they run.
TOOLS = {
    "context_list_entries": "list_entries",
    "context_grep": "grep",
    "context_show_entry": "show_entry",
}
# The one tool that reads other sessions (through ``picompact search``'s index), apart from the recovery tools above,
# which stay on this session's branch.
SEARCH_ARGUMENTS = frozenset(
    {"query", "regex", "fixed", "ignore_case", "role", "tool", "errors", "since", "until", "max_count", "cursor"}
)


class CheckpointSettingsJSON(TypedDict):
    """The settings the checkpoint was built with, by Pi's names."""

    enabled: bool
    reserveTokens: int
    keepRecentTokens: int


# The documents the Pi extension reads: their keys follow Pi's own names (settings keys, compaction fields).
class CheckpointJSON(TypedDict):
    """``build_checkpoint()``: the ``pi checkpoint`` document. ``stats`` is ``compact --json``'s (imported only for
    the type checker: ``pi config`` and ``pi tool`` do not load ``compact``)."""

    mode: str
    summary: str
    firstKeptEntryId: str | None
    tokensBefore: int
    details: Any
    usage: Any
    reminder: str | None
    reminderCustomType: str | None
    leafId: str | None
    settings: CheckpointSettingsJSON
    contextWindow: int
    stats: CompactStatsJSON | None
    trimmed: bool
    warnings: list[str]


class EffectiveConfigJSON(PicompactConfigJSON):
    """``effective_config()``: the ``pi config`` document, the settings and what the extension needs beside them."""

    capArgs: list[str]
    lookupAvailable: bool
    tools: list[dict[str, Any]]


def build_checkpoint(session: Path, settings: CheckOptions, request: CheckpointRequest) -> CheckpointJSON:
    """The compaction Pi should append to ``session``: ``summary``, ``firstKeptEntryId``, ``tokensBefore``,
    ``details``, plus the re-orientation ``reminder`` (verbatim mode), the settings used and the figures for
    ``/picompact``. ``settings``: what Pi decided that picompact must not decide differently (the leaf, the
    context window, reserveTokens, keepRecentTokens); ``request``: the checkpoint asked for."""
    from pi_compact.ops.compact import CompactOptions, build_compaction

    result = build_compaction(session, request.checkpoint_mode(), CompactOptions(check=settings))
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


def run_tool(
    session: Path, leaf: str | None, tool: str, arguments: Mapping[str, Any], project_trusted: bool | None = None
) -> str:
    """One recovery tool call on the raw branch ending at ``leaf``: the text the agent reads. ``project_trusted``:
    whether Pi trusts the session's project (None: Pi's stored decision, undecided counting as not trusted)."""
    from pi_compact.search.transcript import build_transcript
    from pi_compact.session.load import load_session

    if tool == SEARCH_SESSIONS:
        return search_sessions(session, arguments, project_trusted)
    inner = TOOLS.get(tool)
    if inner is None:
        raise UsageError(f"unknown tool {tool!r}: one of {', '.join(sorted([*TOOLS, SEARCH_SESSIONS]))}")
    if tool == "context_show_entry" and arguments.get("session") is not None:
        other = other_session(session, arguments["session"], project_trusted)
        rest = {k: v for k, v in arguments.items() if k != "session"}
        return run_search_tool(build_transcript(load_session(other), all_branches=True), inner, rest, name=tool)
    transcript = build_transcript(load_session(session), leaf_id=leaf)
    return run_search_tool(transcript, inner, arguments, name=tool)


def _search_scope(session: Path, project_trusted: bool | None = None) -> str | None:
    """The project directory the search is kept to (None: every session), from ``picompact.crossSession`` for the
    session's project (a project's ``"all"`` only in a project trusted for certain: ``load_config``);
    UsageError when the setting turns the tool off."""
    from pi_compact.pi.config import load_config
    from pi_compact.pi.sessions import read_session_header

    header = read_session_header(session) or {}
    cwd = header.get("cwd") if isinstance(header.get("cwd"), str) else None
    setting = load_config(cwd or os.getcwd(), project_trusted).cross_session
    if setting is None:
        raise UsageError(f"{SEARCH_SESSIONS} is off: picompact.crossSession is false in Pi's settings")
    return (cwd or os.getcwd()) if setting == "project" else None


def _open_index() -> Any:
    from pi_compact.archive.store import open_store, temporary_store
    from pi_compact.errors import ExternalError

    try:
        return open_store()
    except ExternalError:  # no usable cache directory: the same answers without keeping an index
        return temporary_store()


def search_sessions(session: Path, arguments: Mapping[str, Any], project_trusted: bool | None = None) -> str:
    """``context_search_sessions``: ``picompact search`` over this project's sessions (or all of them), as text."""
    from pi_compact.archive import Filters, Query, search, session_files
    from pi_compact.search.pages import parse_time

    unknown = sorted(set(arguments) - SEARCH_ARGUMENTS)
    if unknown:
        raise UsageError(
            f"{SEARCH_SESSIONS}: unknown argument {unknown[0]!r}; it takes {', '.join(sorted(SEARCH_ARGUMENTS))}"
        )
    query = arguments.get("query")
    if not isinstance(query, str) or not query.strip():
        raise UsageError(f"{SEARCH_SESSIONS}: query must be a non-empty string")
    flags = {k: arguments.get(k, False) for k in ("regex", "fixed", "ignore_case", "errors")}
    if any(not isinstance(v, bool) for v in flags.values()):
        raise UsageError(f"{SEARCH_SESSIONS}: regex, fixed, ignore_case and errors are true or false")
    roles = arguments.get("role")
    if roles is not None and (not isinstance(roles, list) or not all(isinstance(r, str) for r in roles)):
        raise UsageError(f"{SEARCH_SESSIONS}: role must be a list of roles or entry types")
    limit = arguments.get("max_count", 10)
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= SEARCH_MAX_COUNT:
        raise UsageError(f"{SEARCH_SESSIONS}: max_count must be between 1 and {SEARCH_MAX_COUNT}")
    times: dict[str, int | None] = {}
    for key in ("since", "until"):
        value = arguments.get(key)
        if value is not None and not isinstance(value, str):
            raise UsageError(f"{SEARCH_SESSIONS}: {key} must be an ISO time or an age (2h, 7d)")
        times[key] = int(parse_time(value).timestamp() * 1000) if value else None
    tool = arguments.get("tool")
    cursor = arguments.get("cursor")
    if not isinstance(tool, str | None) or not isinstance(cursor, str | None):
        raise UsageError(f"{SEARCH_SESSIONS}: tool and cursor are strings")
    cwd = _search_scope(session, project_trusted)
    parsed = Query.parse(query, regex=flags["regex"], fixed=flags["fixed"], ignore_case=flags["ignore_case"])
    filters = Filters(
        cwd=cwd,
        since_ms=times["since"],
        until_ms=times["until"],
        roles=frozenset(roles) if roles else None,
        tool=tool,
        errors=flags["errors"],
    )
    with _open_index() as store:
        scope = store.run(lambda: store.update(session_files().files))
        page = search(store, scope, parsed, filters, limit=limit, cursor=cursor)
    where = f"the sessions of {cwd}" if cwd is not None else "every Pi session"
    current = os.path.abspath(session)
    if not page.hits:
        found = f"No entry matches {query!r} in {where} ({page.sessions} sessions searched)."
        return found if not page.stopped else f"{found} (incomplete: {page.stopped})"
    lines = [f"{len(page.hits)} results in {where} ({page.sessions} sessions searched), best first:", ""]
    ids: dict[str | None, int] = {}
    for file in scope.files.values():
        ids[file.session_id] = ids.get(file.session_id, 0) + 1
    for number, hit in enumerate(page.hits, 1):
        this = " (this session)" if os.path.abspath(hit.session) == current else ""
        if ids.get(hit.session_id, 0) > 1:
            this += f" (its id is shared by {ids[hit.session_id]} files: give this file as session)"
        lines.append(
            f"{number}. session {hit.session_id}{this}, entry {hit.entry_id} ({hit.role}, {hit.timestamp or 'no time'})"
        )
        lines.append(f"   file: {hit.session}")
        snippet, at = [], 0
        for start, end in hit.highlights:
            if start >= at:
                snippet += [hit.snippet[at:start], "«", hit.snippet[start:end], "»"]
                at = end
        snippet.append(hit.snippet[at:])
        lines.append("   " + "".join(snippet))
    lines.append("")
    lines.append(
        'Read one in full with context_show_entry {"id": ENTRY_ID, "session": SESSION_ID}; these are other '
        "sessions' records, not this session's context."
    )
    if page.next_cursor:
        lines.append(f'More results: call {SEARCH_SESSIONS} again with "cursor": "{page.next_cursor}".')
    for path, reason in page.skipped:
        lines.append(f"(skipped {path}: {reason})")
    if page.stopped:
        lines.append(f"(incomplete: {page.stopped})")
    return "\n".join(lines)


def other_session(session: Path, wanted: Any, project_trusted: bool | None = None) -> Path:
    """The session file ``context_show_entry``'s ``session`` argument names: a session id (or file) that
    ``context_search_sessions`` can return, within the same scope."""
    from pi_compact.archive import session_files

    if not isinstance(wanted, str) or not wanted:
        raise UsageError("context_show_entry: session must be a session id from context_search_sessions")
    cwd = _search_scope(session, project_trusted)
    from pi_compact.pi.sessions import header_cwd_matches
    from pi_compact.pi.settings import expand_path

    with _open_index() as store:
        scope = store.run(lambda: store.update(session_files().files))
    found = sorted(
        f.path
        for f in scope.files.values()
        if (f.session_id == wanted or f.path == wanted) and (cwd is None or header_cwd_matches(f.cwd, expand_path(cwd)))
    )
    if not found:
        raise UsageError(
            f"context_show_entry: no session {wanted!r} among those context_search_sessions searches; "
            "give a session id it returned"
        )
    if len(found) > 1:  # copies of a session, or a forged header: never guess which one was meant
        raise UsageError(
            f"context_show_entry: session id {wanted!r} is held by {len(found)} files ({', '.join(found)}); "
            "give the file context_search_sessions showed as session"
        )
    return Path(found[0])


def run_search_tool(transcript: Transcript, tool: str, arguments: Mapping[str, Any], *, name: str = "") -> str:
    """One call of the lookup model's ``list_entries``, ``grep`` or ``show_entry``, with the same argument checks,
    limits and result text; ``name`` is the tool's name as the agent knows it, for the "call … again" hint."""
    from pi_compact.lookup.tools import call_tool

    return call_tool(transcript, tool, arguments, name=name or None)


def effective_config(
    cwd: str, project_trusted: bool | None, session_model: str | None, env: Mapping[str, str] | None = None
) -> EffectiveConfigJSON:
    """The configuration the extension runs with: settings, and whether ``context_lookup`` has a model."""
    from pi_compact.llm import model_available
    from pi_compact.pi.catalog import parse_model_ref
    from pi_compact.pi.config import load_config

    config = load_config(cwd, project_trusted)
    model: tuple[str, str] | None = None
    if session_model and "/" in session_model:
        with contextlib.suppress(UsageError):
            model = parse_model_ref(session_model)
    from pi_compact.extension.tools import extension_tools

    env = os.environ if env is None else env
    lookup = model_available(model, config.lookup_model, env)
    return {
        **config.to_json(),
        "capArgs": config.cap_args(),
        "lookupAvailable": lookup,
        "tools": extension_tools(config.cross_session, lookup),
    }


# ---------------------------------------------------------------------------------------------------------------
# Pruning between compactions


class PruneDraftJSON(TypedDict):
    type: str
    targetId: str
    replacement: Any


class PruneDraftsJSON(TypedDict):
    """``prune_drafts()``: the ``pi prune-drafts`` document."""

    prune: bool
    reason: str
    detail: str
    boundary: str
    entries: list[PruneDraftJSON]
    tokensBefore: int
    tokensAfter: int
    tokensFreed: int  # Pi's figure before less after (what its threshold check sees)
    tokensRemoved: int  # the pruned outputs' tokens less their stubs'
    pruned: list[dict[str, Any]]
    threshold: int | None
    lastRequestMs: int | None
    promptTokens: int
    returnProbability: float | None  # the session's own chance of a prompt within the cache lifetime after a run
    settleShare: float | None  # the share of the growth that came with a run's last reply
    decision: DecisionJSON


def timestamp_ms(timestamp: str | None) -> int | None:
    """An entry's ISO timestamp in ms since the epoch (None when it has none that parses)."""
    from datetime import datetime

    if not timestamp:
        return None
    try:
        return int(datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp() * 1000)
    except (ValueError, OverflowError):
        return None


def last_request(branch: Branch) -> tuple[int | None, int]:
    """When the branch's prompt cache entry was last written or refreshed (the last assistant reply, or Pi's last
    ``cache_warm`` usage entry after it), in ms since the epoch, and the prompt size of that last reply (usage input
    + cacheRead + cacheWrite, Pi's ``lastPromptTokens``)."""
    when: int | None = None
    for entry in reversed(branch.entries):
        if entry.type == "usage" and entry.raw.get("kind") == "cache_warm" and when is None:
            when = timestamp_ms(entry.timestamp)
            continue
        message = entry.message
        if entry.type == "message" and message is not None and message.get("role") == "assistant":
            raw = message.get("usage")
            usage: dict[str, Any] = raw if isinstance(raw, dict) else {}
            prompt = 0.0
            for key in ("input", "cacheRead", "cacheWrite"):
                value = usage.get(key)
                if isinstance(value, int | float) and not isinstance(value, bool):
                    prompt += value
            if when is None:
                when = timestamp_ms(entry.timestamp)
            return when, int(prompt)
    return when, 0


class RunShape(TypedDict):
    """``run_shape()``: what the branch says about how its runs end and how soon the user comes back."""

    gapsMs: list[int]  # from each run's last reply to the next prompt
    settleShare: float | None  # the share of the growth that came with a run's last reply


def run_shape(branch: Branch) -> RunShape:
    """The gaps between a run's last reply and the user's next prompt (entry timestamps), and the share of the
    branch's message tokens that a run's last reply added (the rest came inside runs: tool calls and their
    results), for the break rule of ``ops.prune_policy``."""
    from pi_compact.pi.tokens import estimate_tokens

    gaps: list[int] = []
    inside = settle = 0
    last: tuple[int, int | None] | None = None  # a reply without a tool result after it yet: (tokens, ms)
    for entry in branch.entries:
        message = entry.message
        if entry.type != "message" or message is None:
            continue
        role = message.get("role")
        if role == "toolResult":
            if last is not None:
                inside += last[0]
                last = None
            inside += estimate_tokens(message)
        elif role == "assistant":
            if last is not None:
                inside += last[0]
            last = (estimate_tokens(message), timestamp_ms(entry.timestamp))
        elif role == "user" and last is not None:
            settle += last[0]
            at = timestamp_ms(entry.timestamp)
            if at is not None and last[1] is not None:
                gaps.append(at - last[1])
            last = None
    if last is not None:
        settle += last[0]
    total = inside + settle
    return {"gapsMs": gaps, "settleShare": settle / total if total else None}


def prune_plan(check: CheckResult) -> PrunePlan:
    """``picompact prune --dry-run``'s plan for the branch ``check`` was made on (its settings, the default minimum
    size worth pruning)."""
    from pi_compact.ops.prune import PruneOptions, plan_prune

    return plan_prune(check, PruneOptions(dry_run=True))


def cache_warming_mode(cwd: str) -> WarmingMode:
    """Pi's ``cacheWarming`` setting (global settings only, as Pi reads it): off, streaming or idle (the default)."""
    from pi_compact.pi.settings import load_settings

    loaded = load_settings(cwd)
    for layer in loaded.layers:
        if layer.scope == "global":
            value = layer.data.get("cacheWarming")
            if value in ("off", "streaming", "idle"):
                return value  # type: ignore[no-any-return]
    return "idle"


def prune_drafts(
    session: Path,
    settings: CheckOptions,
    *,
    boundary: Boundary,
    now_ms: int,
    cache_ttl_ms: int | None,
    warming_mode: WarmingMode | None,
    warming: Warming | None,
    prices: Prices,
    min_batch_tokens: int | None = None,
) -> PruneDraftsJSON:
    """The ``context_edit`` drafts the extension hands Pi at ``boundary``, when ``ops.prune_policy`` says the batch
    costs no prompt cache now (``prune`` false and no entries otherwise), with the figures behind the decision.
    The batch is ``picompact prune --dry-run``'s for the same branch and settings."""
    from pi_compact.checkpoint.verbatim.mode import default_cap
    from pi_compact.ops.check import check_session, settings_cwd
    from pi_compact.ops.prune_policy import Situation, decide, min_batch, return_probability
    from pi_compact.session.load import load_session

    loaded = load_session(session)
    check = check_session(loaded, settings)
    if warming_mode is None:
        warming_mode = cache_warming_mode(settings_cwd(loaded))
    plan = prune_plan(check)
    when, prompt = last_request(check.branch)
    growth = check.forecast.growth.per_turn if check.forecast is not None else None
    shape = run_shape(check.branch)
    keep = check.keep_recent_tokens
    situation = Situation(
        boundary=boundary,
        now_ms=now_ms,
        last_request_ms=when,
        cache_ttl_ms=cache_ttl_ms,
        warming_mode=warming_mode,
        warming=warming,
        prompt_tokens=prompt,
        context_tokens=check.plan.context.tokens,
        tokens_after=plan.tokens_after,
        tokens_freed=sum(p.tokens - p.stub_tokens for p in plan.pruned),
        threshold=check.threshold if check.enabled else None,
        growth_per_turn=growth,
        prices=prices,
        min_batch_tokens=min_batch(check.context_window, min_batch_tokens),
        return_probability=return_probability(shape["gapsMs"], cache_ttl_ms),
        compacted_tokens=keep + default_cap(keep),
        settle_growth_share=shape["settleShare"],
    )
    decision = decide(situation)
    drafts: list[PruneDraftJSON] = [
        {"type": "context_edit", "targetId": e["targetId"], "replacement": e["replacement"]} for e in plan.entries
    ]
    return {
        "prune": decision.prune,
        "reason": decision.reason,
        "detail": decision.detail,
        "boundary": boundary,
        "entries": drafts if decision.prune else [],
        "tokensBefore": check.plan.context.tokens,
        "tokensAfter": plan.tokens_after,
        "tokensFreed": plan.tokens_freed,
        "tokensRemoved": situation.tokens_freed,
        "pruned": [dict(p.to_json()) for p in plan.pruned],
        "threshold": situation.threshold,
        "lastRequestMs": when,
        "promptTokens": prompt,
        "returnProbability": situation.return_probability,
        "settleShare": situation.settle_growth_share,
        "decision": decision.to_json(),
    }
