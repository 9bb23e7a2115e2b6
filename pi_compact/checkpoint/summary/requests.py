"""What summary mode sends: its options, the summarising model, the requests fitted to the window (chunked when
the history is too large), and the thinking level."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pi_compact.checkpoint.mode import ModeContext
from pi_compact.checkpoint.summary.prompts import SYSTEM_PROMPT, RequestKind, history_prompt, turn_prefix_prompt
from pi_compact.checkpoint.summary.serialize import serialize_messages
from pi_compact.errors import OptionError, PiCompactError
from pi_compact.js import js_len
from pi_compact.pi.plan import CompactionPlan, FileOps

if TYPE_CHECKING:
    from pi_compact.llm import ModelRef, Request
    from pi_compact.llm.thinking import ThinkingChoice
    from pi_compact.pi.catalog import ModelInfo
    from pi_compact.redact import Redactor


# ---------------------------------------------------------------------------------------------------------------
# Output limit (pi-ai's clampMaxTokensToContext)

_CHARS_PER_TOKEN = 3.5  # pi-ai's estimate for requests (the session estimate divides by 4)
_SAFETY_TOKENS = 4096
_SAFETY_RATIO = 0.15
_MIN_OUTPUT_WITH_RATIO = 32768


def request_input_tokens(system: str, user: str) -> int:
    """The input estimate Pi uses to fit the output limit: each message's chars / 3.5, rounded up."""
    return math.ceil(js_len(system) / _CHARS_PER_TOKEN) + math.ceil(js_len(user) / _CHARS_PER_TOKEN)


def output_limit(model_max_tokens: int, context_window: int, input_tokens: int) -> int:
    """The model's output limit, reduced so input + output fit the window with Pi's safety margin."""
    if context_window <= 0:
        return max(1, model_max_tokens)
    margin = max(_SAFETY_TOKENS, math.ceil(input_tokens * _SAFETY_RATIO))
    room = context_window - input_tokens - margin
    if room < _MIN_OUTPUT_WITH_RATIO:
        room = min(_MIN_OUTPUT_WITH_RATIO, context_window - input_tokens - _SAFETY_TOKENS)
    return min(model_max_tokens, max(1, room))


def pi_token_estimate(text: str) -> int:
    """Pi's session estimate for a text: ceil(UTF-16 length / 4)."""
    return math.ceil(js_len(text) / 4)


# ---------------------------------------------------------------------------------------------------------------
# Options, the summarising model, the requests


@dataclass(frozen=True)
class SummaryOptions:
    """How to summarise. ``model`` None: the session's model when it has a key, else PICOMPACT_MODEL."""

    model: str | None = None  # PROVIDER/ID
    base_url: str | None = None
    instructions: str | None = None  # focus text, appended to the instructions
    include_thinking: bool = False
    timeout: float = 120.0
    max_retries: int = 3  # HTTP-level retries (429, 5xx, timeouts) per request
    redact: bool = True  # mask detected secrets before anything is sent (pi_compact.redact)
    thinking: str | None = None  # a Pi thinking level; None: the session's, as Pi uses it; "off": none

    def __post_init__(self) -> None:
        from pi_compact.llm.thinking import LEVELS

        if self.thinking is not None and self.thinking not in LEVELS:
            raise OptionError(("thinking",), f"must be one of {', '.join(LEVELS)} (got {self.thinking!r})")
        if not (self.timeout > 0) or math.isinf(self.timeout):
            raise OptionError(("timeout",), f"must be a positive number of seconds (got {self.timeout!r})")
        if self.max_retries < 0:
            raise OptionError(("max_retries",), "must not be negative")
        if self.instructions is not None and not self.instructions.strip():
            raise OptionError(("instructions",), "is empty")


@dataclass(frozen=True)
class SummaryModel:
    """The summarising model and the limits its requests are fitted to."""

    ref: ModelRef
    context_window: int
    max_tokens: int
    info: ModelInfo | None  # prices; None when Pi's table does not know the model
    warnings: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        return self.ref.ref


@dataclass(frozen=True)
class SummaryRequest:
    """One request exactly as it will be sent: prompts, output limit, and Pi's input estimate."""

    kind: RequestKind
    system: str
    user: str
    max_tokens: int
    input_tokens: int  # pi-ai's estimate (chars / 3.5), the one the output limit is fitted to
    thinking: str = "off"  # the thinking level sent (clamped to the model), "off" for none
    thinking_budget: int | None = None  # Anthropic budget-based thinking: tokens of max_tokens it may use
    chunk: int = 0  # 1-based chunk of a history too large for one request; 0: the history is one request
    chunks: int = 0

    @property
    def pi_tokens(self) -> int:
        """Pi's session estimate (chars / 4) of system prompt + user message."""
        return pi_token_estimate(self.system) + pi_token_estimate(self.user)

    def to_request(self) -> Request:
        from pi_compact.llm import Message, Request

        return Request(
            [Message.user(self.user)],
            system=self.system,
            max_tokens=self.max_tokens,
            reasoning=self.thinking,
            thinking_budget=self.thinking_budget,
        )


def resolve_summary_model(ref: ModelRef, ctx: ModeContext | None = None) -> SummaryModel:
    """Window and output limit of the summarising model, from the model catalogue (``pi_compact.pi.catalog``).

    When it is the model the session is judged by and ``--context-window`` was given, that window applies. A model
    Pi does not know gets Pi's defaults for custom models (128,000-token window, 16,384 output tokens).
    """
    from pi_compact.pi.catalog import CUSTOM_CONTEXT_WINDOW, CUSTOM_MAX_TOKENS, find_model

    info = ref.info if ref.info is not None else find_model(ref.provider, ref.model_id)
    warnings: list[str] = []
    same_model = ctx is not None and ctx.model == (ref.provider, ref.model_id)
    if same_model and ctx is not None and ctx.context_window_from_flag:
        window = ctx.context_window
    elif info is not None:
        window = info.context_window
    else:
        window = CUSTOM_CONTEXT_WINDOW
    max_tokens = info.max_tokens if info is not None and info.max_tokens > 0 else CUSTOM_MAX_TOKENS
    if info is None:
        warnings.append(
            f"{ref.ref} is not in Pi's model table or models.json: assuming Pi's defaults for custom models "
            f"({window:,}-token window, {max_tokens:,} output tokens)"
        )
    return SummaryModel(ref, window, max_tokens, info, tuple(warnings))


def file_lists(plan: CompactionPlan) -> tuple[list[str], list[str]]:
    """Pi's (readFiles, modifiedFiles), also carrying the lists of a previous picompact verbatim checkpoint.

    Pi carries file lists only from its own compactions; a verbatim checkpoint is marked fromHook (as an
    extension's would be) but stores the lists in Pi's shape, so they are carried too rather than lost.
    """
    previous = plan.previous_compaction
    details = previous.raw.get("details") if previous is not None else None
    if previous is None or not previous.raw.get("fromHook") or not isinstance(details, dict):
        return plan.read_files, plan.modified_files
    from pi_compact.checkpoint.verbatim.build import is_verbatim_details

    if not is_verbatim_details(details):
        return plan.read_files, plan.modified_files
    ops = FileOps(set(plan.file_ops.read), set(plan.file_ops.written), set(plan.file_ops.edited))
    read, modified = details.get("readFiles"), details.get("modifiedFiles")
    ops.read.update(f for f in (read if isinstance(read, list) else []) if isinstance(f, str))
    ops.edited.update(f for f in (modified if isinstance(modified, list) else []) if isinstance(f, str))
    return ops.lists()


def previous_summary_source(plan: CompactionPlan) -> str | None:
    """Who wrote the summary being updated: "pi", "picompact-verbatim", "extension", or None (first round)."""
    previous = plan.previous_compaction
    if previous is None or not plan.previous_summary:
        return None
    if not previous.raw.get("fromHook"):
        return "pi"
    from pi_compact.checkpoint.verbatim.build import is_verbatim_details

    return "picompact-verbatim" if is_verbatim_details(previous.raw.get("details")) else "extension"


def _masker(redactor: Redactor | None) -> Callable[[str | None], Any]:
    def mask(text: str | None) -> Any:
        return redactor.redact(text) if redactor is not None and text else text

    return mask


@dataclass(frozen=True)
class RequestPlan:
    """What summary mode sends: ``first`` side by side (the history or its first chunk, and the turn prefix), then
    each of ``later`` (the conversation of a further chunk) in turn, with Pi's update prompt and the summary so far.
    """

    first: tuple[SummaryRequest, ...]
    later: tuple[str, ...] = ()
    focus: str | None = None
    chunk_output: int | None = None  # the output limit of every chunk request (it bounds the summary carried on)
    thinking: str = "off"

    @property
    def chunks(self) -> int:
        return 1 + len(self.later) if self.chunk_output is not None else 0

    def later_request(self, index: int, previous: str, model: SummaryModel) -> SummaryRequest:
        """The request for chunk ``index + 2``, folding it into ``previous`` (the summary of the chunks before)."""
        user = history_prompt(self.later[index], previous, self.focus)
        return fit_request("history", user, model, self.thinking, cap=self.chunk_output, chunk=(index + 2, self.chunks))

    def preview(self, model: SummaryModel) -> list[SummaryRequest]:
        """Every request, a later chunk's with a stand-in (of the largest size allowed) for the summary so far."""
        out = [r for r in self.first if r.kind == "history"]
        for index in range(len(self.later)):
            stand_in = f"[the summary of chunks 1-{index + 1}, written by the previous request]"
            out.append(self.later_request(index, stand_in, model))
        return out + [r for r in self.first if r.kind != "history"]


def plan_requests(
    plan: CompactionPlan,
    model: SummaryModel,
    options: SummaryOptions,
    redactor: Redactor | None = None,
    thinking: str = "off",
) -> RequestPlan:
    """Pi's requests for this plan; a history too large for one request is cut at message boundaries into chunks.

    A history request "fits" when its output limit, fitted to the window as Pi fits it, is at least the output
    picompact reserves for a summary (the model's limit, at most 32,768 tokens, at most a quarter of the window).
    Otherwise every chunk is sized so that its request, with the largest summary an earlier chunk may hand on,
    still leaves that much output.
    """
    mask = _masker(redactor)
    cut_mask = redactor.redact if redactor is not None else None  # a tool result masked before Pi's cut
    kinds: list[tuple[RequestKind, str]] = []
    split = plan.cut.is_split_turn and bool(plan.turn_prefix_messages)
    focus = mask(options.instructions)
    previous = mask(plan.previous_summary)
    later: tuple[str, ...] = ()
    cap: int | None = None
    if plan.messages_to_summarize or not split:
        conversation = mask(
            serialize_messages(plan.messages_to_summarize, include_thinking=options.include_thinking, mask=cut_mask)
        )
        user = history_prompt(conversation, previous, focus)
        reserve = reserved_output(model)
        whole = fit_request("history", user, model, thinking)
        if whole.max_tokens < reserve and plan.messages_to_summarize:
            parts = [
                mask(serialize_messages([m], include_thinking=options.include_thinking, mask=cut_mask))
                for m in plan.messages_to_summarize
            ]
            pieces = chunk_conversation([p for p in parts if p], model, reserve, previous, focus)
            if len(pieces) > 1:
                cap = reserve
                kinds.append(("history", history_prompt(pieces[0], previous, focus)))
                later = tuple(pieces[1:])
            else:
                kinds.append(("history", user))
        else:
            kinds.append(("history", user))
    if split:
        conversation = serialize_messages(
            plan.turn_prefix_messages, include_thinking=options.include_thinking, mask=cut_mask
        )
        kinds.append(("turn_prefix", turn_prefix_prompt(mask(conversation), focus)))
    count = 1 + len(later) if cap is not None else 0
    first = tuple(
        fit_request(
            kind,
            user,
            model,
            thinking,
            cap=cap if kind == "history" else None,
            chunk=(1, count) if kind == "history" and cap is not None else (0, 0),
        )
        for kind, user in kinds
    )
    return RequestPlan(first, later, focus, cap, thinking)


def reserved_output(model: SummaryModel) -> int:
    """The output a summary request keeps room for: the model's limit, at most 32,768, at most a quarter window."""
    window = model.context_window if model.context_window > 0 else _MIN_OUTPUT_WITH_RATIO * 4
    return max(1, min(model.max_tokens, _MIN_OUTPUT_WITH_RATIO, window // 4))


def _max_input_tokens(window: int, reserve: int) -> int:
    """The largest input (Pi's request estimate) whose margin and ``reserve`` output tokens still fit the window."""
    scaled = math.floor((window - reserve) / (1 + _SAFETY_RATIO))
    if scaled * _SAFETY_RATIO >= _SAFETY_TOKENS:
        return scaled
    return max(0, min(math.ceil(_SAFETY_TOKENS / _SAFETY_RATIO) - 1, window - reserve - _SAFETY_TOKENS))


def chunk_conversation(
    parts: Sequence[str], model: SummaryModel, reserve: int, previous: str | None, focus: str | None
) -> list[str]:
    """The serialised messages packed in order into chunks, each small enough for one request.

    A chunk holds whole messages; only a single message larger than a chunk on its own is cut (at a line break
    where there is one).
    """
    allowance = "x" * math.ceil(4 * reserve)  # the largest summary a chunk request may carry on (chars / 4 check)
    carried = previous if previous and js_len(previous) > len(allowance) else allowance
    frame = request_input_tokens(SYSTEM_PROMPT, history_prompt("", carried, focus))
    budget_tokens = _max_input_tokens(model.context_window, reserve) - frame - 1
    limit = max(1_000, math.floor(budget_tokens * _CHARS_PER_TOKEN))
    chunks: list[str] = []
    current: list[str] = []
    size = 0
    for part in parts:
        for piece in _cut_text(part, limit):
            extra = js_len(piece) + (2 if current else 0)
            if current and size + extra > limit:
                chunks.append("\n\n".join(current))
                current, size = [], 0
                extra = js_len(piece)
            current.append(piece)
            size += extra
    if current:
        chunks.append("\n\n".join(current))
    return chunks


def _cut_text(text: str, limit: int) -> list[str]:
    """text in pieces of at most ``limit`` UTF-16 units, cut after a line break where possible."""
    if js_len(text) <= limit:
        return [text]
    pieces: list[str] = []
    while js_len(text) > limit:
        head = text[:limit]
        while js_len(head) > limit:  # astral characters count twice
            head = head[:-1]
        newline = head.rfind("\n")
        if newline > limit // 2:
            head = head[: newline + 1]
        pieces.append(head)
        text = text[len(head) :]
    if text:
        pieces.append(text)
    return pieces


def fit_request(
    kind: RequestKind,
    user: str,
    model: SummaryModel,
    thinking: str = "off",
    *,
    cap: int | None = None,
    chunk: tuple[int, int] = (0, 0),
) -> SummaryRequest:
    """One request with its output limit fitted to the window, and Pi's thinking budget where it applies.

    ``cap`` lowers the output limit further (chunk requests: it bounds the summary handed to the next chunk).
    """
    from pi_compact.llm import thinking as reasoning

    level = reasoning.effective_level(model.ref, thinking)
    tokens = request_input_tokens(SYSTEM_PROMPT, user)
    limit = output_limit(model.max_tokens, model.context_window, tokens)
    budget: int | None = None
    if reasoning.uses_budget(model.ref, level):
        # pi-ai's Anthropic streamSimple: the budget goes on top of the output limit, up to the model's maximum.
        adjusted, budget = reasoning.budget_limits(level, limit, model.max_tokens)
        limit = output_limit(adjusted, model.context_window, tokens)
        budget = min(budget, max(0, limit - reasoning.MIN_ANSWER_TOKENS))
    if cap is not None and limit > cap:
        limit = cap
        if budget is not None:
            budget = min(budget, max(0, limit - reasoning.MIN_ANSWER_TOKENS))
    return SummaryRequest(kind, SYSTEM_PROMPT, user, limit, tokens, level, budget, chunk[0], chunk[1])


def choose_thinking(ctx: ModeContext, options: SummaryOptions) -> ThinkingChoice:
    """``--thinking``, else the level Pi would run the session with (branch, then settings, then medium)."""
    from pi_compact.llm.thinking import ThinkingChoice, session_thinking_level

    if options.thinking is not None:
        return ThinkingChoice(options.thinking, "--thinking")
    settings: dict[str, Any] = {}
    try:
        from pi_compact.pi.settings import load_settings

        settings = load_settings(ctx.session.cwd or ".").merged
    except PiCompactError:  # unreadable settings were already reported by check; Pi's default applies
        settings = {}
    return session_thinking_level(ctx.branch.entries, settings)


def fit_problems(requests: Sequence[SummaryRequest], model: SummaryModel) -> list[str]:
    """Requests whose input leaves (almost) no room for the answer in the model's window."""
    problems = []
    for request in requests:
        if model.context_window > 0 and request.input_tokens + _SAFETY_TOKENS >= model.context_window:
            problems.append(
                f"the {request_label(request.kind)} request (~{request.input_tokens:,} tokens) does not fit "
                f"{model.name}'s {model.context_window:,}-token window; pick a model with a larger window (--model)"
            )
    return problems


def request_label(kind: RequestKind) -> str:
    return "turn-prefix" if kind == "turn_prefix" else "history"
