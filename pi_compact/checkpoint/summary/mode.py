"""``SummaryMode``: the ``CheckpointMode`` that asks a model for Pi's structured summary."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pi_compact.checkpoint.mode import CheckpointResult, ModeContext
from pi_compact.checkpoint.summary.preview import SummaryPreview, preview_summary
from pi_compact.checkpoint.summary.prompts import NO_PRIOR_HISTORY, SPLIT_TURN_SEPARATOR, RequestKind
from pi_compact.checkpoint.summary.replies import clean_reply, combine_usage, hard_failure, pi_usage, reply_problem
from pi_compact.checkpoint.summary.requests import (
    SummaryModel,
    SummaryOptions,
    SummaryRequest,
    choose_thinking,
    file_lists,
    fit_problems,
    pi_token_estimate,
    plan_requests,
    request_label,
    resolve_summary_model,
)
from pi_compact.errors import ProviderError, UsageError
from pi_compact.pi.plan import CompactionPlan, format_file_operations
from pi_compact.session.entries import JsonDict

if TYPE_CHECKING:
    from pi_compact.llm import Secret
    from pi_compact.redact import Redactor


# ---------------------------------------------------------------------------------------------------------------
# The mode


Waiting = Callable[[str], AbstractContextManager[Any]]


@dataclass(frozen=True)
class SummaryCheckpoint(CheckpointResult):
    """A CheckpointResult that also says which model wrote it and how many requests that took."""

    model: str = ""
    requests: int = 0
    chunks: int = 0  # the history was summarised in this many chunks (0: in one request)


@dataclass
class _Answer:
    texts: dict[RequestKind, str] = field(default_factory=dict)
    usage: JsonDict | None = None
    requests: int = 0


def merge_summary(plan: CompactionPlan, texts: Mapping[RequestKind, str]) -> str:
    """Pi's merge: the history summary, or on a split turn history + separator + turn-prefix summary."""
    if "turn_prefix" not in texts:
        return texts["history"]
    if "history" in texts:
        history = texts["history"]
    else:  # nothing before the turn: Pi keeps the previous summary as it is (``??``: an empty one stays empty)
        history = plan.previous_summary if plan.previous_summary is not None else NO_PRIOR_HISTORY
    return f"{history}{SPLIT_TURN_SEPARATOR}{texts['turn_prefix']}"


def _ask(
    requests: Sequence[SummaryRequest],
    model: SummaryModel,
    key: Secret | None,
    options: SummaryOptions,
    waiting: Waiting,
    sleep: Callable[[float], None],
) -> _Answer:
    """Send the requests side by side, check the replies, ask once more for the unusable ones."""
    from pi_compact.llm import complete_many

    answer = _Answer()
    pending = list(requests)
    for attempt in (1, 2):
        label = f"summarising with {model.name}" + (f" ({len(pending)} requests)" if len(pending) > 1 else "")
        chunked = [r for r in pending if r.chunk]
        if chunked:
            label += f", chunk {chunked[0].chunk} of {chunked[0].chunks}"
        if attempt == 2:
            label += ", second try"
        with waiting(label):
            responses = complete_many(
                [r.to_request() for r in pending],
                model=model.ref,
                api_key=key,
                timeout=options.timeout,
                max_retries=options.max_retries,
                sleep=sleep,
            )
        retry: list[tuple[SummaryRequest, str]] = []
        for request, response in zip(pending, responses, strict=True):
            answer.requests += 1
            usage = pi_usage(response.usage, model.info)
            answer.usage = usage if answer.usage is None else combine_usage(answer.usage, usage)
            hard = hard_failure(response, request, model)
            if hard is not None:
                raise ProviderError(
                    f"{model.name}: {request_label(request.kind)} summary failed: {hard}; nothing was written"
                )
            text = clean_reply(response.text)
            problem = reply_problem(text, request.kind, request.max_tokens)
            if problem is None:
                answer.texts[request.kind] = text
            else:
                retry.append((request, problem))
        if not retry:
            return answer
        if attempt == 2:
            request, problem = retry[0]
            raise ProviderError(
                f"{model.name}: the {request_label(request.kind)} summary is unusable after two tries: {problem}; "
                "nothing was written"
            )
        pending = [request for request, _ in retry]
    raise AssertionError("unreachable")  # pragma: no cover


@dataclass
class SummaryMode:
    """The LLM summary mode: Pi's structured summary, written by a model (``CheckpointMode``).

    ``waiting(label)`` wraps each wait for the model (a spinner). ``env`` is where the model choice and the key are
    looked up (default ``os.environ``); ``api_key`` overrides the key. Answers are remembered per exact set of
    requests, so the re-plan after a concurrent append does not pay twice for an unchanged span.
    """

    options: SummaryOptions = field(default_factory=SummaryOptions)
    env: Mapping[str, str] | None = None
    api_key: Secret | str | None = None
    waiting: Waiting | None = None
    sleep: Callable[[float], None] = time.sleep
    _remembered: dict[tuple[Any, ...], _Answer] = field(default_factory=dict, init=False, repr=False)
    _redactor: Redactor | None = field(default=None, init=False, repr=False)

    name = "summary"

    def __post_init__(self) -> None:
        from pi_compact.redact import Redactor

        # One redactor for the whole run: a re-plan after a concurrent append numbers the same secrets the same way.
        self._redactor = Redactor() if self.options.redact else None

    @property
    def environ(self) -> Mapping[str, str]:
        return os.environ if self.env is None else self.env

    def build(self, plan: CompactionPlan, ctx: ModeContext) -> SummaryCheckpoint:
        from pi_compact.llm import Secret, choose_model, require_api_key

        opts = self.options
        redactor = self._redactor
        wait = self.waiting or (lambda _label: nullcontext())
        environ = self.environ
        ref = choose_model(ctx.model, opts.model, environ, base_url=opts.base_url)
        model = resolve_summary_model(ref, ctx)
        thinking = choose_thinking(ctx, opts)
        request_plan = plan_requests(plan, model, opts, redactor, thinking.level)
        requests = list(request_plan.first)
        problems = fit_problems(requests, model)
        if problems:
            raise UsageError(problems[0])
        memo = (
            ref.ref,
            ref.base_url,
            tuple((r.kind, r.user, r.max_tokens, r.thinking) for r in requests),
            request_plan.later,
        )
        answer = self._remembered.get(memo)
        if answer is None:
            key = Secret(self.api_key) if isinstance(self.api_key, str) else self.api_key
            if key is None:
                key = require_api_key(ref, environ)
            answer = _ask(requests, model, key, opts, wait, self.sleep)
            # A history in chunks: fold each further chunk into the summary so far, with Pi's update prompt.
            for index in range(len(request_plan.later)):
                request = request_plan.later_request(index, answer.texts["history"], model)
                problems = fit_problems([request], model)
                if problems:
                    raise UsageError(problems[0])
                more = _ask([request], model, key, opts, wait, self.sleep)
                answer.texts["history"] = more.texts["history"]
                assert answer.usage is not None and more.usage is not None
                answer.usage = combine_usage(answer.usage, more.usage)
                answer.requests += more.requests
            self._remembered[memo] = answer
        read_files, modified_files = file_lists(plan)
        summary = merge_summary(plan, answer.texts) + format_file_operations(read_files, modified_files)
        if redactor is not None:  # the saved summary never holds a detected secret (a previous summary may have)
            summary = redactor.redact(summary)
        return SummaryCheckpoint(
            summary=summary,
            details={"readFiles": read_files, "modifiedFiles": modified_files},
            reminder=None,
            from_hook=False,
            usage=answer.usage,
            tokens=pi_token_estimate(summary),
            trimmed=False,
            warnings=model.warnings,
            redacted=redactor.counts if redactor is not None else None,
            model=model.name,
            requests=answer.requests,
            chunks=request_plan.chunks,
        )

    def preview(self, plan: CompactionPlan, ctx: ModeContext) -> SummaryPreview:
        """The requests ``build`` would send, their size and cost; sends nothing."""
        return preview_summary(plan, ctx, self.options, env=self.environ)
