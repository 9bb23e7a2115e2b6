"""``check``: does this session need compacting, and where would Pi cut? Pure data, no printing."""

from __future__ import annotations

import gc
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

from pi_compact.errors import OptionError, SettingsError
from pi_compact.ops.forecast import ForecastJSON
from pi_compact.pi.messages import current_system_message
from pi_compact.pi.plan import CompactionPlan, plan_compaction, should_compact
from pi_compact.pi.projection import ProjectedEntry, build_projection
from pi_compact.pi.tokens import count_cl100k
from pi_compact.session import Branch, Session, get_branch, load_session
from pi_compact.session.entries import Diagnostic, DiagnosticJSON
from pi_compact.session.tree import no_leaf_reason

if TYPE_CHECKING:
    from pi_compact.checkpoint.mode import ModeContext
    from pi_compact.ops.forecast import Forecast

MAX_TOKENS_SETTING = 100_000_000  # a token setting above this is a typo, not a window


class CheckOptions:
    """Settings flags shared by ``check`` and ``compact``; None means "as Pi resolves it". A value out of range
    raises ``OptionError`` here, before any file is read."""

    __slots__ = ("context_window", "keep_recent_tokens", "leaf_id", "model", "reserve_tokens", "tokenizer")

    def __init__(
        self,
        context_window: int | None = None,
        model: str | None = None,  # PROVIDER/ID
        reserve_tokens: int | None = None,
        keep_recent_tokens: int | None = None,
        leaf_id: str | None = None,
        tokenizer: str = "pi",  # or "cl100k"
    ) -> None:
        self.context_window = context_window
        self.model = model
        self.reserve_tokens = reserve_tokens
        self.keep_recent_tokens = keep_recent_tokens
        self.leaf_id = leaf_id
        self.tokenizer = tokenizer
        window = context_window
        if window is not None and (isinstance(window, bool) or not isinstance(window, int) or window <= 0):
            raise OptionError(("context_window",), f"must be a positive integer, got {window!r}")
        for name in ("context_window", "reserve_tokens", "keep_recent_tokens"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise OptionError((name,), f"must not be negative (got {value})")
            if value is not None and value > MAX_TOKENS_SETTING:
                raise OptionError((name,), f"is absurdly large (got {value}; at most {MAX_TOKENS_SETTING})")
        if self.tokenizer not in ("pi", "cl100k"):
            raise OptionError(("tokenizer",), f"must be pi or cl100k (got {self.tokenizer!r})")

    def __repr__(self) -> str:
        return f"CheckOptions({', '.join(f'{name}={getattr(self, name)!r}' for name in self.__slots__)})"


# The TypedDicts on check's start-up path are declared in the call form, whose types are evaluated once: a class's
# string annotations would cost a compile each (0.8 ms for check's).

# The entries of a part of the branch (summarized, turn prefix, kept), their messages and tokens.
SpanJSON = TypedDict(  # noqa: UP013  (the call form, for check's start-up)
    "SpanJSON",
    {
        "entries": int,
        "messages": int,
        "tokens": int,
        "first_entry_id": str | None,
        "last_entry_id": str | None,
    },
)


class CheckForecastJSON(ForecastJSON):
    description: str


# ``CheckResult.to_json()``: the ``check --json`` document (docs/json.md).
CheckJSON = TypedDict(  # noqa: UP013  (the call form, for check's start-up)
    "CheckJSON",
    {
        "session": dict[str, Any],
        "leaf_id": str | None,
        "branch_length": int,
        "model": dict[str, Any] | None,
        "model_source": str,
        "context_tokens": int,
        "context_tokens_method": str,
        "context_tokens_source": str,
        "usage_entry_id": str | None,
        "usage_tokens": int | None,
        "trailing_tokens": int,
        "context_window": int,
        "context_window_source": str,
        "reserve_tokens": int,
        "keep_recent_tokens": int,
        "settings_sources": dict[str, Any],
        "enabled": bool,
        "threshold": int,
        "should_compact": bool,
        "tokens_before": int,
        "can_compact": bool,
        "nothing_to_compact_reason": str | None,
        "first_kept_entry_id": str | None,
        "first_kept_index": int | None,
        "is_split_turn": bool,
        "turn_start_index": int | None,
        "turn_start_entry_id": str | None,
        "previous_compaction_id": str | None,
        "summarize": SpanJSON,
        "turn_prefix": SpanJSON,
        "kept": SpanJSON,
        "read_files": list[str],
        "modified_files": list[str],
        "tokenizer": str,
        "context_tokens_cl100k": int | None,
        "file_evidence": dict[str, Any] | None,
        "forecast": CheckForecastJSON | None,
        "diagnostics": list[DiagnosticJSON],
        "warnings": list[str],
    },
)


class CheckResult:
    """Everything ``check`` reports; ``to_json`` is the documented, stable document. Built by keyword and read by
    name (immutable, neither a tuple nor a dataclass: check defines it at start-up, where a dataclass costs a
    millisecond)."""

    __slots__ = (
        "branch",
        "cl100k_tokens",
        "context_window",
        "context_window_source",
        "enabled",
        "forecast",
        "keep_recent_tokens",
        "model",
        "model_source",
        "plan",
        "reserve_tokens",
        "session",
        "settings_sources",
        "should_compact",
        "threshold",
        "tokenizer",
        "warnings",
    )

    session: Session
    branch: Branch
    plan: CompactionPlan
    model: tuple[str, str] | None
    model_source: str
    context_window: int
    context_window_source: str
    reserve_tokens: int
    keep_recent_tokens: int
    enabled: bool
    settings_sources: dict[str, str]
    threshold: int
    should_compact: bool
    warnings: list[str]
    forecast: Forecast | None  # turns left before the threshold
    tokenizer: str
    cl100k_tokens: int | None

    def __init__(
        self,
        *,
        session: Session,
        branch: Branch,
        plan: CompactionPlan,
        model: tuple[str, str] | None,
        model_source: str,
        context_window: int,
        context_window_source: str,
        reserve_tokens: int,
        keep_recent_tokens: int,
        enabled: bool,
        settings_sources: dict[str, str],
        threshold: int,
        should_compact: bool,
        warnings: list[str],
        forecast: Forecast | None = None,
        tokenizer: str = "pi",
        cl100k_tokens: int | None = None,
    ) -> None:
        values = locals()
        for name in self.__slots__:
            object.__setattr__(self, name, values[name])

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"CheckResult is immutable: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"CheckResult is immutable: cannot delete {name!r}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, CheckResult):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in self.__slots__)

    __hash__ = None  # type: ignore[assignment]  # mutable fields (lists, dicts)

    def __repr__(self) -> str:
        return f"CheckResult({', '.join(f'{name}={getattr(self, name)!r}' for name in self.__slots__)})"

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return [*self.session.diagnostics, *self.branch.diagnostics]

    def mode_context(self) -> ModeContext:
        """What a checkpoint mode may know of this check (``pi_compact.checkpoint.mode``), with the picompact
        settings and extension install for the session's directory read here, once."""
        from pi_compact.checkpoint.mode import ModeContext, PicompactSettings  # compact's, not check's start-up
        from pi_compact.pi.config import load_config
        from pi_compact.pi.extensions import tools_installed

        cwd = self.session.cwd
        settings = PicompactSettings()
        if cwd:
            config = load_config(cwd)
            settings = PicompactSettings(config.cap, config.no_cap, config.lookup_model, tools_installed(cwd))
        return ModeContext(
            session=self.session,
            branch=self.branch,
            model=self.model,
            context_window=self.context_window,
            context_window_from_flag=self.context_window_source == "flag",
            keep_recent_tokens=self.keep_recent_tokens,
            should_compact=self.should_compact,
            picompact=settings,
        )

    def _span(self, entries: list[ProjectedEntry]) -> SpanJSON:
        return {
            "entries": len(entries),
            "messages": sum(1 if pe.facts is not None else len(pe.messages) for pe in entries),
            "tokens": sum(pe.tokens for pe in entries),
            "first_entry_id": entries[0].entry.id if entries else None,
            "last_entry_id": entries[-1].entry.id if entries else None,
        }

    def file_evidence(self, context_files: tuple[Path, ...] = ()) -> dict[str, Any] | None:
        """The cumulative file lists a verbatim checkpoint would carry, each path annotated with the evidence the
        kept tail (and any retained startup read) still holds. None when there is nothing to compact."""
        if not self.plan.can_compact:
            return None
        from pi_compact.checkpoint.context_files import context_files_for
        from pi_compact.checkpoint.details import cumulative_files, is_verbatim_details
        from pi_compact.checkpoint.evidence import annotate_file_lists, evidence_json
        from pi_compact.checkpoint.startup_reads import select_startup_reads

        cwd = self.session.cwd
        read_files, modified_files = cumulative_files(self.plan)
        previous = self.plan.previous_compaction
        details = previous.raw.get("details") if previous is not None else None
        state = details.get("startupReads") if is_verbatim_details(details) and isinstance(details, dict) else None
        files = context_files_for(cwd, extra=list(context_files))
        retained, _ = select_startup_reads(self.plan, state, files, cwd)
        return evidence_json(annotate_file_lists(self.plan, read_files, modified_files, cwd, retained), retained)

    def to_json(self, *, evidence: bool = True) -> CheckJSON:
        plan = self.plan
        ctx = plan.context
        split = plan.cut.is_split_turn and plan.can_compact
        turn_entry = plan.entries[plan.cut.turn_start_index].entry if split else None
        first_kept = plan.first_kept if plan.can_compact else None
        return {
            "session": {
                "path": str(self.session.path) if self.session.path else None,
                "id": self.session.session_id,
                "cwd": self.session.cwd,
                "version": self.session.original_version,
                "name": self.session.name(),
                "entries": len(self.session.entries),
            },
            "leaf_id": self.branch.leaf.id if self.branch.leaf else None,
            "branch_length": len(self.branch),
            "model": {"provider": self.model[0], "id": self.model[1]} if self.model else None,
            "model_source": self.model_source,
            "context_tokens": ctx.tokens,
            "context_tokens_method": ctx.method,
            "context_tokens_source": ctx.describe(),
            "usage_entry_id": ctx.usage_entry.id if ctx.usage_entry else None,
            "usage_tokens": ctx.usage_tokens,
            "trailing_tokens": ctx.trailing_tokens,
            "context_window": self.context_window,
            "context_window_source": self.context_window_source,
            "reserve_tokens": self.reserve_tokens,
            "keep_recent_tokens": self.keep_recent_tokens,
            "settings_sources": self.settings_sources,
            "enabled": self.enabled,
            "threshold": self.threshold,
            "should_compact": self.should_compact,
            "tokens_before": ctx.tokens,
            "can_compact": plan.can_compact,
            "nothing_to_compact_reason": plan.nothing_reason,
            "first_kept_entry_id": first_kept.id if first_kept else None,
            "first_kept_index": self.branch.position(first_kept.id) if first_kept else None,
            "is_split_turn": split,
            "turn_start_index": self.branch.position(turn_entry.id) if turn_entry else None,
            "turn_start_entry_id": turn_entry.id if turn_entry else None,
            "previous_compaction_id": plan.previous_compaction.id if plan.previous_compaction else None,
            "summarize": {**self._span(plan.summarized_entries()), "messages": len(plan.messages_to_summarize)},
            "turn_prefix": {**self._span(plan.prefix_entries()), "messages": len(plan.turn_prefix_messages)},
            "kept": self._span(plan.kept_entries()),
            "read_files": plan.read_files,
            "modified_files": plan.modified_files,
            "tokenizer": self.tokenizer,
            "context_tokens_cl100k": self.cl100k_tokens,
            "file_evidence": self.file_evidence() if evidence else None,
            "forecast": {**self.forecast.to_json(), "description": self.forecast.describe()}
            if self.forecast is not None
            else None,
            "diagnostics": [d.to_json() for d in self.diagnostics],
            "warnings": self.warnings,
        }


def settings_cwd(session: Session) -> str:
    """Project settings come from the directory Pi ran in: the session's cwd when it exists here."""
    cwd = session.cwd
    if cwd and Path(cwd).is_dir():
        return cwd
    return str(Path.cwd())


def cl100k_context_tokens(plan: CompactionPlan) -> int:
    """Context tokens counted with cl100k_base over the projected messages (system replayed once)."""
    messages = plan.projection.messages
    system = current_system_message(messages)
    total = count_cl100k(system) if system is not None else 0
    return total + sum(count_cl100k(m) for m in messages if m.get("role") != "system")


def check_session(
    session: Session | str | os.PathLike[str], options: CheckOptions | None = None, *, cache: bool = False
) -> CheckResult:
    """Resolve settings for the session's model and plan the compaction as Pi would. ``session`` is a loaded
    ``Session`` or the path of a session file, which is loaded first (``cache`` then keeps an index of the file
    between runs: ``session.index``).

    The cyclic garbage collector is paused while a file loads and is analysed, as the loader pauses it
    (``load.parse_session``): loading and analysing create no cycles, and the full collection that tens of
    thousands of new entries set off would cost a fifth of a re-run that resumes from the index."""
    if isinstance(session, Session):
        return _check(session, options or CheckOptions())
    enabled = gc.isenabled()
    gc.disable()
    try:
        return _check(held_load(session, cache), options or CheckOptions())
    finally:
        if enabled:
            gc.enable()


def held_load(path: str | os.PathLike[str], cache: bool = False) -> Session:
    """The session at ``path`` loaded for ``check``: bodies dropped whenever they hold ``HOLD_BYTES`` of the file,
    compaction or not, with what the context needs of each (``projection.message_facts``), so that a long span
    never compacted is planned without holding its bodies."""
    from pi_compact.pi.projection import message_facts
    from pi_compact.session.load import HOLD_BYTES

    return load_session(path, cache=cache, release_bytes=HOLD_BYTES, facts=message_facts)


def _check(session: Session, options: CheckOptions) -> CheckResult:
    from pi_compact.pi.catalog import models_json_warnings, parse_model_ref, resolve_context_window
    from pi_compact.pi.settings import resolve_settings

    branch = get_branch(session, options.leaf_id)
    projection = build_projection(branch)
    if options.model:
        model: tuple[str, str] | None = parse_model_ref(options.model)
        model_source = "flag"
    else:
        model = projection.model
        model_source = "session (latest model change or assistant reply)" if model else "unknown"
    settings = resolve_settings(
        settings_cwd(session),
        model,
        reserve_tokens=options.reserve_tokens,
        keep_recent_tokens=options.keep_recent_tokens,
    )
    try:
        window, window_source = resolve_context_window(flag=options.context_window, model=model)
    except SettingsError as exc:
        if branch.leaf is None and session.no_leaf:  # no model because no branch: say why there is none
            raise SettingsError(
                f"no model, so no context window, is known (pass --context-window): {no_leaf_reason(session)}",
                path=str(session.path or "<session>"),
            ) from None
        if model is None and exc.path is None:  # what the session lacks: named by the session's file
            raise SettingsError(exc.message, path=str(session.path or "<session>")) from None
        raise
    plan = plan_compaction(branch, settings.keep_recent_tokens, projection)
    threshold = window - settings.reserve_tokens
    warnings = list(getattr(settings, "warnings", ()))
    if options.context_window is None:
        warnings.extend(models_json_warnings())
    if threshold <= 0:
        warnings.append(
            f"reserveTokens ({settings.reserve_tokens}) is not below the context window ({window}): "
            "every non-empty context crosses the threshold"
        )
    from pi_compact.ops.forecast import check_forecast

    return CheckResult(
        session=session,
        branch=branch,
        plan=plan,
        model=model,
        model_source=model_source,
        context_window=window,
        context_window_source=window_source,
        reserve_tokens=settings.reserve_tokens,
        keep_recent_tokens=settings.keep_recent_tokens,
        enabled=settings.enabled,
        settings_sources=dict(settings.sources),
        threshold=threshold,
        should_compact=should_compact(plan.context.tokens, window, settings.reserve_tokens, settings.enabled),
        warnings=warnings,
        forecast=check_forecast(branch, plan.context.tokens, threshold),
        tokenizer=options.tokenizer,
        cl100k_tokens=cl100k_context_tokens(plan) if options.tokenizer == "cl100k" else None,
    )
