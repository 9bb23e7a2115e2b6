"""The verbatim mode: ``build_verbatim_checkpoint`` behind the ``CheckpointMode`` contract (no model, no network).

The mode decides what the builder takes as given, from its options and the context the caller resolved
(``ModeContext.picompact``: Pi's ``picompact`` settings and whether the extension's tools are installed, read
once by ``CheckResult.mode_context``): the cap (the option, else ``picompact.cap``, else keepRecentTokens / 2), the
recovery tools to advertise, and whether ``picompact lookup`` would work (``lookup_available``: a value or a probe
the caller supplies; the library reads no API key to decide the text). The instruction files Pi would load for
the session's directory are the one thing it looks up itself (for the startup reads).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from pi_compact.checkpoint.context_files import context_files_for
from pi_compact.checkpoint.mode import CheckpointResult, LookupProbe, ModeContext
from pi_compact.checkpoint.verbatim.build import VerbatimOptions, build_verbatim_checkpoint
from pi_compact.errors import OptionError
from pi_compact.pi.plan import CompactionPlan


def default_cap(keep_recent_tokens: int) -> int:
    """Half of keepRecentTokens: checkpoint + kept tail stay well below the threshold round after round."""
    return keep_recent_tokens // 2


@dataclass(frozen=True)
class VerbatimMode:
    """The deterministic checkpoint. ``cap_tokens`` None means the default cap; ``no_cap`` lifts it.
    ``recovery_tools`` None: advertise the Pi extension's tools when it is installed for the session's directory,
    else shell commands. ``lookup_available``: whether to advertise ``picompact lookup`` (or a probe deciding it
    from the session's model and the extension's lookup model)."""

    cap_tokens: int | None = None
    no_cap: bool = False
    context_files: tuple[str | os.PathLike[str], ...] = ()
    lookup_available: bool | LookupProbe = False
    recovery_tools: bool | None = None

    name = "verbatim"

    def __post_init__(self) -> None:
        if self.no_cap and self.cap_tokens is not None:
            raise OptionError(("cap_tokens", "no_cap"), "clash: give one of them")
        if self.cap_tokens is not None and self.cap_tokens < 0:
            raise OptionError(("cap_tokens",), f"must not be negative (got {self.cap_tokens})")
        object.__setattr__(self, "context_files", tuple(self.context_files))

    def build(self, plan: CompactionPlan, ctx: ModeContext) -> CheckpointResult:
        settings = ctx.picompact
        cap: int | None
        if self.no_cap:
            cap = None
        elif self.cap_tokens is not None:
            cap = self.cap_tokens
        elif settings.cap is not None or settings.no_cap:
            cap = settings.cap  # picompact.cap in Pi's settings (None for false: no cap)
        else:
            cap = default_cap(ctx.keep_recent_tokens)
        tools = self.recovery_tools if self.recovery_tools is not None else settings.recovery_tools
        if isinstance(self.lookup_available, bool):
            lookup = self.lookup_available
        else:
            lookup = self.lookup_available(plan.projection.model, settings.lookup_model if tools else None)
        # The instruction files Pi would load for the session's cwd on this machine, then the user's.
        files = context_files_for(ctx.session.cwd, extra=[Path(f) for f in self.context_files])
        options = VerbatimOptions(
            # Absolute: the recovery commands run from the agent's shell, wherever that is.
            session_path=str(Path(ctx.session.path).absolute()) if ctx.session.path is not None else "SESSION",
            cap_tokens=cap,
            context_files=tuple(files),
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
            tokens=checkpoint.tokens,
            trimmed=checkpoint.trimmed,
            warnings=tuple(checkpoint.warnings),
            file_evidence=checkpoint.evidence,
        )

    def preview(self, plan: CompactionPlan, ctx: ModeContext) -> CheckpointResult:
        """The checkpoint itself: building it calls no model, so the dry run shows the exact bytes."""
        return self.build(plan, ctx)


__all__ = ["VerbatimMode", "default_cap"]
