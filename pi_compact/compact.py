"""``compact``: plan where Pi would cut, build a checkpoint with a *mode*, and write it safely. No printing.

A mode is any callable ``(plan, context) -> checkpoint``, where the checkpoint has ``summary``, ``details``,
``reminder`` (or None), ``from_hook`` and ``usage`` (or None); ``verbatim_mode(...)`` builds one. Whatever the mode,
the entries come from the one builder (``checkpoint.entry``) and reach the file through the one writer
(``session.write``), so both modes write exactly the same shape, the same safe way. Earlier re-orientation
messages still in the kept tail are omitted with context edits: a new checkpoint replaces them.

If someone appends to the session between reading and writing (Pi, say), nothing is written: the file is read
again, the compaction planned again and the mode run again, once. A mode that is expensive to run (an LLM call)
should remember its answer for an unchanged summarised span itself.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pi_compact.check import CheckOptions, CheckResult, analyze
from pi_compact.checkpoint.entry import (
    Clock,
    IdGenerator,
    build_compaction_entries,
    entries_as_session_entries,
    random_id,
    serialize_entries,
    system_clock,
)
from pi_compact.errors import (
    CompactionRefusedError,
    ConcurrentWriteError,
    NothingToCompactError,
    SessionError,
    UsageError,
)
from pi_compact.messages import current_system_message
from pi_compact.plan import CompactionPlan
from pi_compact.projection import build_projection, context_tokens
from pi_compact.session import Session, get_branch, load_session
from pi_compact.session.model import JsonDict
from pi_compact.session.write import (
    DEFAULT_LOCK_TIMEOUT,
    SessionChangedError,
    WriteResult,
    append_entries,
    migrated_lines,
    rewrite_session,
    settle_torn_line,
    torn_line_message,
    torn_line_number,
    write_copy,
)
from pi_compact.tokens import estimate_tokens

LOW_GAIN_PERCENT = 20.0

Status = Literal["written", "rewritten", "copied", "dry-run", "not-needed"]


@dataclass(frozen=True)
class CheckpointResult:
    """What a mode hands back: the compaction entry's content, and a few facts for the report."""

    summary: str
    details: Any
    reminder: str | None
    from_hook: bool
    usage: JsonDict | None = None
    tokens: int | None = None  # the mode's own size estimate of the checkpoint, if it has one
    trimmed: Any = False  # what the size cap removed (mode-specific; falsy when nothing)
    warnings: tuple[str, ...] = ()
    file_evidence: Any = None  # the annotated file lists, for --json (verbatim mode)


@dataclass(frozen=True)
class ModeContext:
    """What a mode may need beyond the plan: the session and the resolved settings."""

    session: Session
    check: CheckResult

    @property
    def session_path(self) -> Path | None:
        return self.session.path


Mode = Callable[[CompactionPlan, ModeContext], Any]


def as_checkpoint(value: Any) -> CheckpointResult:
    """Accept any checkpoint-like object (a mode's own dataclass) as a CheckpointResult."""
    if isinstance(value, CheckpointResult):
        return value
    return CheckpointResult(
        summary=value.summary,
        details=getattr(value, "details", None),
        reminder=getattr(value, "reminder", None),
        from_hook=bool(getattr(value, "from_hook", True)),
        usage=getattr(value, "usage", None),
        tokens=getattr(value, "tokens", None),
        trimmed=getattr(value, "trimmed", False),
        warnings=tuple(getattr(value, "warnings", ()) or ()),
    )


# ---------------------------------------------------------------------------------------------------------------
# The verbatim mode


def default_cap(keep_recent_tokens: int) -> int:
    """Half of keepRecentTokens: checkpoint + kept tail stay well below the threshold round after round."""
    return keep_recent_tokens // 2


def lookup_configured(session_model: tuple[str, str] | None, model: str | None = None) -> bool:
    """Whether ``picompact lookup SESSION "…"`` (with ``--model MODEL`` when given) would find a model and a key,
    exactly as that command decides it, so the checkpoint advertises it only when it would work."""
    from pi_compact.llm import choose_model, require_api_key

    try:
        require_api_key(choose_model(session_model, model, os.environ), os.environ)
        return True
    except Exception:  # an unreadable auth file, say: simply not advertised
        return False


def verbatim_mode(
    *,
    cap_tokens: int | None = None,
    no_cap: bool = False,
    context_files: Sequence[str | os.PathLike[str]] = (),
    lookup_available: bool | None = None,
    recovery_tools: bool | None = None,
) -> Mode:
    """The deterministic checkpoint (no model). ``cap_tokens`` None means the default cap (``picompact.cap`` in Pi's
    settings, else keepRecentTokens / 2); ``no_cap`` lifts it. ``recovery_tools`` None: advertise the Pi
    extension's tools when it is installed for the session's directory, else shell commands."""
    if no_cap and cap_tokens is not None:
        raise UsageError("--cap and --no-cap clash: give one of them")
    if cap_tokens is not None and cap_tokens < 0:
        raise UsageError(f"--cap must not be negative (got {cap_tokens})")

    def run(plan: CompactionPlan, ctx: ModeContext) -> CheckpointResult:
        from pi_compact.checkpoint.context_files import context_files_for
        from pi_compact.checkpoint.verbatim import VerbatimOptions, build_verbatim_checkpoint
        from pi_compact.pi.config import load_config, tools_installed

        config = load_config(ctx.session.cwd) if ctx.session.cwd else None
        cap: int | None
        if no_cap:
            cap = None
        elif cap_tokens is not None:
            cap = cap_tokens
        elif config is not None and (config.cap is not None or config.no_cap):
            cap = config.cap  # picompact.cap in Pi's settings (None for false: no cap)
        else:
            cap = default_cap(ctx.check.keep_recent_tokens)
        if recovery_tools is not None:
            tools = recovery_tools
        else:
            tools = bool(ctx.session.cwd) and tools_installed(ctx.session.cwd)
        lookup_model = config.lookup_model if tools and config is not None else None
        lookup = (
            lookup_available if lookup_available is not None else lookup_configured(plan.projection.model, lookup_model)
        )
        # The instruction files Pi would load for the session's cwd on this machine, then the user's.
        files = context_files_for(ctx.session.cwd, extra=[Path(f) for f in context_files])
        options = VerbatimOptions(
            # Absolute: the recovery commands run from the agent's shell, wherever that is.
            session_path=str(Path(ctx.session.path).absolute()) if ctx.session.path is not None else "SESSION",
            cap_tokens=cap,
            context_files=tuple(files),  # type: ignore[arg-type]
            lookup_available=lookup,
            recovery_tools=tools,
        )
        checkpoint = build_verbatim_checkpoint(plan, options)
        return CheckpointResult(
            summary=checkpoint.summary,
            details=checkpoint.details,
            reminder=checkpoint.reminder,
            from_hook=True,
            usage=None,
            tokens=getattr(checkpoint, "tokens", None),
            trimmed=getattr(checkpoint, "trimmed", False),
            warnings=tuple(getattr(checkpoint, "warnings", ()) or ()),
            file_evidence=getattr(checkpoint, "evidence", None),
        )

    run.mode_name = "verbatim"  # type: ignore[attr-defined]
    return run


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

    def validate(self) -> None:
        if self.dry_run and self.output is not None:
            raise UsageError("--dry-run and --output clash: --output already leaves the session untouched")
        if self.retries < 0:
            raise UsageError("retries must not be negative")


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
        return 100.0 * self.freed_tokens / self.tokens_before if self.tokens_before > 0 else 0.0

    @property
    def over_threshold_after(self) -> bool:
        return self.tokens_after > self.threshold

    def to_json(self) -> dict[str, Any]:
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
    forecast: Any = None  # forecast.Forecast from the compacted context: the turns it buys

    @property
    def written(self) -> bool:
        return self.status in ("written", "rewritten")

    def to_json(self) -> dict[str, Any]:
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
            "trimmed": _jsonable(self.checkpoint.trimmed) if self.checkpoint else False,
            "attempts": self.attempts,
            "bytes_written": write.bytes_written if write else 0,
            "added_newline": bool(write and write.added_newline),
            "repaired_torn_line": bool(write and write.repaired_torn_line),
            "migrated_from_version": session.original_version if session.needs_migration else None,
            "backup": str(write.backup) if write and write.backup else None,
            "file_evidence": self.checkpoint.file_evidence if self.checkpoint else None,
            "entries": self.entries,
            "forecast": self.forecast.to_json() if self.forecast is not None else None,
            "warnings": self.warnings,
        }


def _jsonable(value: Any) -> Any:
    if isinstance(value, (bool, int, float, str)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    return str(value)


def compaction_stats(check: CheckResult, entries: list[JsonDict]) -> CompactStats:
    """Pi's numbers for the session as it will be: the new entries added in memory, projected, estimated."""
    session = check.session
    added = entries_as_session_entries(session, entries)
    after = Session(
        path=session.path,
        header=session.header,
        entries=[*session.entries, *added],
        by_id={**session.by_id, **{e.id: e for e in added}},
        original_version=session.original_version,
    )
    projection = build_projection(get_branch(after, added[-1].id))
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
    from pi_compact.checkpoint.entry import reorientation_type

    kind = reorientation_type()
    return [
        pe.entry.id
        for pe in plan.kept_entries()
        if pe.entry.type == "custom_message" and pe.messages and pe.entry.raw.get("customType") == kind
    ]


def _mode_name(mode: Mode) -> str:
    return str(getattr(mode, "mode_name", getattr(mode, "__name__", "custom")))


def compact_session(
    path: str | os.PathLike[str],
    mode: Mode,
    options: CompactOptions | None = None,
) -> CompactResult:
    """Compact the session at ``path`` with ``mode``: append (v3), rewrite (v1/v2), copy (``output``) or preview.

    Raises NothingToCompactError (exit 2) when Pi would not compact, ConcurrentWriteError (exit 3) when the file
    keeps changing underneath or stays locked; nothing is written in either case.
    """
    opts = options or CompactOptions()
    opts.validate()
    p = Path(path)
    attempts = 0
    while True:
        attempts += 1
        session = load_session(p)
        check = analyze(session, opts.check)
        plan = check.plan
        name = _mode_name(mode)
        if opts.if_needed and not check.should_compact:
            return CompactResult("not-needed", p, check, attempts=attempts, output=opts.output, mode=name)
        if not plan.can_compact:
            raise NothingToCompactError(f"nothing to compact: {plan.nothing_reason}", path=str(p))
        checkpoint = as_checkpoint(mode(plan, ModeContext(session, check)))
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
        from pi_compact.forecast import compaction_forecast

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
        if stats.freed_tokens <= 0 and not opts.dry_run:
            raise NothingToCompactError(f"nothing written: {no_gain_message(stats)}", path=str(p))
        if refusal is not None and not opts.dry_run and not opts.force:
            raise CompactionRefusedError(f"nothing written: {refusal}", path=str(p))
        try:
            quiet = None
            if session.torn_last_line and not opts.dry_run:
                quiet = settle_torn_line(p, session)  # still being written: SessionChangedError, re-read, retry
            if session.torn_last_line and not opts.repair:
                if opts.dry_run:
                    result.warnings.append(torn_line_message(session))
                else:
                    message = torn_line_message(session, quiet)
                    raise SessionError(message, path=str(p), line=torn_line_number(session))
            if opts.dry_run:
                return result
            if opts.output is not None:
                result.write = write_copy(opts.output, session, lines, repair=opts.repair)
                result.status = "copied"
            elif session.needs_migration:
                result.write = rewrite_session(
                    p, migrated_lines(session) + lines, opts.backup, expected=session, lock_timeout=opts.lock_timeout
                )
                result.status = "rewritten"
            else:
                result.write = append_entries(p, session, lines, repair=opts.repair, lock_timeout=opts.lock_timeout)
                result.status = "written"
            return result
        except SessionChangedError as exc:
            if attempts > opts.retries:
                raise ConcurrentWriteError(
                    f"{exc.message}, again after re-reading it; nothing was written (try again when the session "
                    "is idle)",
                    path=str(p),
                ) from None
