"""The checkpoint asked for by name, as the command line (``compact``, ``pi checkpoint``) and the Pi extension ask for
it: a ``CheckpointRequest`` holds the mode and every mode's options, checked together once when it is made (an
unknown mode, a cap out of range, ``--cap`` with ``--no-cap``, one mode's options given to the other), and
``checkpoint_mode()`` builds the ``CheckpointMode`` it names."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pi_compact.checkpoint.mode import MODE_NAMES, CheckpointMode, LookupProbe, get_mode
from pi_compact.errors import OptionError
from pi_compact.ops.check import MAX_TOKENS_SETTING

_MODE_FIELDS = {
    "verbatim": ("cap", "no_cap", "context_files"),
    "summary": ("model", "base_url", "instructions", "include_thinking", "timeout", "thinking"),
}


class ModeOptionError(OptionError):
    """Options of one mode given with the other mode: ``"base_url applies only to mode summary"``, and with the
    command line's names, ``"--base-url applies only to --mode summary"``."""

    def __init__(self, fields: tuple[str, ...], mode: str) -> None:
        self.mode = mode  # the mode asked for
        self.fields = fields
        super().__init__(fields, self._only_to("mode"))
        self.message = self.message_for(str)  # the fields listed with commas, not "and"
        self.args = (self.message,)

    def _only_to(self, mode: str) -> str:
        verb = "applies" if len(self.fields) == 1 else "apply"
        if self.mode == "summary":
            return f"{verb} only to {mode} verbatim, not {mode} summary"
        return f"{verb} only to {mode} summary"

    def message_for(self, flag: Callable[[str], str]) -> str:
        return f"{', '.join(flag(f) for f in self.fields)} {self._only_to(flag('mode'))}"


def _given(value: object) -> bool:
    """Whether an option of ``CheckpointRequest`` was given: not None, False or empty (``cap=0`` is given)."""
    return value is not None and value is not False and value != ()


@dataclass(frozen=True)
class CheckpointRequest:
    """The checkpoint asked for: the mode by name and each mode's options (None, False or empty: not given), as
    ``picompact compact``, ``picompact pi checkpoint`` and the Pi extension's hook ask for it.

    Checked when made, once for all of them: an unknown mode, a negative or absurd ``cap``, ``cap`` with
    ``no_cap``, and one mode's options given with the other mode raise ``OptionError`` naming the fields (the CLI
    names its flags). The values of the chosen mode's options are checked by its own dataclass (``VerbatimMode``,
    ``SummaryOptions``) when ``checkpoint_mode()`` builds it.
    """

    mode: str = "verbatim"
    # verbatim mode
    cap: int | None = None  # the checkpoint's budget in tokens (None: picompact.cap, else keepRecentTokens / 2)
    no_cap: bool = False  # no budget: every compacted span kept whole
    context_files: tuple[str | os.PathLike[str], ...] = ()  # extra AGENTS.md-like files
    lookup_available: bool | LookupProbe = False  # advertise `picompact lookup` (the caller decides; see VerbatimMode)
    # summary mode
    model: str | None = None  # PROVIDER/ID of the model that writes the summary
    base_url: str | None = None  # its server
    instructions: str | None = None  # what the summary should focus on
    include_thinking: bool = False  # the model reads the assistant's thinking too
    thinking: str | None = None  # the reasoning level of the summary requests
    timeout: float | None = None  # seconds per answer (None: SummaryOptions' default)
    # both
    redact: bool | None = None  # mask secrets (None: the mode's default, off for verbatim, on for summary)

    def __post_init__(self) -> None:
        object.__setattr__(self, "context_files", tuple(self.context_files))
        if self.mode not in MODE_NAMES:
            raise OptionError(("mode",), f"must be one of {', '.join(sorted(MODE_NAMES))} (got {self.mode!r})")
        if self.cap is not None and self.cap < 0:
            raise OptionError(("cap",), f"must not be negative (got {self.cap})")
        if self.cap is not None and self.cap > MAX_TOKENS_SETTING:
            raise OptionError(("cap",), f"is absurdly large (got {self.cap}; at most {MAX_TOKENS_SETTING})")
        if self.cap is not None and self.no_cap:
            raise OptionError(("cap", "no_cap"), "clash: give one of them")
        other = "summary" if self.mode == "verbatim" else "verbatim"
        given = tuple(name for name in _MODE_FIELDS[other] if _given(getattr(self, name)))
        if given:
            raise ModeOptionError(given, self.mode)

    def checkpoint_mode(self, *, waiting: Callable[[str], Any] | None = None) -> CheckpointMode:
        """The mode asked for, built with its options (``get_mode``). ``waiting(label)`` wraps each wait for a
        summary mode's model (a spinner)."""
        if self.mode == "verbatim":
            return get_mode(
                "verbatim",
                cap_tokens=self.cap,
                no_cap=self.no_cap,
                context_files=self.context_files,
                lookup_available=self.lookup_available,
                redact=bool(self.redact),
            )
        from pi_compact.checkpoint.summary import SummaryOptions

        options = SummaryOptions(
            model=self.model,
            base_url=self.base_url,
            instructions=self.instructions,
            include_thinking=self.include_thinking,
            timeout=self.timeout if self.timeout is not None else SummaryOptions.timeout,
            redact=self.redact is not False,
            thinking=self.thinking,
        )
        return get_mode("summary", options=options, waiting=waiting)
