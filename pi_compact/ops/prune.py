"""``prune``: replace old tool outputs in the model's context with short stubs, through Pi's ``context_edit``.

Between compactions most of a coding session's context is old tool output the agent has already acted on. Pi 1.6
can replace one entry's content in the model's context with a ``context_edit`` entry (append-only, relative to the
branch: the raw entry stays in the file). ``prune_session`` plans which tool results to replace and appends one
edit per result, each replacing the content with a stub (``checkpoint.prune_stub``): the call's signature, its
size, ok or error, the facts the checkpoint would keep of it, and how to get the output back.

What is never pruned:

- the recent part of the context: the newest entries holding ``keep_recent_tokens`` (Pi's keepRecentTokens by
  default), counted as Pi counts them when it picks a cut point;
- a result smaller than ``min_tokens``, or whose stub would not be smaller;
- anything but a tool result: user messages, assistant prose and calls, custom messages, summaries;
- the latest read of a file that was edited (or written) after it: what the agent's edits apply to;
- a result Pi already edited (replaced or omitted), prune stubs included: so a second run appends nothing;
- the startup reads a verbatim checkpoint retains (``checkpoint.startup_reads``): reads, in the first turn, of a
  file that an instruction file names.

The entries are built exactly as Pi's ``appendContextEdit`` writes them (key order, a replacement's string content
normalised to one text block for a tool result), chained from the branch leaf, and reach the file through the one
writer ``compact`` uses (``ops.compact.write_lines``: locked, checked append; a torn last line is refused without
``repair``; a v1/v2 file rewritten in v3 form with a backup). A dry run returns the same entries and lines without
writing: what the Pi extension hands to Pi as ``context_edit`` drafts.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from pi_compact.checkpoint.entry import (
    Clock,
    IdGenerator,
    iso_timestamp,
    random_id,
    serialize_entries,
    system_clock,
)
from pi_compact.checkpoint.prune_stub import stub_floor, stub_text
from pi_compact.checkpoint.readtool import read_args, resolve_path
from pi_compact.errors import OptionError, SessionError
from pi_compact.ops.check import CheckOptions, CheckResult, check_session
from pi_compact.pi.messages import entry_messages
from pi_compact.pi.projection import (
    ProjectedEntry,
    Projection,
    build_projection,
    context_estimate,
    context_tokens,
    unloadable_edits,
)
from pi_compact.pi.tokens import estimate_tokens, estimate_with_text
from pi_compact.session import get_branch, load_session
from pi_compact.session.entries import JsonDict
from pi_compact.session.lock import DEFAULT_LOCK_TIMEOUT
from pi_compact.session.mutations import mutation_facts, mutation_path
from pi_compact.session.write import DEFAULT_TORN_QUIET, WriteResult, torn_line_message

if TYPE_CHECKING:
    from pi_compact.ops.forecast import Forecast

DEFAULT_MIN_TOKENS = 500  # a result smaller than this is not worth a stub (and a cache break)

Status = Literal["written", "rewritten", "dry-run", "nothing"]
Protection = Literal["recent", "small", "edited", "read-before-edit", "startup-read", "no-gain"]


@dataclass(frozen=True)
class PruneOptions:
    """What to protect and how to write; ``check`` holds the settings flags (``keep_recent_tokens`` among them,
    None: Pi's keepRecentTokens)."""

    check: CheckOptions = field(default_factory=CheckOptions)
    min_tokens: int = DEFAULT_MIN_TOKENS
    context_files: tuple[str, ...] = ()  # extra instruction files naming startup reads (as compact's)
    dry_run: bool = False
    backup: bool = True
    repair: bool = False
    clock: Clock = system_clock
    new_id: IdGenerator = random_id
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT
    retries: int = 1
    torn_quiet: float = DEFAULT_TORN_QUIET
    in_lock: Callable[[], None] | None = None

    def __post_init__(self) -> None:
        if isinstance(self.min_tokens, bool) or not isinstance(self.min_tokens, int) or self.min_tokens < 0:
            raise OptionError(("min_tokens",), f"must be a non-negative integer (got {self.min_tokens!r})")
        if self.retries < 0:
            raise OptionError(("retries",), "must not be negative")
        if not 0 <= self.torn_quiet <= 3600:
            raise OptionError(("torn_quiet",), f"must be between 0 and 3600 seconds (got {self.torn_quiet!r})")


@dataclass(frozen=True)
class PrunedOutput:
    """One tool result the plan replaces: its entry, the tool, its size and its stub's, in Pi's tokens."""

    entry_id: str
    tool: str
    tokens: int
    stub_tokens: int
    outcome: str  # ok, error or unknown
    stub: str

    def to_json(self) -> PrunedJSON:
        return {"id": self.entry_id, "tool": self.tool, "tokens": self.tokens}


class PrunedJSON(TypedDict):
    id: str
    tool: str
    tokens: int


class PruneJSON(TypedDict):
    """``PruneResult.to_json()``: the ``prune --json`` document (docs/json.md)."""

    session: str
    entries: list[JsonDict]
    tokens_before: int
    tokens_after: int
    tokens_freed: int
    pruned: list[PrunedJSON]
    status: str
    keep_recent_tokens: int
    min_tokens: int
    protected: dict[str, int]
    threshold: int
    turns_bought: int | None
    bytes_written: int
    warnings: list[str]


@dataclass
class PrunePlan:
    """The outputs to replace and the entries that replace them, with Pi's context estimate before and after."""

    check: CheckResult
    pruned: list[PrunedOutput]
    entries: list[JsonDict]
    lines: list[str]
    tokens_before: int
    tokens_after: int
    protected: dict[str, int]  # how many tool results each protection kept (for the report)
    keep_recent_tokens: int
    min_tokens: int
    forecast_before: Forecast | None = None
    forecast_after: Forecast | None = None

    @property
    def tokens_freed(self) -> int:
        return self.tokens_before - self.tokens_after

    @property
    def turns_bought(self) -> int | None:
        """How many more replies fit below the threshold after pruning, at the recent growth (None: no forecast)."""
        before = self.forecast_before.turns if self.forecast_before is not None else None
        after = self.forecast_after.turns if self.forecast_after is not None else None
        if before is None or after is None:
            return None
        return after - before

    def summary_json(self) -> PruneSummaryJSON:
        """The ``prune`` field of ``check --json``: what pruning would free and the turns it buys."""
        after = self.forecast_after.turns if self.forecast_after is not None else None
        return {
            "outputs": len(self.pruned),
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "tokens_freed": self.tokens_freed,
            "freed_percent": freed_percent(self.tokens_freed, self.tokens_before),
            "turns_after": after,
            "turns_bought": self.turns_bought,
            "keep_recent_tokens": self.keep_recent_tokens,
            "min_tokens": self.min_tokens,
        }


class PruneSummaryJSON(TypedDict):
    outputs: int
    tokens_before: int
    tokens_after: int
    tokens_freed: int
    freed_percent: float
    turns_after: int | None
    turns_bought: int | None
    keep_recent_tokens: int
    min_tokens: int


@dataclass
class PruneResult:
    """What ``prune`` did (or, for a dry run, would do)."""

    status: Status
    path: Path
    plan: PrunePlan
    write: WriteResult | None = None
    attempts: int = 1
    warnings: list[str] = field(default_factory=list)

    @property
    def written(self) -> bool:
        return self.status in ("written", "rewritten")

    def to_json(self) -> PruneJSON:
        plan = self.plan
        return {
            "session": str(self.path),
            "entries": plan.entries,
            "tokens_before": plan.tokens_before,
            "tokens_after": plan.tokens_after,
            "tokens_freed": plan.tokens_freed,
            "pruned": [p.to_json() for p in plan.pruned],
            "status": self.status,
            "keep_recent_tokens": plan.keep_recent_tokens,
            "min_tokens": plan.min_tokens,
            "protected": plan.protected,
            "threshold": plan.check.threshold,
            "turns_bought": plan.turns_bought,
            "bytes_written": self.write.bytes_written if self.write else 0,
            "warnings": self.warnings,
        }


def freed_percent(freed: int, before: int) -> float:
    """``freed`` as a share of ``before``, one decimal; 0 when that is no finite number (a context of 1e400 tokens,
    as a usage of Infinity gives it, frees no meaningful share)."""
    try:
        share = 100.0 * freed / before if before > 0 else 0.0
    except (OverflowError, ZeroDivisionError):
        return 0.0
    return round(share, 1) if math.isfinite(share) else 0.0


# ---------------------------------------------------------------------------------------------------------------
# Planning


def recent_boundary(entries: Sequence[ProjectedEntry], keep_recent_tokens: int) -> int:
    """The index of the first entry of the recent part: walked from the newest back, the entry at which the
    tokens counted reach ``keep_recent_tokens`` is the oldest one kept (as Pi's cut point counts); 0 when the
    whole context is within the budget."""
    total = 0
    for i in range(len(entries) - 1, -1, -1):
        pe = entries[i]
        if pe.facts is not None:  # one message, never a system one
            total += pe.tokens
        else:
            total += sum(estimate_tokens(m) for m in pe.messages if m.get("role") != "system")
        if total >= keep_recent_tokens:
            return i
    return 0


class _Call:
    __slots__ = ("arguments", "name")

    def __init__(self, name: Any, arguments: Any) -> None:
        self.name = name
        self.arguments = arguments


def _calls_and_reads_before_edits(projection: Projection, cwd: str) -> tuple[dict[str, _Call], set[str]]:
    """In one walk of the context: the tool call each tool result answers, by the result's entry id (the oldest
    unanswered call of the same id before it, as the checkpoint pairs them); and the latest read of each file
    when the file is edited or written after it (by a call or a nested call)."""
    pending: dict[str, list[_Call]] = {}
    calls: dict[str, _Call] = {}
    latest: dict[str, str] = {}  # path -> entry id of its latest read
    edited_after: dict[str, bool] = {}
    for pe in projection.entries:
        # an entry no edit touches contributes its own messages (a compaction after the first contributes none)
        messages = pe.messages if pe.edit is None and pe.entry.type != "compaction" else entry_messages(pe.entry)
        for message in messages:
            role = message.get("role")
            if role == "assistant":  # its tool calls, and the files they modify (its ``mutation_facts``)
                content = message.get("content")
                if not isinstance(content, list):
                    continue
                for block in content:  # the blocks ``tool_call_blocks`` reads, without their indexes
                    if not (isinstance(block, dict) and block.get("type") == "toolCall" and "name" in block):
                        continue
                    name, arguments = block.get("name"), block.get("arguments")
                    if isinstance(block.get("id"), str):
                        pending.setdefault(block["id"], []).append(_Call(name, arguments))
                    path = mutation_path(name, arguments)
                    if path is not None and (key := resolve_path(path, cwd)) in latest:
                        edited_after[key] = True
                continue
            if role != "toolResult":
                continue
            queue = pending.get(message.get("toolCallId"))  # type: ignore[arg-type]
            if queue:
                calls[pe.entry.id] = queue.pop(0)
            facts = mutation_facts(message) if "nestedCalls" in message else None  # its nested calls' modifications
            if facts is not None:
                for _, path in facts[1]:
                    key = resolve_path(path, cwd)
                    if key in latest:
                        edited_after[key] = True
            if message.get("isError"):
                continue
            call = calls.get(pe.entry.id)
            if call is None or call.name != "read" or mutation_path(call.name, call.arguments) is not None:
                continue
            args = read_args(call.arguments)
            if args is not None:
                key = resolve_path(args.path, cwd)
                latest[key] = pe.entry.id
                edited_after[key] = False
    return calls, {entry_id for key, entry_id in latest.items() if edited_after.get(key)}


def _startup_reads(check: CheckResult, context_files: Sequence[str]) -> set[str]:
    from pi_compact.checkpoint.context_files import context_files_for
    from pi_compact.checkpoint.startup_reads import startup_read_ids

    cwd = check.session.cwd
    files = context_files_for(cwd, extra=list(context_files))
    return startup_read_ids(check.branch.entries, files, cwd)


def plan_prune(check: CheckResult, options: PruneOptions | None = None, *, summary_only: bool = False) -> PrunePlan:
    """Which tool results to replace, and the ``context_edit`` entries that replace them (nothing written).

    Pi estimates a context whose last reply came before a context edit (chars/4 of every message) instead of taking
    that reply's usage; where that estimate with the stubs in place is not below what Pi counts now, pruning would
    only bring the compaction closer, and nothing is pruned (every candidate counted as ``no-gain``).
    ``summary_only`` (``check``'s prune row): the same outputs and counts, the figure after reckoned from the
    messages' estimates without building the entries or the context after them.
    """
    opts = options or PruneOptions()
    projection = check.plan.projection
    cwd = check.session.cwd or ""
    keep = check.keep_recent_tokens
    boundary = recent_boundary(projection.entries, keep)
    startup = _startup_reads(check, opts.context_files)
    if summary_only and not _may_gain(check, boundary, startup, opts.min_tokens):
        calls: dict[str, _Call] = {}
        before_edits: set[str] = set()  # (not needed: no output would be pruned whichever they protect)
    else:
        calls, before_edits = _calls_and_reads_before_edits(projection, cwd)
    protected = {name: 0 for name in ("recent", "small", "edited", "read-before-edit", "startup-read", "no-gain")}
    candidates: list[ProjectedEntry] = []
    for index, pe in enumerate(projection.entries):
        entry = pe.entry
        if entry.type != "message" or entry.role != "toolResult":
            continue
        why: Protection | None = None
        if pe.edit is not None:
            why = "edited"
        elif index >= boundary:
            why = "recent"
        elif pe.tokens < opts.min_tokens or (pe.facts is None and not pe.messages):
            why = "small"
        elif entry.id in before_edits:
            why = "read-before-edit"
        elif entry.id in startup:
            why = "startup-read"
        if why is not None:
            protected[why] += 1
        else:
            candidates.append(pe)
    tokens_before = check.plan.context.tokens
    estimate = context_estimate(projection) if candidates else 0
    pruned: list[PrunedOutput] = []
    if not candidates or estimate - most_freed(candidates) < tokens_before:  # else no stubs could gain
        for pe in candidates:
            item = _pruned_output(pe, calls.get(pe.entry.id), cwd)
            if item is None:
                protected["no-gain"] += 1
            else:
                pruned.append(item)
    else:
        protected["no-gain"] += len(candidates)
    tokens_after = tokens_before
    if pruned:
        tokens_after = estimate - sum(p.tokens for p in pruned) + sum(p.stub_tokens for p in pruned)
        if tokens_after >= tokens_before:
            protected["no-gain"] += len(pruned)
            pruned, tokens_after = [], tokens_before
    entries = [] if summary_only else edit_entries(check, pruned, opts.clock, opts.new_id)
    if entries:
        tokens_after = context_tokens(_projection_after(check, entries)).tokens
    from pi_compact.ops.forecast import Forecast, context_growth

    growth = context_growth(check.branch)
    return PrunePlan(
        check=check,
        pruned=pruned,
        entries=entries,
        lines=serialize_entries(entries),
        tokens_before=tokens_before,
        tokens_after=tokens_after,
        protected=protected,
        keep_recent_tokens=keep,
        min_tokens=opts.min_tokens,
        forecast_before=Forecast(growth, check.plan.context.tokens, check.threshold),
        forecast_after=Forecast(growth, tokens_after, check.threshold),
    )


def edit_entries(
    check: CheckResult, pruned: Sequence[PrunedOutput], clock: Clock, new_id: IdGenerator
) -> list[JsonDict]:
    """One ``context_edit`` per pruned output, in the key order of Pi's ``appendContextEdit``, chained from the
    branch leaf; a tool result's replacement is one text block (what Pi normalises a string to)."""
    if not pruned:
        return []
    timestamp = iso_timestamp(clock())
    taken: set[str] = set(check.session.by_id)
    leaf = check.branch.leaf
    parent = leaf.id if leaf is not None else None
    out: list[JsonDict] = []
    for item in pruned:
        entry_id = new_id(taken)
        taken.add(entry_id)
        out.append(
            {
                "type": "context_edit",
                "id": entry_id,
                "parentId": parent,
                "timestamp": timestamp,
                "targetId": item.entry_id,
                "replacement": {"content": [{"type": "text", "text": item.stub}]},
            }
        )
        parent = entry_id
    return out


def estimate_with_stubs(projection: Projection, pruned: Sequence[PrunedOutput]) -> int:
    """Pi's estimate of the context once the stubs replace the pruned outputs: a context edit after the last reply
    makes that reply's usage stale, so every message is estimated (the current system message once)."""
    return context_estimate(projection) - sum(p.tokens for p in pruned) + sum(p.stub_tokens for p in pruned)


def _may_gain(check: CheckResult, boundary: int, startup: set[str], min_tokens: int) -> bool:
    """Whether stubs could gain with every old output a candidate that no read-before-edit protects: when not, no
    subset of those candidates gains either, and the walk that finds the reads and calls can be left out (on a
    long span never compacted it would read every body)."""
    candidates = [
        pe
        for index, pe in enumerate(check.plan.projection.entries[:boundary])
        if pe.entry.type == "message"
        and pe.entry.role == "toolResult"
        and pe.edit is None
        and index < boundary
        and pe.tokens >= min_tokens
        and (pe.facts is not None or pe.messages)
        and pe.entry.id not in startup
    ]
    if not candidates:
        return False
    return context_estimate(check.plan.projection) - most_freed(candidates) < check.plan.context.tokens


def most_freed(candidates: Sequence[ProjectedEntry]) -> int:
    """An upper bound of the tokens stubs of ``candidates`` can free: each output's tokens less those of the
    shortest stub it can have (``stub_floor``), when that is a gain. When the estimate less this is not below what
    Pi counts now, no set of stubs gains and none needs building."""
    return sum(max(0, pe.tokens - math.ceil(stub_floor(pe.entry.id, pe.tokens) / 4)) for pe in candidates)


def _pruned_output(pe: ProjectedEntry, call: _Call | None, cwd: str) -> PrunedOutput | None:
    """The stub of one candidate tool result, None when it would not be smaller than the output."""
    entry, message = pe.entry, pe.messages[0]
    tool = call.name if call is not None else message.get("toolName")
    arguments = call.arguments if call is not None else None
    outcome = "error" if message.get("isError") else "ok"
    stub = stub_text(entry.id, tool, arguments, message, outcome, pe.tokens, cwd)
    stub_tokens = estimate_with_text(message, stub)
    if stub_tokens >= pe.tokens:
        return None
    name = tool if isinstance(tool, str) else str(message.get("toolName") or "unknown")
    return PrunedOutput(entry.id, name, pe.tokens, stub_tokens, outcome, stub)


def _projection_after(check: CheckResult, entries: list[JsonDict]) -> Projection:
    from pi_compact.ops.compact import session_after

    after, leaf = session_after(check, entries)
    return build_projection(get_branch(after, leaf))


# ---------------------------------------------------------------------------------------------------------------
# Orchestration


def refusal(check: CheckResult) -> SessionError | None:
    """Why Pi would not load the pruned session either: a context edit in view already has a replacement Pi cannot
    project (Pi throws building the context). None when pruning is safe to write."""
    where = str(check.session.path or "<session>")
    for diag in check.branch.diagnostics:
        if diag.code == "pi-throws":
            return SessionError(f"{diag.message}; nothing written", path=where, line=diag.line)
    bad = unloadable_edits(check.plan.projection)
    if not bad:
        return None
    edit = bad[0]
    return SessionError(
        f"Pi cannot resume this branch: context_edit {edit.id} replaces {edit.raw.get('targetId')} with something "
        "Pi cannot project (a replacement must be null or {content: string or array}; Pi throws 'content is not "
        "iterable'); nothing written (see picompact lint)",
        path=where,
        line=edit.line,
    )


def _prepare(p: Path, opts: PruneOptions, attempts: int) -> PruneResult:
    session = load_session(p, keep_bodies=True)
    check = check_session(session, opts.check)
    refused = refusal(check)
    if refused is not None:
        raise refused
    plan = plan_prune(check, opts)
    status: Status = "dry-run" if opts.dry_run else "nothing"
    result = PruneResult(status, p, plan, attempts=attempts)
    if session.torn_last_line and not opts.repair and opts.dry_run:
        result.warnings.append(torn_line_message(session))
    if plan.entries and plan.tokens_after > check.threshold:
        result.warnings.append(
            f"after pruning the context ({plan.tokens_after:,} tokens) is still over the threshold "
            f"({check.threshold:,}): Pi will compact at its next check"
        )
    return result


def prune_session(path: str | os.PathLike[str], options: PruneOptions | None = None) -> PruneResult:
    """Prune the session at ``path``: append the planned ``context_edit`` entries (v3; a v1/v2 file is rewritten
    in v3 form with a backup), or, with ``dry_run``, return them without writing. With nothing to prune, nothing is
    written (status "nothing"), so a second run is a no-op.

    Raises SessionError (exit 2) for a torn last line without ``repair``, ConcurrentWriteError (exit 3) when the
    file keeps changing underneath or stays locked; nothing is written in either case.
    """
    from pi_compact.ops.compact import CompactOptions, retry_on_change, write_lines

    opts = options or PruneOptions()
    p = Path(path)
    writer = CompactOptions(
        backup=opts.backup,
        repair=opts.repair,
        lock_timeout=opts.lock_timeout,
        torn_quiet=opts.torn_quiet,
        in_lock=opts.in_lock,
    )

    def attempt(attempts: int) -> PruneResult:
        result = _prepare(p, opts, attempts)
        if opts.dry_run or not result.plan.entries:
            return result
        result.write, status = write_lines(p, result.plan.check.session, result.plan.lines, writer)
        result.status = "rewritten" if status == "rewritten" else "written"
        return result

    return retry_on_change(p, opts.retries, attempt)
