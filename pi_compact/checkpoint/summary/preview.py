"""The dry run: the exact requests, their size and an upper bound on their cost; nothing is sent."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

from pi_compact.checkpoint.mode import ModeContext, ModePreviewJSON
from pi_compact.checkpoint.summary.requests import (
    SummaryModel,
    SummaryOptions,
    SummaryRequest,
    choose_thinking,
    file_lists,
    fit_problems,
    plan_requests,
    previous_summary_source,
    resolve_summary_model,
)
from pi_compact.errors import UsageError
from pi_compact.pi.plan import CompactionPlan

if TYPE_CHECKING:
    from pi_compact.llm import ModelRef
    from pi_compact.llm.thinking import ThinkingChoice


# ---------------------------------------------------------------------------------------------------------------
# Dry run: the exact requests, their size and an upper bound on their cost


def _cl100k(text: str) -> int | None:
    """cl100k_base tokens when the offline encoding is installed (never downloaded), else None."""
    try:
        from pi_compact.pi.tokens import count_cl100k

        return count_cl100k({"role": "user", "content": text})
    except Exception:  # tiktoken or its bundled encoding missing: the count is an extra, not needed
        return None


class PreviewModelJSON(TypedDict):
    """The model a summary dry run sized its requests for, where they would go and whether a key is at hand."""

    provider: str
    id: str
    source: str
    protocol: str | None
    base_url: str | None
    sendable: bool
    context_window: int
    max_tokens: int
    api_key_available: bool
    api_key_source: str | None


class PreviewRequestJSON(TypedDict):
    """One request as it would be sent, with its output limit and the estimates of its input."""

    kind: str
    system: str
    user: str
    max_tokens: int
    chunk: int | None
    thinking: str
    thinking_budget_tokens: int | None
    input_tokens_pi: int
    input_tokens_request_estimate: int
    input_tokens_cl100k: int | None


class PreviewCostJSON(TypedDict):
    input_tokens: int
    max_output_tokens: int
    usd_upper_bound: float | None
    note: str


class PreviewChunksJSON(TypedDict):
    count: int
    output_limit_each: int | None
    note: str | None


class PreviewThinkingJSON(TypedDict):
    requested: str | None
    source: str | None
    sent: str


class PreviewRedactionJSON(TypedDict):
    enabled: bool
    secrets_by_kind: dict[str, int]
    secrets: int


class SummaryPreviewJSON(ModePreviewJSON):
    """``SummaryPreview.to_json()``: the ``compact --mode summary --dry-run --json`` document."""

    should_compact: bool
    tokens_before: int
    first_kept_entry_id: str | None
    is_split_turn: bool
    update: bool
    previous_summary_source: str | None
    model: PreviewModelJSON
    requests: list[PreviewRequestJSON]
    cost: PreviewCostJSON
    chunks: PreviewChunksJSON
    thinking: PreviewThinkingJSON
    read_files: list[str]
    modified_files: list[str]
    redaction: PreviewRedactionJSON
    warnings: list[str]


@dataclass(frozen=True)
class SummaryPreview:
    """What ``--dry-run`` shows: the model, each request as it would be sent, and what it may cost."""

    plan: CompactionPlan
    ctx: ModeContext
    model: SummaryModel
    requests: tuple[SummaryRequest, ...]
    key_available: bool
    cl100k: tuple[int | None, ...]
    read_files: list[str]
    modified_files: list[str]
    previous_summary_source: str | None
    warnings: tuple[str, ...] = ()
    redacted: dict[str, int] | None = None  # distinct secrets that would be masked, by kind; None: redaction off
    sendable: bool = True  # False: picompact cannot send to this model (the dry run still sizes the requests)
    key_source: str | None = None  # where the key would come from (a variable name or auth.json's path)
    thinking: ThinkingChoice | None = None  # the level asked for and its source (each request has the level sent)
    carried_tokens: int = 0  # upper bound of the summaries handed from chunk to chunk (in the later requests)
    chunks: int = 0  # the history in this many chunks (0: one request)

    @property
    def input_tokens(self) -> int:
        """Pi's estimate of every request's input; a later chunk's counts the largest summary it may carry."""
        return sum(r.pi_tokens for r in self.requests) + self.carried_tokens

    @property
    def max_output_tokens(self) -> int:
        return sum(r.max_tokens for r in self.requests)

    @property
    def cost_upper_bound(self) -> float | None:
        """Dollars for Pi's input estimate plus the full output limit of every request; None without prices."""
        from pi_compact.pi.catalog import estimate_cost

        return estimate_cost(self.model.info, self.input_tokens, self.max_output_tokens)

    def to_json(self) -> SummaryPreviewJSON:
        plan = self.plan
        ref = self.model.ref
        cost = self.cost_upper_bound
        return {
            "status": "dry-run",
            "mode": "summary",
            "session": str(self.ctx.session.path) if self.ctx.session.path else None,
            "should_compact": self.ctx.should_compact,
            "tokens_before": plan.context.tokens,
            "first_kept_entry_id": plan.first_kept.id if plan.first_kept else None,
            "is_split_turn": bool(plan.cut.is_split_turn and plan.turn_prefix_messages),
            "update": bool(plan.previous_summary),
            "previous_summary_source": self.previous_summary_source,
            "model": {
                "provider": ref.provider,
                "id": ref.model_id,
                "source": ref.source,
                "protocol": ref.protocol if self.sendable else None,
                "base_url": ref.base_url if self.sendable else None,
                "sendable": self.sendable,
                "context_window": self.model.context_window,
                "max_tokens": self.model.max_tokens,
                "api_key_available": self.key_available,
                "api_key_source": self.key_source,
            },
            "requests": [
                {
                    "kind": r.kind,
                    "system": r.system,
                    "user": r.user,
                    "max_tokens": r.max_tokens,
                    "chunk": r.chunk or None,
                    "thinking": r.thinking,
                    "thinking_budget_tokens": r.thinking_budget,
                    "input_tokens_pi": r.pi_tokens,
                    "input_tokens_request_estimate": r.input_tokens,
                    "input_tokens_cl100k": count,
                }
                for r, count in zip(self.requests, self.cl100k, strict=True)
            ],
            "cost": {
                "input_tokens": self.input_tokens,
                "max_output_tokens": self.max_output_tokens,
                "usd_upper_bound": cost,
                "note": "input at Pi's estimate (chars / 4), with the largest summary each later chunk may carry; "
                "output priced at the full output limit, an upper bound",
            },
            "chunks": {
                "count": self.chunks,
                "output_limit_each": self.requests[0].max_tokens if self.chunks else None,
                "note": "the history does not fit one request: it is summarised chunk by chunk, each next chunk "
                "folded into the summary so far with the update prompt (later requests show a stand-in for it)"
                if self.chunks
                else None,
            },
            "thinking": {
                "requested": self.thinking.level if self.thinking else None,
                "source": self.thinking.source if self.thinking else None,
                "sent": self.requests[0].thinking if self.requests else "off",
            },
            "read_files": self.read_files,
            "modified_files": self.modified_files,
            "redaction": {
                "enabled": self.redacted is not None,
                "secrets_by_kind": self.redacted or {},
                "secrets": sum((self.redacted or {}).values()),
            },
            "warnings": list(self.warnings),
        }


def preview_summary(
    plan: CompactionPlan,
    ctx: ModeContext,
    options: SummaryOptions | None = None,
    *,
    env: Mapping[str, str] | None = None,
) -> SummaryPreview:
    """The requests summary mode would send for ``plan``, without sending anything.

    A dry run sends nothing, so it works for any session: without a usable key for the session's model, or when
    picompact cannot send to its provider, the preview still shows the requests as sized for that model (and says
    what a real run would need).
    """
    from pi_compact.llm import choose_model, key_source

    opts = options or SummaryOptions()
    environ = os.environ if env is None else env
    warnings: list[str] = []
    sendable = True
    try:
        ref = choose_model(ctx.model, opts.model, environ, base_url=opts.base_url)
    except UsageError:
        if opts.model:  # the user's own --model is the problem: say so
            raise
        ref, sendable, why = _preview_model(ctx, opts)
        if why:
            warnings.append(why)
    # Where the key would come from, found as Pi finds it: a "!command" key helper is not run for a dry run.
    source = key_source(ref, environ) if sendable else None
    key_available = sendable and (source is not None or not ref.key_required)
    if sendable and not key_available:
        warnings.append(f"no API key for {ref.provider}: a real run would stop before sending anything")
    model = resolve_summary_model(ref, ctx)
    warnings += model.warnings
    from pi_compact.redact import Redactor

    redactor = Redactor() if opts.redact else None
    thinking = choose_thinking(ctx, opts)
    request_plan = plan_requests(plan, model, opts, redactor, thinking.level)
    requests = tuple(request_plan.preview(model))
    warnings += fit_problems(requests, model)
    read_files, modified_files = file_lists(plan)
    return SummaryPreview(
        plan=plan,
        ctx=ctx,
        model=model,
        requests=requests,
        key_available=key_available,
        cl100k=tuple(_cl100k(r.system + "\n" + r.user) for r in requests),
        read_files=read_files,
        modified_files=modified_files,
        previous_summary_source=previous_summary_source(plan),
        warnings=tuple(warnings),
        redacted=redactor.counts if redactor is not None else None,
        sendable=sendable,
        key_source=source,
        thinking=thinking,
        carried_tokens=(request_plan.chunk_output or 0) * len(request_plan.later),
        chunks=request_plan.chunks,
    )


def _preview_model(ctx: ModeContext, options: SummaryOptions) -> tuple[ModelRef, bool, str]:
    """The model a dry run sizes the requests for when no model can be used: the session's, sendable or not."""
    from pi_compact.llm import ModelRef, find_model, resolve_model

    advice = "a real run needs --model PROVIDER/ID (or PICOMPACT_MODEL) naming a model picompact can send to"
    if ctx.model is None:
        ref = ModelRef("(none)", "(none)", "openai", "", key_required=False, source="none")
        return ref, False, f"the session names no model; {advice}; the requests are sized with Pi's defaults"
    try:
        return resolve_model(ctx.model, base_url=options.base_url, source="session"), True, ""
    except UsageError as exc:
        provider, model_id = ctx.model
        ref = ModelRef(provider, model_id, "openai", "", info=find_model(provider, model_id), source="session")
        return ref, False, f"{exc.message}; {advice}"
