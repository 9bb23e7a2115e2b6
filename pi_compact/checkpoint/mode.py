"""The checkpoint-mode contract: how ``compact`` asks a mode for the text of a compaction, and how it previews one.

A mode is an object with a ``name``, ``build(plan, ctx) -> CheckpointResult`` (the compaction entry's content) and
``preview(plan, ctx)`` (what a dry run shows: the checkpoint itself when building it costs nothing, as in verbatim
mode, or a ``ModePreview`` of what building it would send, as in summary mode; a preview never calls a model).
``get_mode(name, **options)`` finds a built-in mode by name and builds it with its options, importing its module
only then::

    mode = get_mode("verbatim", cap_tokens=8_000)
    result = compact_session("session.jsonl", mode)

Whatever the mode, the entries come from the one builder (``checkpoint.entry``) and reach the file through the one
writer (``session.write``), so every mode writes the same shape, the same safe way.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypedDict, runtime_checkable

from pi_compact.errors import OptionError, UsageError
from pi_compact.pi.plan import CompactionPlan
from pi_compact.session.entries import JsonDict, Session
from pi_compact.session.tree import Branch

if TYPE_CHECKING:
    from pi_compact.redact import Redactor

# Whether ``picompact lookup`` would find a model and a key, given the session's model and the lookup model the
# Pi extension's settings name (or None). The caller computes it (the CLI, the Pi extension's hook); the library
# never reads API keys to decide a checkpoint's text.
LookupProbe = Callable[[tuple[str, str] | None, str | None], bool]


@dataclass(frozen=True)
class PicompactSettings:
    """What Pi's settings (``picompact`` in settings.json) and the extension's install say for the session's
    directory, resolved once by the caller (``CheckResult.mode_context``), so a mode reads no file to decide."""

    cap: int | None = None  # picompact.cap (None: not set)
    no_cap: bool = False  # picompact.cap is false
    lookup_model: str | None = None  # picompact.lookupModel
    recovery_tools: bool = False  # the extension gives sessions there the context_* tools


@dataclass(frozen=True)
class ModeContext:
    """What a mode may need beyond the plan: the session, its branch and the settings ``check`` resolved."""

    session: Session
    branch: Branch
    model: tuple[str, str] | None  # the session's model (PROVIDER, ID), or the one --model named
    context_window: int
    context_window_from_flag: bool  # --context-window was given: it applies to the session's own model
    keep_recent_tokens: int
    should_compact: bool
    picompact: PicompactSettings = field(default_factory=PicompactSettings)

    @property
    def session_path(self) -> Path | None:
        return self.session.path


@dataclass(frozen=True)
class CheckpointResult:
    """What a mode builds: the compaction entry's content, and a few facts for the report."""

    summary: str
    details: JsonDict | None
    reminder: str | None  # the re-orientation message placed after the kept tail, or None
    from_hook: bool
    usage: JsonDict | None = None  # Pi's Usage of the model requests that wrote it (None: no model)
    tokens: int | None = None  # the mode's own size estimate of the checkpoint, if it has one
    trimmed: bool = False  # the size cap shortened or dropped part of it
    warnings: tuple[str, ...] = ()
    file_evidence: JsonDict | None = None  # the annotated file lists, for --json (verbatim mode)
    redacted: dict[str, int] | None = None  # distinct secrets masked, by kind; None when redaction was off


class ModePreviewJSON(TypedDict):
    """The keys every ``ModePreview.to_json()`` begins with (a mode's preview adds its own after them)."""

    status: str  # "dry-run"
    mode: str
    session: str | None


class NotNeededJSON(TypedDict):
    """What a dry run of a mode that previews shows in place of its preview when nothing needs compacting
    (``CompactResult.not_needed_json()``)."""

    status: str  # "not-needed"
    mode: str
    session: str


@runtime_checkable
class ModePreview(Protocol):
    """What a dry run shows for a mode whose checkpoint costs something to build (requests to a model)."""

    @property
    def warnings(self) -> tuple[str, ...]: ...

    def to_json(self) -> ModePreviewJSON: ...


@runtime_checkable
class CheckpointMode(Protocol):
    """A way to build the checkpoint of a compaction (see the module docstring)."""

    @property
    def name(self) -> str: ...

    def build(self, plan: CompactionPlan, ctx: ModeContext) -> CheckpointResult: ...

    def preview(self, plan: CompactionPlan, ctx: ModeContext) -> CheckpointResult | ModePreview: ...


@dataclass
class RedactingMode:
    """A mode whose checkpoint text (what the model reads on resume) is masked (``pi_compact.redact``).

    Only the entry's ``summary`` and the re-orientation message change; ``details`` (file lists, spans into the raw
    session) stay as they are, like the raw session itself: they never leave the machine. One redactor serves the
    whole run, so a re-plan after a concurrent append numbers the same secrets the same way.
    """

    inner: CheckpointMode
    _redactor: Redactor | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return self.inner.name

    def _mask(self, checkpoint: CheckpointResult) -> CheckpointResult:
        if self._redactor is None:
            from pi_compact.redact import Redactor

            self._redactor = Redactor()
        redactor = self._redactor
        summary = redactor.redact(checkpoint.summary)
        reminder = redactor.redact(checkpoint.reminder) if checkpoint.reminder is not None else None
        counts = dict(redactor.counts)
        if summary == checkpoint.summary and reminder == checkpoint.reminder:
            return dataclasses.replace(checkpoint, redacted=counts)
        return dataclasses.replace(checkpoint, summary=summary, reminder=reminder, tokens=None, redacted=counts)

    def build(self, plan: CompactionPlan, ctx: ModeContext) -> CheckpointResult:
        return self._mask(self.inner.build(plan, ctx))

    def preview(self, plan: CompactionPlan, ctx: ModeContext) -> CheckpointResult | ModePreview:
        preview = self.inner.preview(plan, ctx)
        return self._mask(preview) if isinstance(preview, CheckpointResult) else preview


# name -> "module:class"; imported only when asked for, so ``check`` never loads a mode.
_MODES: dict[str, str] = {
    "verbatim": "pi_compact.checkpoint.verbatim.mode:VerbatimMode",
    "summary": "pi_compact.checkpoint.summary:SummaryMode",
}
MODE_NAMES = tuple(_MODES)


def get_mode(name: str, **options: Any) -> CheckpointMode:
    """The built-in mode ``name`` ("verbatim" or "summary") built with ``options`` (its dataclass's fields).

    ``redact=True`` for verbatim mode masks detected secrets in the checkpoint text (a ``RedactingMode``); summary
    mode redacts what it sends by its own ``SummaryOptions.redact``. Unknown names and options are UsageErrors;
    option values are checked by the mode's own dataclass (an ``OptionError`` naming the fields).
    """
    target = _MODES.get(name)
    if target is None:
        raise OptionError(("mode",), f"must be one of {', '.join(sorted(_MODES))} (got {name!r})")
    redact = bool(options.pop("redact", False)) if name == "verbatim" else False
    module, _, attr = target.partition(":")
    cls = getattr(importlib.import_module(module), attr)
    known = {f.name for f in dataclasses.fields(cls) if f.init}
    unknown = sorted(set(options) - known)
    if unknown:
        raise UsageError(f"{name} mode takes no option {', '.join(unknown)} (its options: {', '.join(sorted(known))})")
    mode: CheckpointMode = cls(**options)
    return RedactingMode(mode) if redact else mode


__all__ = [
    "MODE_NAMES",
    "CheckpointMode",
    "CheckpointResult",
    "LookupProbe",
    "ModeContext",
    "ModePreview",
    "ModePreviewJSON",
    "NotNeededJSON",
    "RedactingMode",
    "get_mode",
]
