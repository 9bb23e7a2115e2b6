"""``compact``: plan where Pi would cut, build a checkpoint with a *mode*, and write it safely. No printing.

A mode is a ``CheckpointMode`` (``pi_compact.checkpoint.mode``; ``get_mode("verbatim")``, ``get_mode("summary")``).
Whatever the mode, the entries come from the one builder (``checkpoint.entry``) and reach the file through the one
writer (``session.write``), so every mode writes exactly the same shape, the same safe way. Earlier
re-orientation messages still in the kept tail are omitted with context edits: a new checkpoint replaces them.

Two ways to get a compaction without writing it, which differ in what they run. ``compact_session`` with
``CompactOptions(dry_run=True)`` asks the mode for its ``preview``: the checkpoint itself when it costs nothing to
build (verbatim), else what building it would send (summary: the requests, never sent; no model is called).
``build_compaction`` asks the mode to ``build`` it in full (a summary mode calls its model) and returns the entries,
written nowhere: what the Pi extension hands to Pi, which appends them itself.

The checkpoint asked for by name, as the command line and the extension ask for it, is a ``CheckpointRequest``
(``ops.checkpoint_request``).

If someone appends to the session between reading and writing (Pi, say), nothing is written: the file is read
again, the compaction planned again and the mode run again, once. A mode that is expensive to run (an LLM call)
should remember its answer for an unchanged summarised span itself.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Literal, TypedDict, TypeVar

from pi_compact.checkpoint.entry import (
    Clock,
    IdGenerator,
    build_compaction_entries,
    entries_as_session_entries,
    random_id,
    reorientation_type,
    serialize_entries,
    system_clock,
)
from pi_compact.checkpoint.mode import (
    CheckpointMode,
    CheckpointResult,
    ModeContext,
    ModePreview,
    ModePreviewJSON,
    NotNeededJSON,
)
from pi_compact.errors import (
    CompactionRefusedError,
    ConcurrentWriteError,
    NothingToCompactError,
    OptionError,
    SessionError,
)
from pi_compact.js import js_quotient
from pi_compact.ops.check import CheckOptions, CheckResult, check_session
from pi_compact.ops.forecast import ForecastJSON
from pi_compact.pi.messages import current_system_message
from pi_compact.pi.plan import CompactionPlan
from pi_compact.pi.projection import build_projection, context_tokens
from pi_compact.pi.tokens import estimate_tokens
from pi_compact.session import Session, get_branch, load_session
from pi_compact.session.entries import JsonDict
from pi_compact.session.lock import DEFAULT_LOCK_TIMEOUT, SessionChangedError
from pi_compact.session.write import (
    DEFAULT_TORN_QUIET,
    WriteResult,
    append_entries,
    migrated_lines,
    rewrite_session,
    settle_torn_line,
    torn_line_message,
    torn_line_number,
    write_copy,
)

if TYPE_CHECKING:
    from pi_compact.ops.coverage import CategoryScoreJSON  # coverage imports compact (a dry run's draft)
    from pi_compact.ops.forecast import Forecast

LOW_GAIN_PERCENT = 20.0

Status = Literal["written", "rewritten", "copied", "dry-run", "not-needed"]


# ---------------------------------------------------------------------------------------------------------------
# Orchestration


@dataclass(frozen=True)
class CompactOptions:
    """How to compact; the settings flags are those of ``check``."""

    check: CheckOptions = field(default_factory=CheckOptions)
    dry_run: bool = False
    output: str | None = None  # a path, or "-" for stdout
    if_needed: bool = False
    backup: bool = True
    repair: bool = False
    force: bool = False  # write even a compaction after which Pi would compact again at once
    clock: Clock = system_clock
    new_id: IdGenerator = random_id
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT
    retries: int = 1
    stdout: BinaryIO | None = None  # where ``output="-"`` writes the copy
    torn_quiet: float = DEFAULT_TORN_QUIET  # seconds an incomplete last line must stay unchanged to count as torn
    in_lock: Callable[[], None] | None = None  # called under the session's lock just before writing

    def __post_init__(self) -> None:
        if self.output == "-" and self.stdout is None and not self.dry_run:
            raise OptionError(("output", "stdout"), "clash: output '-' needs the stdout stream to write to")
        if self.dry_run and self.output is not None:
            raise OptionError(("dry_run", "output"), "clash: --output already leaves the session untouched")
        if self.retries < 0:
            raise OptionError(("retries",), "must not be negative")
        if not 0 <= self.torn_quiet <= 3600:
            raise OptionError(("torn_quiet",), f"must be between 0 and 3600 seconds (got {self.torn_quiet!r})")


# ---------------------------------------------------------------------------------------------------------------
# The checkpoint asked for


# Each mode's own fields of ``CheckpointRequest``, in the order a message names them.
class CompactStatsJSON(TypedDict):
    """``CompactStats.to_json()``: Pi's context estimate before and after, its parts, and what was freed."""

    tokens_before: int
    tokens_after: int
    checkpoint_tokens: int
    reminder_tokens: int
    system_tokens: int
    kept_tokens: int
    freed_tokens: int
    freed_percent: float
    context_window: int
    threshold: int
    over_threshold_after: bool


@dataclass(frozen=True)
class CompactStats:
    """Pi's context estimate before and after, split into its parts."""

    tokens_before: int
    tokens_after: int
    checkpoint_tokens: int  # the compaction summary as the model gets it
    reminder_tokens: int  # the re-orientation message
    system_tokens: int  # the replayed system prompt and tools
    kept_tokens: int  # the kept tail (and anything after it)
    context_window: int
    threshold: int

    @property
    def freed_tokens(self) -> int:
        return self.tokens_before - self.tokens_after

    @property
    def freed_percent(self) -> float:
        return js_quotient(100 * self.freed_tokens, self.tokens_before) if self.tokens_before > 0 else 0.0

    @property
    def over_threshold_after(self) -> bool:
        return self.tokens_after > self.threshold

    def to_json(self) -> CompactStatsJSON:
        return {
            "tokens_before": self.tokens_before,
            "tokens_after": self.tokens_after,
            "checkpoint_tokens": self.checkpoint_tokens,
            "reminder_tokens": self.reminder_tokens,
            "system_tokens": self.system_tokens,
            "kept_tokens": self.kept_tokens,
            "freed_tokens": self.freed_tokens,
            "freed_percent": round(self.freed_percent, 1),
            "context_window": self.context_window,
            "threshold": self.threshold,
            "over_threshold_after": self.over_threshold_after,
        }


class CompactJSON(TypedDict):
    """``CompactResult.compaction_json()``: the ``compact --json`` document of a compaction (written, copied or
    drafted by a dry run) or of one not needed."""

    status: str
    mode: str
    session: str
    output: str | None
    should_compact: bool
    leaf_id: str | None
    compaction_id: str | None
    reminder_id: str | None
    omitted_reminder_ids: list[str]
    first_kept_entry_id: str | None
    is_split_turn: bool
    stats: CompactStatsJSON | None
    trimmed: bool
    attempts: int
    bytes_written: int
    added_newline: bool
    repaired_torn_line: bool
    migrated_from_version: int | None
    backup: str | None
    file_evidence: dict[str, Any] | None
    entries: list[JsonDict]
    forecast: ForecastJSON | None
    coverage: dict[str, CategoryScoreJSON] | None
    warnings: list[str]


@dataclass
class CompactResult:
    """What ``compact`` did (or, for a dry run, would do)."""

    status: Status
    path: Path
    check: CheckResult
    checkpoint: CheckpointResult | None = None
    entries: list[JsonDict] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    stats: CompactStats | None = None
    write: WriteResult | None = None
    attempts: int = 1
    warnings: list[str] = field(default_factory=list)
    output: str | None = None
    mode: str = "verbatim"
    forecast: Forecast | None = None  # from the compacted context: the turns it buys
    coverage: dict[str, CategoryScoreJSON] | None = None  # a dry run's coverage categories (drafted_coverage)
    preview: ModePreview | None = None  # a dry run of a mode whose checkpoint costs a model call: what it would send

    @property
    def written(self) -> bool:
        return self.status in ("written", "rewritten")

    def to_json(self) -> CompactJSON | ModePreviewJSON:
        """What ``compact --json`` prints of it: the preview of a dry run that previews (``ModePreview.to_json``),
        else the compaction (``compaction_json``)."""
        if self.preview is not None:
            return self.preview.to_json()
        return self.compaction_json()

    def not_needed_json(self) -> NotNeededJSON:
        """The short document of a dry run that would have previewed (``--mode summary --dry-run --if-needed``)
        when nothing needs compacting."""
        return {"status": self.status, "mode": self.mode, "session": str(self.path)}

    def compaction_json(self) -> CompactJSON:
        plan = self.check.plan
        compaction = self.entries[0] if self.entries else None
        reminder = next((e for e in self.entries if e["type"] == "custom_message"), None)
        write = self.write
        session = self.check.session
        return {
            "status": self.status,
            "mode": self.mode,
            "session": str(self.path),
            "output": self.output,
            "should_compact": self.check.should_compact,
            "leaf_id": self.check.branch.leaf.id if self.check.branch.leaf else None,
            "compaction_id": compaction["id"] if compaction else None,
            "reminder_id": reminder["id"] if reminder else None,
            "omitted_reminder_ids": [e["targetId"] for e in self.entries if e["type"] == "context_edit"],
            "first_kept_entry_id": compaction["firstKeptEntryId"] if compaction else None,
            "is_split_turn": bool(plan.cut.is_split_turn and plan.can_compact),
            "stats": self.stats.to_json() if self.stats else None,
            "trimmed": self.checkpoint.trimmed if self.checkpoint else False,
            "attempts": self.attempts,
            "bytes_written": write.bytes_written if write else 0,
            "added_newline": bool(write and write.added_newline),
            "repaired_torn_line": bool(write and write.repaired_torn_line),
            "migrated_from_version": session.original_version if session.needs_migration else None,
            "backup": str(write.backup) if write and write.backup else None,
            "file_evidence": self.checkpoint.file_evidence if self.checkpoint else None,
            "entries": self.entries,
            "forecast": self.forecast.to_json() if self.forecast is not None else None,
            "coverage": self.coverage,
            "warnings": self.warnings,
        }


def session_after(check: CheckResult, entries: list[JsonDict]) -> tuple[Session, str]:
    """The session as it will be, in memory: the new entries added; and the id of the last of them (the leaf)."""
    session = check.session
    added = entries_as_session_entries(session, entries)
    return session.extended(added), added[-1].id


def compaction_stats(check: CheckResult, entries: list[JsonDict]) -> CompactStats:
    """Pi's numbers for the session as it will be: the new entries added in memory, projected, estimated."""
    after, leaf = session_after(check, entries)
    projection = build_projection(get_branch(after, leaf))
    ctx = context_tokens(projection)
    ids = {e["id"] for e in entries}
    messages = projection.messages
    system = current_system_message(messages)
    system_tokens = estimate_tokens(system) if system is not None else 0
    checkpoint_tokens = reminder_tokens = 0
    for pe in projection.entries:
        if pe.entry.id not in ids:
            continue
        own = sum(estimate_tokens(m) for m in pe.messages if m.get("role") != "system")
        if pe.entry.type == "compaction":
            checkpoint_tokens += own
        else:
            reminder_tokens += own
    kept = max(ctx.tokens - system_tokens - checkpoint_tokens - reminder_tokens, 0)
    return CompactStats(
        tokens_before=check.plan.context.tokens,
        tokens_after=ctx.tokens,
        checkpoint_tokens=checkpoint_tokens,
        reminder_tokens=reminder_tokens,
        system_tokens=system_tokens,
        kept_tokens=kept,
        context_window=check.context_window,
        threshold=check.threshold,
    )


def no_gain_message(stats: CompactStats) -> str:
    return (
        f"this compaction would not shrink the context ({stats.tokens_before:,} -> {stats.tokens_after:,} tokens: "
        "the checkpoint is bigger than what it replaces); try a smaller --keep-recent-tokens or --cap"
    )


def gain_warnings(stats: CompactStats, keep_recent_tokens: int) -> list[str]:
    """Say so when the compaction would hardly help: Pi would compact again at once."""
    out: list[str] = []
    if stats.freed_tokens <= 0:
        out.append(no_gain_message(stats))
    elif stats.freed_percent < LOW_GAIN_PERCENT:
        out.append(
            f"this compaction frees only {stats.freed_percent:.0f}% of the context "
            f"({stats.tokens_before:,} -> {stats.tokens_after:,} tokens), so it would fire again soon; "
            f"try a smaller --keep-recent-tokens (now {keep_recent_tokens:,})"
        )
    if stats.over_threshold_after:
        out.append(
            f"after compaction the context ({stats.tokens_after:,} tokens) is still above the threshold "
            f"({stats.threshold:,}); try a smaller --keep-recent-tokens or --cap"
        )
    return out


def stale_reminders(plan: CompactionPlan) -> list[str]:
    """Earlier re-orientation messages still visible in the kept tail: the new checkpoint replaces them."""
    kind = reorientation_type()
    return [
        pe.entry.id
        for pe in plan.kept_entries()
        if pe.entry.type == "custom_message" and pe.messages and pe.entry.raw.get("customType") == kind
    ]


# How the mode is run: its ``build``, or its ``preview`` for a dry run.
_R = TypeVar("_R")

RunMode = Callable[[CompactionPlan, ModeContext], CheckpointResult | ModePreview]


def _prepare(p: Path, name: str, run: RunMode, opts: CompactOptions, attempts: int) -> CompactResult:
    """Read, check and plan; ``run`` the mode called ``name``; the entries and their figures."""
    session = load_session(p, keep_bodies=True)  # the checkpoint reads every entry: parse each line once
    check = check_session(session, opts.check)
    plan = check.plan
    if opts.if_needed and not check.should_compact:
        return CompactResult("not-needed", p, check, attempts=attempts, output=opts.output, mode=name)
    if not plan.can_compact:
        raise NothingToCompactError(f"nothing to compact: {plan.nothing_reason}", path=str(p))
    ctx = check.mode_context()
    built = run(plan, ctx)
    if not isinstance(built, CheckpointResult):
        result = CompactResult("dry-run", p, check, attempts=attempts, output=opts.output, mode=name, preview=built)
        if session.torn_last_line and not opts.repair:
            result.warnings.append(torn_line_message(session))
        return result
    checkpoint = built
    entries = build_compaction_entries(
        session,
        check.branch,
        summary=checkpoint.summary,
        first_kept_entry_id=plan.first_kept.id if plan.first_kept is not None else None,
        tokens_before=plan.context.tokens,
        details=checkpoint.details,
        from_hook=checkpoint.from_hook,
        usage=checkpoint.usage,
        reminder=checkpoint.reminder,
        clock=opts.clock,
        new_id=opts.new_id,
        projection=plan.projection,
        omit_entry_ids=stale_reminders(plan),
    )
    lines = serialize_entries(entries)
    stats = compaction_stats(check, entries)
    warnings = [*checkpoint.warnings, *gain_warnings(stats, check.keep_recent_tokens)]
    from pi_compact.ops.forecast import compaction_forecast

    forecast, forecast_warnings, refusal = compaction_forecast(
        check.branch,
        stats.tokens_after,
        stats.threshold,
        check.keep_recent_tokens,
        mode=name,
        dry_run=opts.dry_run,
        force=opts.force,
    )
    warnings += forecast_warnings
    result = CompactResult(
        "dry-run",
        p,
        check,
        checkpoint=checkpoint,
        entries=entries,
        lines=lines,
        stats=stats,
        attempts=attempts,
        warnings=warnings,
        output=opts.output,
        mode=name,
        forecast=forecast,
    )
    if not opts.dry_run:
        if stats.freed_tokens <= 0:
            raise NothingToCompactError(f"nothing written: {no_gain_message(stats)}", path=str(p))
        if refusal is not None and not opts.force:
            raise CompactionRefusedError(f"nothing written: {refusal}", path=str(p))
    elif session.torn_last_line and not opts.repair:
        result.warnings.append(torn_line_message(session))
    return result


def build_compaction(
    path: str | os.PathLike[str], mode: CheckpointMode, options: CompactOptions | None = None
) -> CompactResult:
    """The compaction ``compact_session`` would write, built in full (``mode.build``: a summary mode calls its
    model) and written nowhere: what the Pi extension hands to Pi, which appends it itself. A dry run, by contrast,
    shows the mode's ``preview`` and calls no model. Reported as a dry run (status "dry-run", warnings and no
    refusal); ``options.output`` is ignored."""
    opts = replace(options or CompactOptions(), dry_run=True, output=None)
    return _prepare(Path(path), mode.name, mode.build, opts, 1)


def write_lines(
    p: Path, session: Session, lines: list[str], opts: CompactOptions
) -> tuple[WriteResult, Literal["written", "rewritten", "copied"]]:
    """Write the new lines the one safe way: appended under the lock after checking the file is still exactly
    ``session`` (v3), the whole file rewritten in v3 form with a backup (v1/v2), or a copy (``opts.output``).
    A torn last line is waited on (``opts.torn_quiet``) and refused without ``opts.repair``. Raises
    SessionChangedError (nothing written) when the file changed since it was read: the caller reads it again."""
    if session.torn_last_line:
        # Still being written: SessionChangedError, re-read, retry.
        quiet = settle_torn_line(p, session, opts.torn_quiet)
        if not opts.repair:
            message = torn_line_message(session, quiet)
            raise SessionError(message, path=str(p), line=torn_line_number(session))
    if opts.output is not None:
        return write_copy(opts.output, session, lines, repair=opts.repair, stream=opts.stdout), "copied"
    if session.needs_migration:
        written = rewrite_session(
            p,
            migrated_lines(session) + lines,
            opts.backup,
            expected=session,
            lock_timeout=opts.lock_timeout,
            in_lock=opts.in_lock,
        )
        return written, "rewritten"
    written = append_entries(
        p, session, lines, repair=opts.repair, lock_timeout=opts.lock_timeout, in_lock=opts.in_lock
    )
    return written, "written"


def retry_on_change(p: Path, retries: int, attempt: Callable[[int], _R]) -> _R:
    """Run ``attempt`` (read the file, plan, write; given the attempt's number from 1) again each time the file
    changes under it (SessionChangedError: nothing was written), up to ``retries`` times more; then raise
    ConcurrentWriteError (exit 3)."""
    attempts = 0
    while True:
        attempts += 1
        try:
            return attempt(attempts)
        except SessionChangedError as exc:
            if attempts > retries:
                raise ConcurrentWriteError(
                    f"{exc.message}, again after re-reading it; nothing was written (try again when the session "
                    "is idle)",
                    path=str(p),
                ) from None


def compact_session(
    path: str | os.PathLike[str],
    mode: CheckpointMode,
    options: CompactOptions | None = None,
) -> CompactResult:
    """Compact the session at ``path`` with ``mode``: append (v3), rewrite (v1/v2), copy (``output``) or, with
    ``dry_run``, write nothing and return the mode's preview (a summary mode then sends nothing; ``build_compaction``
    builds it in full).

    Raises NothingToCompactError (exit 2) when Pi would not compact, ConcurrentWriteError (exit 3) when the file
    keeps changing underneath or stays locked; nothing is written in either case.
    """
    opts = options or CompactOptions()
    p = Path(path)

    def attempt(attempts: int) -> CompactResult:
        result = _prepare(p, mode.name, mode.preview if opts.dry_run else mode.build, opts, attempts)
        if opts.dry_run or result.status == "not-needed":
            return result
        result.write, result.status = write_lines(p, result.check.session, result.lines, opts)
        return result

    return retry_on_change(p, opts.retries, attempt)
