"""``picompact lookup``: a model answers a question from the raw history, searching it with three tools.

The model works in its own conversation with exactly ``list_entries``, ``grep`` and ``show_entry`` over the
rendered raw branch (never the compacted view), the same functions and limits as ``picompact list/grep/show``.

Budgets. A *search* is a tool call with new arguments. Following a page is free: a call with the same tool and
the same arguments as an earlier call, carrying the cursor that call's result returned, not used before. Any
other call with a cursor (a replayed one, one from another query, changed arguments) is a search. The search
phase ends when the model answers, when it asks for a search beyond the budget (those calls are not run), after
``3 × budget`` model calls, or when the results grow past ``CONVERSATION_CHARS``. Unless the model answered, one
last call *without tools* writes up what was found, from a text log of the search (a log rather than the tool
conversation, because some providers refuse tool messages in a request without tools). If that call fails, the
latest text the model wrote is returned, marked incomplete.

Sizes. One tool result is at most ``MAX_RESULT_CHARS`` characters (pages are shortened to fit, so their cursors
stay exact); every model call may write at most ``MAX_OUTPUT_TOKENS`` tokens; the answer returned is cut at
``MAX_ANSWER_CHARS`` characters.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

import orjson

from pi_compact.errors import (
    CursorError,
    NotFoundError,
    OptionError,
    PatternError,
    ProviderError,
    UsageError,
)
from pi_compact.llm.providers import ModelRef
from pi_compact.llm.types import Message, Request, Response, ToolCall, Usage
from pi_compact.lookup import prompts
from pi_compact.lookup.tools import (
    MAX_RESULT_CHARS,
    BadArguments,
    Tools,
    parse_call,
    plural,
)
from pi_compact.search.pages import DEFAULT_LIMITS, Limits
from pi_compact.search.quotes import Citation, CitationJSON, Quote, QuoteJSON, find_citations, verify_quotes
from pi_compact.search.render import entry_label
from pi_compact.search.transcript import Transcript
from pi_compact.session.entries import JsonDict

DEFAULT_BUDGET = 10
MAX_BUDGET = 200
CALL_LIMIT_FACTOR = 3
MAX_ANSWER_CHARS = 20_000
MAX_OUTPUT_TOKENS = 8_192
CONVERSATION_CHARS = 400_000
_OLD_RESULT_CHARS = 2_000  # what the write-up log keeps of an older result when the log is too long

Progress = Callable[[str], None]
CompleteFn = Callable[..., Response]


@dataclass(frozen=True, slots=True)
class LookupOptions:
    budget: int = DEFAULT_BUDGET  # substantive searches
    timeout: float = 120.0  # seconds per model call
    max_retries: int = 3  # HTTP-level retries per call (429, 5xx, timeouts)
    limits: Limits = DEFAULT_LIMITS
    max_conversation_chars: int = CONVERSATION_CHARS  # results beyond this end the search (less for small windows)
    redact: bool = True  # mask detected secrets in everything sent to the model (pi_compact.redact)

    @property
    def call_limit(self) -> int:
        """Model calls allowed while searching (the write-up call comes on top)."""
        return CALL_LIMIT_FACTOR * self.budget

    def __post_init__(self) -> None:
        if isinstance(self.budget, bool) or not isinstance(self.budget, int) or not 1 <= self.budget <= MAX_BUDGET:
            raise OptionError(("budget",), f"must be a whole number from 1 to {MAX_BUDGET} (got {self.budget!r})")
        if not (self.timeout > 0) or self.timeout == float("inf"):
            raise OptionError(("timeout",), f"must be a positive number of seconds (got {self.timeout!r})")


# ---------------------------------------------------------------------------------------------------------------
# Results


class ToolRecordJSON(TypedDict):
    tool: str
    arguments: JsonDict
    kind: str
    counted: bool
    ok: bool
    error: str | None
    result_chars: int


@dataclass(frozen=True, slots=True)
class ToolRecord:
    """One tool call of the search and what became of it."""

    call_id: str
    tool: str
    arguments: JsonDict
    kind: str  # "search" (counted), "continuation" (free), "refused" (over budget, not run)
    ok: bool  # the tool ran without error
    error: str | None
    result_chars: int
    next_cursor: str | None

    @property
    def counted(self) -> bool:
        return self.kind == "search"

    def to_json(self) -> ToolRecordJSON:
        return {
            "tool": self.tool,
            "arguments": self.arguments,
            "kind": self.kind,
            "counted": self.counted,
            "ok": self.ok,
            "error": self.error,
            "result_chars": self.result_chars,
        }


class LookupJSON(TypedDict):
    """``LookupResult.to_json()``: what ``lookup --json`` prints of the lookup."""

    question: str
    answer: str
    complete: bool
    found: bool
    not_found_reply: bool
    stopped_by: str | None
    writeup: str | None
    error: str | None
    answer_truncated: bool
    citations: list[CitationJSON]
    quotes: list[QuoteJSON]
    unverified_quotes: int
    unknown_citations: int
    searches: dict[str, int]
    model_calls: dict[str, int]
    tool_calls: list[ToolRecordJSON]
    model: dict[str, Any]
    usage: dict[str, Any]
    leaf_id: str | None


@dataclass(frozen=True, slots=True)
class LookupResult:
    question: str
    answer: str
    complete: bool  # the model answered within its budgets (and its answer was not cut off)
    stopped_by: str | None  # why searching ended early: budget, call_limit, context_limit, empty_reply, ...
    writeup: str | None  # None (not needed), "ok" or "failed"
    error: str | None  # why the write-up failed
    answer_truncated: bool  # cut at the output limit or at MAX_ANSWER_CHARS
    not_found_reply: bool  # the answer starts with "Not found in this session."
    citations: tuple[Citation, ...]
    quotes: tuple[Quote, ...]
    searches_used: int
    budget: int
    model_calls: int  # all of them, the write-up included
    call_limit: int
    tool_calls: tuple[ToolRecord, ...]
    model: str  # provider/id
    model_source: str
    usage: Usage
    cost: float | None
    leaf_id: str | None

    @property
    def found(self) -> bool:
        """Something was found: the answer cites at least one existing entry and does not say "not found"."""
        return not self.not_found_reply and any(c.exists for c in self.citations)

    @property
    def unverified_quotes(self) -> tuple[Quote, ...]:
        return tuple(q for q in self.quotes if not q.verified)

    @property
    def unknown_citations(self) -> tuple[Citation, ...]:
        return tuple(c for c in self.citations if not c.exists)

    def to_json(self) -> LookupJSON:
        return {
            "question": self.question,
            "answer": self.answer,
            "complete": self.complete,
            "found": self.found,
            "not_found_reply": self.not_found_reply,
            "stopped_by": self.stopped_by,
            "writeup": self.writeup,
            "error": self.error,
            "answer_truncated": self.answer_truncated,
            "citations": [c.to_json() for c in self.citations],
            "quotes": [q.to_json() for q in self.quotes],
            "unverified_quotes": len(self.unverified_quotes),
            "unknown_citations": len(self.unknown_citations),
            "searches": {"used": self.searches_used, "budget": self.budget},
            "model_calls": {"used": self.model_calls, "limit": self.call_limit + 1},
            "tool_calls": [t.to_json() for t in self.tool_calls],
            "model": {"ref": self.model, "source": self.model_source},
            "usage": {
                "input_tokens": self.usage.input_tokens,
                "output_tokens": self.usage.output_tokens,
                "cache_read_tokens": self.usage.cache_read_tokens,
                "cache_write_tokens": self.usage.cache_write_tokens,
                "cost": self.cost,
            },
            "leaf_id": self.leaf_id,
        }


# ---------------------------------------------------------------------------------------------------------------
# Choosing the model


def session_model(transcript: Transcript) -> tuple[str, str] | None:
    """The model the session was last using on this branch (latest model change or assistant reply)."""
    from pi_compact.pi.projection import session_model as branch_model

    return branch_model(list(transcript.branch.entries))[0]


# ---------------------------------------------------------------------------------------------------------------
# The loop


@dataclass
class _Turn:
    """One model reply of the search phase and the results of its calls, for the write-up log."""

    text: str
    calls: list[tuple[ToolCall, ToolRecord, str]] = field(default_factory=list)


def overview(transcript: Transcript) -> str:
    """What the model is told about the history before it searches."""
    entries = transcript.entries
    if not entries:
        return "The history of this branch is empty."
    stamps = [e.timestamp for e in entries if e.timestamp]
    span = f", from {stamps[0]} to {stamps[-1]}" if stamps else ""
    users = sum(1 for e in entries if e.role == "user")
    compactions = sum(1 for e in entries if e.type == "compaction")
    extra = f", {compactions} compaction{'s' if compactions != 1 else ''}" if compactions else ""
    return (
        f"The history of this branch has {plural(len(entries), 'entry', 'entries')} "
        f"({plural(users, 'user message', 'user messages')}{extra}){span}; "
        f"the last entry is {entry_label(entries[-1])}."
    )


def _add(a: Usage, b: Usage) -> Usage:
    return Usage(
        a.input_tokens + b.input_tokens,
        a.output_tokens + b.output_tokens,
        a.cache_read_tokens + b.cache_read_tokens,
        a.cache_write_tokens + b.cache_write_tokens,
    )


def _write_log(turns: Sequence[_Turn], limit: int) -> str:
    """The search as text for the write-up: every call and its result, older results shortened if needed."""
    results: list[str] = [text for turn in turns for _, _, text in turn.calls]
    total = sum(len(r) for r in results)
    shortened = list(results)
    for i, text in enumerate(results[:-1] if len(results) > 1 else []):
        if total <= limit:
            break
        if len(text) > _OLD_RESULT_CHARS:
            keep = text[:_OLD_RESULT_CHARS]
            shortened[i] = keep + f"\n[… {len(text) - _OLD_RESULT_CHARS:,} more characters of this result left out]"
            total -= len(text) - len(shortened[i])
    out: list[str] = []
    n = 0
    for number, turn in enumerate(turns, 1):
        if turn.text.strip():
            out.append(f"[turn {number}] you wrote:")
            out.extend("| " + line for line in turn.text.strip().split("\n"))
        for call, record, _ in turn.calls:
            args = orjson.dumps(call.arguments).decode() if call.raw_arguments is None else call.raw_arguments
            tag = {"search": "a search", "continuation": "a free continuation", "refused": "not run"}[record.kind]
            out.append(f"[turn {number}] call {call.name} {args} ({tag}):")
            out.extend("| " + line for line in shortened[n].split("\n"))
            n += 1
    return "\n".join(out) if out else "(no calls were made)"


def _truncate(answer: str) -> tuple[str, bool]:
    if len(answer) <= MAX_ANSWER_CHARS:
        return answer, False
    return answer[:MAX_ANSWER_CHARS] + f"\n[answer cut at {MAX_ANSWER_CHARS:,} characters]", True


def fit_to_window(window: int, max_tokens: int, fixed_chars: int) -> tuple[int, int, int]:
    """(output tokens per call, conversation characters, characters per result) for a model's window.

    Sized at 3 characters a token (dense text counts more than Pi's 3.5): the output and the fixed prompt
    (system prompt, tool schemas) come off the window; the search stops once results pass 60% of what is left,
    which leaves room for the last turn's results (each at most a fifth of the conversation) and the answer.
    """
    max_tokens = max(256, min(max_tokens, window // 4))
    room = max(0, (window - max_tokens) * 3 - fixed_chars)
    conversation = min(CONVERSATION_CHARS, window * 2, max(4_000, room * 6 // 10))
    return max_tokens, conversation, min(MAX_RESULT_CHARS, max(1_500, conversation // 5))


def _is_not_found(answer: str) -> bool:
    head = answer.lstrip(" \t\r\n*_#>\"'`").lower()
    return head.startswith(prompts.NOT_FOUND.lower().rstrip("."))


def run_lookup(
    transcript: Transcript,
    question: str,
    model: ModelRef,
    *,
    api_key: Any = None,
    options: LookupOptions | None = None,
    progress: Progress | None = None,
    complete_fn: CompleteFn | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> LookupResult:
    """Let the model search the transcript and answer; check its quotes and citations against the history.

    ``api_key`` None looks the key up as ``llm.complete`` does. ``progress(label)`` is told what is happening
    before each model call (the CLI shows it in a spinner). Raises ProviderError when the very first call fails
    (nothing was found yet); later failures end the search and lead to the write-up.
    """
    from pi_compact.llm import complete

    opts = options or LookupOptions()
    question = question.strip()
    if not question:
        raise UsageError("the question is empty")
    lookup = _Lookup(transcript, question, model, opts, complete_fn or complete, api_key, progress, sleep)
    lookup.search()
    if lookup.answer is None:
        lookup.write_up()
    return lookup.result()


class _Lookup:
    """One lookup's state: the conversation with the model, the budgets spent, and how the search ended."""

    def __init__(
        self,
        transcript: Transcript,
        question: str,
        model: ModelRef,
        opts: LookupOptions,
        ask: CompleteFn,
        api_key: Any,
        progress: Progress | None,
        sleep: Callable[[float], None],
    ) -> None:
        from pi_compact.redact import Redactor

        self.transcript, self.question, self.model, self.opts = transcript, question, model, opts
        self.ask, self.api_key, self.progress, self.sleep = ask, api_key, progress, sleep
        limits = self.limits = opts.limits
        self.tool_defs = prompts.tools(limits)
        self.system = prompts.system_prompt(opts.budget, opts.call_limit, limits)
        self.redactor = Redactor() if opts.redact else None
        self.about = self.mask(overview(transcript))
        self.asked = self.mask(question)
        self.messages: list[Message] = [Message.user(prompts.first_message(self.asked, self.about))]
        info = model.info
        window = info.context_window if info is not None and info.context_window else 128_000
        max_tokens = (
            min(MAX_OUTPUT_TOKENS, info.max_tokens) if info is not None and info.max_tokens else MAX_OUTPUT_TOKENS
        )
        # The branch is never sent whole: what the conversation may grow to is fitted to the model's window.
        fixed = len(self.system) + len(orjson.dumps([t.parameters for t in self.tool_defs])) + 2_000
        self.max_tokens, limit, result_chars = fit_to_window(window, max_tokens, fixed)
        self.conversation_limit = min(opts.max_conversation_chars, limit)
        self.tools = Tools(transcript, limits, result_chars, redactor=self.redactor)
        self.usage = Usage()
        self.calls = 0
        self.searches = 0
        self.records: list[ToolRecord] = []
        self.turns: list[_Turn] = []
        self.answer: str | None = None
        self.truncated = False
        self.stopped_by: str | None = None
        self.latest_text = ""
        self.search_error: str | None = None
        self.writeup: str | None = None
        self.error: str | None = None
        self.conversation = len(self.messages[0].text)

    def mask(self, text: str) -> str:
        return self.redactor.redact(text) if self.redactor is not None else text

    def call_model(self, request: Request) -> Response:
        self.calls += 1
        o = self.opts
        response = self.ask(
            request,
            model=self.model,
            api_key=self.api_key,
            timeout=o.timeout,
            max_retries=o.max_retries,
            sleep=self.sleep,
        )
        self.usage = _add(self.usage, response.usage)
        return response

    def search(self) -> None:
        """The search phase: model calls with the tools until the model answers or a budget ends it."""
        opts = self.opts
        while True:
            if self.calls >= opts.call_limit:
                self.stopped_by = "call_limit"
                return
            if self.progress is not None:
                self.progress(
                    f"searching with {self.model.ref} (call {self.calls + 1}, {self.searches}/{opts.budget} searches)"
                )
            request = Request(self.messages, system=self.system, tools=self.tool_defs, max_tokens=self.max_tokens)
            try:
                response = self.call_model(request)
            except ProviderError as exc:
                if not self.records:
                    raise
                self.stopped_by, self.search_error = "provider_error", exc.message
                return
            if response.text.strip():
                self.latest_text = response.text
            if not response.tool_calls:
                if response.text.strip():
                    self.answer = response.text
                    self.truncated = response.stop_reason == "length"
                else:
                    self.stopped_by = "empty_reply"
                return
            if self._run_calls(response):
                self.stopped_by = "budget"
                return
            if self.conversation > self.conversation_limit:
                self.stopped_by = "context_limit"
                return

    def _run_calls(self, response: Response) -> bool:
        """Run a reply's tool calls and add them to the conversation; whether one asked past the budget."""
        self.messages.append(response.to_message())
        self.conversation += len(response.text)
        turn = _Turn(response.text)
        self.turns.append(turn)
        over_budget = False
        for call in response.tool_calls:
            text, record = _run_call(self.tools, call, self.limits, self.searches, self.opts.budget)
            text = self.mask(text)
            if record.kind == "search":
                self.searches += 1
            elif record.kind == "refused":
                over_budget = True
            self.records.append(record)
            turn.calls.append((call, record, text))
            self.messages.append(Message.tool_result(call, text, is_error=not record.ok))
            self.conversation += len(text)
        return over_budget

    def write_up(self) -> None:
        """One last call without tools writes up what was found, from a log of the search; if it fails, the
        latest text the model wrote stands, marked incomplete."""
        if self.progress is not None:
            self.progress(f"writing up with {self.model.ref}")
        log = self.mask(_write_log(self.turns, self.conversation_limit))
        request = Request(
            [Message.user(prompts.writeup_message(self.asked, self.about, self.stopped_by or "", log))],
            system=prompts.writeup_system_prompt(),
            max_tokens=self.max_tokens,
        )
        try:
            response = self.call_model(request)
        except ProviderError as exc:
            self.writeup, self.error = "failed", exc.message
            self.answer = self.latest_text
            return
        if response.text.strip():
            self.writeup, self.answer = "ok", response.text
            self.truncated = response.stop_reason == "length"
        else:
            self.writeup, self.error = "failed", "the write-up was empty"
            self.answer = self.latest_text

    def result(self) -> LookupResult:
        from pi_compact.pi.catalog import estimate_cost

        answer, cut = _truncate((self.answer or "").strip())
        truncated = self.truncated or cut
        usage, info = self.usage, self.model.info
        cost = None
        if info is not None:
            cost = estimate_cost(
                info, usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens
            )
        transcript, leaf = self.transcript, self.transcript.leaf
        return LookupResult(
            question=self.question,
            answer=answer,
            complete=self.stopped_by is None and not truncated,
            stopped_by=self.stopped_by,
            writeup=self.writeup,
            error=self.error or self.search_error,
            answer_truncated=truncated,
            not_found_reply=_is_not_found(answer),
            citations=find_citations(transcript, answer),
            quotes=verify_quotes(transcript, answer),
            searches_used=self.searches,
            budget=self.opts.budget,
            model_calls=self.calls,
            call_limit=self.opts.call_limit,
            tool_calls=tuple(self.records),
            model=self.model.ref,
            model_source=self.model.source,
            usage=usage,
            cost=cost,
            leaf_id=entry_label(leaf) if leaf is not None else None,
        )


def _run_call(tools: Tools, call: ToolCall, limits: Limits, searches: int, budget: int) -> tuple[str, ToolRecord]:
    """Run one tool call (or refuse it when the budget is spent) and describe what happened."""
    arguments = dict(call.arguments) if call.raw_arguments is None else {"raw": call.raw_arguments}
    try:
        params, cursor = parse_call(call, limits)
    except BadArguments as exc:
        kind = "refused" if searches >= budget else "search"
        text = _refusal(budget) if kind == "refused" else f"error: {exc}"
        return text, ToolRecord(call.id, call.name, arguments, kind, False, str(exc), len(text), None)
    kind = tools.classify(call.name, params, cursor)
    if kind == "search" and searches >= budget:
        text = _refusal(budget)
        return text, ToolRecord(call.id, call.name, arguments, "refused", False, "budget used up", len(text), None)
    try:
        text, next_cursor = tools.run(call.name, params, cursor)
    except (UsageError, PatternError, CursorError, NotFoundError) as exc:
        text = f"error: {exc.message}"
        return text, ToolRecord(call.id, call.name, arguments, kind, False, exc.message, len(text), None)
    return text, ToolRecord(call.id, call.name, arguments, kind, True, None, len(text), next_cursor)


def _refusal(budget: int) -> str:
    return (
        f"not run: all {budget} searches of the budget are used. No more searching: the answer is written up "
        "from the results so far."
    )


__all__ = [
    "CALL_LIMIT_FACTOR",
    "CONVERSATION_CHARS",
    "DEFAULT_BUDGET",
    "MAX_ANSWER_CHARS",
    "MAX_OUTPUT_TOKENS",
    "MAX_RESULT_CHARS",
    "LookupOptions",
    "LookupResult",
    "ToolRecord",
    "overview",
    "run_lookup",
    "session_model",
]
