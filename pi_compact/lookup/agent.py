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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

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
from pi_compact.search.pages import (
    DEFAULT_LIMITS,
    EntryPage,
    GrepPage,
    GrepQuery,
    Limits,
    ShowPage,
    grep,
    list_entries,
    show_entry,
)
from pi_compact.search.quotes import Citation, Quote, find_citations, verify_quotes
from pi_compact.search.render import entry_label, safe_text
from pi_compact.search.transcript import Transcript
from pi_compact.session.entries import JsonDict

if TYPE_CHECKING:
    from pi_compact.lookup.masking import PageMasker
    from pi_compact.redact import Redactor

DEFAULT_BUDGET = 10
MAX_BUDGET = 200
CALL_LIMIT_FACTOR = 3
MAX_RESULT_CHARS = 30_000
MAX_ANSWER_CHARS = 20_000
MAX_OUTPUT_TOKENS = 8_192
CONVERSATION_CHARS = 400_000
_OLD_RESULT_CHARS = 2_000  # what the write-up log keeps of an older result when the log is too long
_LINE_BREAKS = str.maketrans(
    {c: f"\\x{ord(c):02x}" for c in "\r\x0b\x0c\x1c\x1d\x1e\x85"} | {"\u2028": "\\u2028", "\u2029": "\\u2029"}
)

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

    def to_json(self) -> JsonDict:
        return {
            "tool": self.tool,
            "arguments": self.arguments,
            "kind": self.kind,
            "counted": self.counted,
            "ok": self.ok,
            "error": self.error,
            "result_chars": self.result_chars,
        }


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

    def to_json(self) -> JsonDict:
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
    from pi_compact.projection import session_model as branch_model

    return branch_model(list(transcript.branch.entries))[0]


# ---------------------------------------------------------------------------------------------------------------
# Tool arguments


class _BadArguments(Exception):
    """Tool arguments the model got wrong; the message is sent back to it as the tool's result."""


_TOOL_KEYS = {
    "list_entries": ("role", "since", "limit", "cursor"),
    "grep": ("pattern", "ignore_case", "fixed", "context", "role", "section", "max_count", "cursor"),
    "show_entry": ("id", "cursor"),
}


def _text_arg(args: Mapping[str, Any], name: str, *, required: bool = False) -> str | None:
    value = args.get(name)
    if value is None:
        if required:
            raise _BadArguments(f"{name} is required")
        return None
    if not isinstance(value, str):
        raise _BadArguments(f"{name} must be a string")
    if required and not value:
        raise _BadArguments(f"{name} must not be empty")
    return value


def _bool_arg(args: Mapping[str, Any], name: str) -> bool:
    value = args.get(name)
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise _BadArguments(f"{name} must be true or false")


def _int_arg(args: Mapping[str, Any], name: str, low: int, high: int) -> int | None:
    value = args.get(name)
    if value is None:
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _BadArguments(f"{name} must be a whole number")
    if not low <= value <= high:
        raise _BadArguments(f"{name} must be from {low} to {high} (got {value})")
    return value


def _names_arg(args: Mapping[str, Any], name: str) -> tuple[str, ...] | None:
    value = args.get(name)
    if value is None:
        return None
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise _BadArguments(f"{name} must be a list of strings")
    names = sorted({part.strip() for item in items for part in item.split(",") if part.strip()})
    return tuple(names) or None


def _parse(call: ToolCall, limits: Limits) -> tuple[dict[str, Any], str | None]:
    """The call's arguments with defaults filled in (what decides the result), and its cursor."""
    if call.name not in _TOOL_KEYS:
        raise _BadArguments(f"unknown tool {call.name!r}: use list_entries, grep or show_entry")
    if call.raw_arguments is not None:
        raise _BadArguments("the arguments are not a JSON object")
    args = call.arguments
    cursor = _text_arg(args, "cursor") or None
    if call.name == "list_entries":
        return {
            "role": _names_arg(args, "role"),
            "since": _text_arg(args, "since"),
            "limit": _int_arg(args, "limit", 1, limits.list_limit),
        }, cursor
    if call.name == "grep":
        return {
            "pattern": _text_arg(args, "pattern", required=True),
            "ignore_case": _bool_arg(args, "ignore_case"),
            "fixed": _bool_arg(args, "fixed"),
            "context": _int_arg(args, "context", 0, limits.max_context) or 0,
            "role": _names_arg(args, "role"),
            "section": _names_arg(args, "section"),
            "max_count": _int_arg(args, "max_count", 1, limits.grep_max_count),
        }, cursor
    return {"id": (_text_arg(args, "id", required=True) or "").strip()}, cursor


def _signature(tool: str, params: Mapping[str, Any]) -> bytes:
    return orjson.dumps([tool, params], option=orjson.OPT_SORT_KEYS)


# ---------------------------------------------------------------------------------------------------------------
# Running the tools and writing their results as text


def _line(text: str) -> str:
    return text.translate(_LINE_BREAKS)


def _more(tool: str, cursor: str | None, extra: str = "") -> str:
    if cursor is None:
        return "(end of results)"
    return f'(more: call {tool} again with the same arguments{extra} and cursor="{cursor}")'


def _plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def format_list(page: EntryPage, name: str = "list_entries") -> str:
    """A list page as the model reads it: ``list``'s plain lines between a count and the way on (``name``: the
    tool's name as the model knows it, for the way on; the same in the two other formats)."""
    head = f"list_entries: {_plural(len(page.entries), 'entry', 'entries')} on this page, {page.total} in all"
    return "\n".join([head, *(_line(line) for line in page.text_lines()), _more(name, page.next_cursor)])


def format_grep(page: GrepPage, name: str = "grep") -> str:
    """A grep page as the model reads it: ``grep``'s plain lines (each names its entry) between a count and the
    way on."""
    if not page.matches:
        return f"grep: no matches ({page.entries_searched} entries searched)\n{_more(name, page.next_cursor)}"
    count = _plural(len(page.matches), "match", "matches")
    entries = _plural(len({m.entry_id for m in page.matches}), "entry", "entries")
    lines = [f"grep: {count} in {entries} on this page", *(_line(line) for line in page.text_lines())]
    lines.append(_more(name, page.next_cursor))
    return "\n".join(lines)


def format_show(page: ShowPage, name: str = "show_entry") -> str:
    info = page.entry
    lines = [
        f"show_entry {info.id} ({info.role or info.type}, {info.timestamp or 'no timestamp'}): page {page.page} "
        f"of {page.pages}, {page.total_lines} lines and {page.total_chars:,} characters in all. Every line below "
        f"belongs to ENTRY {info.id}."
    ]
    for line in page.lines:
        text = _line(safe_text(line.text))
        if line.offset > 0:
            text = "…" + text
        if line.offset + len(line.text) < line.length:
            text += "… (continues on the next page)"
        lines.append(f"{line.number}:{line.section}:{text}")
    lines.append(_more(name, page.next_cursor, f' (id="{info.id}")'))
    return "\n".join(lines)


def _cut(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text.rfind("\n", 0, limit - 200)
    cut = cut if cut > 0 else limit - 200
    return text[:cut] + f"\n[result cut at {limit:,} characters: narrow the search to see the rest]"


class _Tools:
    """The three tools over one transcript, with the budget bookkeeping for continuation pages."""

    def __init__(
        self,
        transcript: Transcript,
        limits: Limits,
        result_chars: int = MAX_RESULT_CHARS,
        names: Mapping[str, str] | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        self.transcript = transcript
        # Pages are masked before they are cut to a window, a page or a preview (``lookup.masking``).
        self.masker: PageMasker | None = None
        if redactor is not None:
            from pi_compact.lookup.masking import PageMasker

            self.masker = PageMasker(transcript, redactor)
        self.names = names or {}  # a tool's name as the model knows it, where that differs
        self.limits = limits
        self.result_chars = result_chars  # one result at most (less than MAX_RESULT_CHARS for small windows)
        self.issued: dict[str, bytes] = {}  # cursor -> signature of the call whose result returned it
        self.used: set[str] = set()

    def name(self, tool: str) -> str:
        return self.names.get(tool, tool)

    def classify(self, tool: str, params: Mapping[str, Any], cursor: str | None) -> str:
        """A continuation for the unused cursor that the same call's result returned; anything else is a search."""
        if cursor is not None and cursor not in self.used and self.issued.get(cursor) == _signature(tool, params):
            return "continuation"
        return "search"

    def run(self, tool: str, params: dict[str, Any], cursor: str | None) -> tuple[str, str | None]:
        """The result text and the cursor it offers; raises PiCompactError for what the model got wrong."""
        if cursor is not None:
            self.used.add(cursor)
        if tool == "list_entries":
            page = list_entries(
                self.transcript,
                roles=params["role"],
                since=params["since"],
                limit=params["limit"],
                cursor=cursor,
                limits=self.limits,
            )
            if self.masker is not None:
                page = self.masker.list(page, self.limits.preview_chars)
            text, next_cursor = _cut(format_list(page, self.name(tool)), self.result_chars), page.next_cursor
        elif tool == "grep":
            text, next_cursor = self._grep(params, cursor)
        else:
            text, next_cursor = self._show(params["id"], cursor)
        if next_cursor is not None:
            self.issued[next_cursor] = _signature(tool, params)
        return text, next_cursor

    def _grep(self, params: Mapping[str, Any], cursor: str | None) -> tuple[str, str | None]:
        max_count = params["max_count"]
        query = GrepQuery.of(
            params["pattern"],
            ignore_case=params["ignore_case"],
            fixed=params["fixed"],
            context=params["context"],
            roles=params["role"],
            sections=params["section"],
        )
        while True:
            page = grep(self.transcript, query, max_count=max_count, cursor=cursor, limits=self.limits)
            if self.masker is not None:
                page = self.masker.grep(page, self.limits.line_chars)
            text = format_grep(page, self.name("grep"))
            if len(text) <= self.result_chars or len(page.matches) <= 1:
                return _cut(text, self.result_chars), page.next_cursor
            # Fewer matches per page, so the page fits and its cursor still resumes at the first one not shown.
            max_count = max(1, len(page.matches) * self.result_chars // len(text) - 1)
            max_count = min(max_count, len(page.matches) - 1)

    def _show(self, entry_id: str, cursor: str | None) -> tuple[str, str | None]:
        budget = self.limits.show_chars
        while True:
            try:
                page = show_entry(self.transcript, entry_id, cursor=cursor, max_chars=budget, limits=self.limits)
            except NotFoundError as exc:
                other = self.transcript.session.by_id.get(entry_id)
                if other is not None and self.transcript.position(other) < 0:
                    raise NotFoundError(
                        f"entry {entry_id} is not on the branch being searched; only the current branch is searched"
                    ) from None
                raise NotFoundError(exc.message) from None
            if self.masker is not None:
                page = self.masker.show(page)
            text = format_show(page, self.name("show_entry"))
            if len(text) <= self.result_chars or budget <= 1_000:
                return _cut(text, self.result_chars), page.next_cursor
            budget = max(1_000, budget // 2)


def call_tool(
    transcript: Transcript,
    tool: str,
    arguments: Mapping[str, Any],
    limits: Limits = DEFAULT_LIMITS,
    *,
    name: str | None = None,
) -> str:
    """One call of ``list_entries``, ``grep`` or ``show_entry`` outside a lookup (no budget): the result text, with
    the same argument checks, limits and text the model gets (``name``: the tool's name as the caller's model knows
    it, for the "call … again" hint); arguments it would be told are wrong raise UsageError."""
    try:
        params, cursor = _parse(ToolCall("direct", tool, dict(arguments)), limits)
    except _BadArguments as exc:
        raise UsageError(str(exc)) from None
    return _Tools(transcript, limits, names={tool: name} if name else None).run(tool, params, cursor)[0]


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
        f"The history of this branch has {_plural(len(entries), 'entry', 'entries')} "
        f"({_plural(users, 'user message', 'user messages')}{extra}){span}; "
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
    ask = complete_fn or complete
    limits = opts.limits
    tool_defs = prompts.tools(limits)
    system = prompts.system_prompt(opts.budget, opts.call_limit, limits)
    from pi_compact.redact import Redactor

    redactor = Redactor() if opts.redact else None

    def mask(text: str) -> str:
        return redactor.redact(text) if redactor is not None else text

    about = mask(overview(transcript))
    asked = mask(question)
    messages: list[Message] = [Message.user(prompts.first_message(asked, about))]
    window = model.info.context_window if model.info is not None and model.info.context_window else 128_000
    max_tokens = MAX_OUTPUT_TOKENS
    if model.info is not None and model.info.max_tokens:
        max_tokens = min(max_tokens, model.info.max_tokens)
    # The branch is never sent whole: what the conversation may grow to is fitted to the model's window.
    max_tokens, conversation_limit, result_chars = fit_to_window(
        window, max_tokens, len(system) + len(orjson.dumps([t.parameters for t in tool_defs])) + 2_000
    )
    conversation_limit = min(opts.max_conversation_chars, conversation_limit)
    tools = _Tools(transcript, limits, result_chars, redactor=redactor)

    usage = Usage()
    calls = 0
    searches = 0
    records: list[ToolRecord] = []
    turns: list[_Turn] = []
    answer: str | None = None
    truncated = False
    stopped_by: str | None = None
    latest_text = ""
    search_error: str | None = None
    conversation = len(messages[0].text)

    def call_model(request: Request) -> Response:
        nonlocal calls, usage
        calls += 1
        response = ask(
            request,
            model=model,
            api_key=api_key,
            timeout=opts.timeout,
            max_retries=opts.max_retries,
            sleep=sleep,
        )
        usage = _add(usage, response.usage)
        return response

    while True:
        if calls >= opts.call_limit:
            stopped_by = "call_limit"
            break
        if progress is not None:
            progress(f"searching with {model.ref} (call {calls + 1}, {searches}/{opts.budget} searches)")
        try:
            response = call_model(Request(messages, system=system, tools=tool_defs, max_tokens=max_tokens))
        except ProviderError as exc:
            if not records:
                raise
            stopped_by, search_error = "provider_error", exc.message
            break
        if response.text.strip():
            latest_text = response.text
        if not response.tool_calls:
            if response.text.strip():
                answer = response.text
                truncated = response.stop_reason == "length"
            else:
                stopped_by = "empty_reply"
            break
        messages.append(response.to_message())
        conversation += len(response.text)
        turn = _Turn(response.text)
        turns.append(turn)
        over_budget = False
        for call in response.tool_calls:
            text, record = _run_call(tools, call, limits, searches, opts.budget)
            text = mask(text)
            if record.kind == "search":
                searches += 1
            elif record.kind == "refused":
                over_budget = True
            records.append(record)
            turn.calls.append((call, record, text))
            messages.append(Message.tool_result(call, text, is_error=not record.ok))
            conversation += len(text)
        if over_budget:
            stopped_by = "budget"
            break
        if conversation > conversation_limit:
            stopped_by = "context_limit"
            break

    writeup: str | None = None
    error: str | None = None
    if answer is None:
        if progress is not None:
            progress(f"writing up with {model.ref}")
        log = mask(_write_log(turns, conversation_limit))
        request = Request(
            [Message.user(prompts.writeup_message(asked, about, stopped_by or "", log))],
            system=prompts.writeup_system_prompt(),
            max_tokens=max_tokens,
        )
        try:
            response = call_model(request)
        except ProviderError as exc:
            writeup, error = "failed", exc.message
            answer = latest_text
        else:
            if response.text.strip():
                writeup, answer = "ok", response.text
                truncated = response.stop_reason == "length"
            else:
                writeup, error = "failed", "the write-up was empty"
                answer = latest_text
    answer, cut = _truncate(answer.strip())
    truncated = truncated or cut
    from pi_compact.catalog import estimate_cost

    cost = None
    if model.info is not None:
        cost = estimate_cost(
            model.info, usage.input_tokens, usage.output_tokens, usage.cache_read_tokens, usage.cache_write_tokens
        )
    leaf = transcript.leaf
    return LookupResult(
        question=question,
        answer=answer,
        complete=stopped_by is None and not truncated,
        stopped_by=stopped_by,
        writeup=writeup,
        error=error or search_error,
        answer_truncated=truncated,
        not_found_reply=_is_not_found(answer),
        citations=find_citations(transcript, answer),
        quotes=verify_quotes(transcript, answer),
        searches_used=searches,
        budget=opts.budget,
        model_calls=calls,
        call_limit=opts.call_limit,
        tool_calls=tuple(records),
        model=model.ref,
        model_source=model.source,
        usage=usage,
        cost=cost,
        leaf_id=entry_label(leaf) if leaf is not None else None,
    )


def _run_call(tools: _Tools, call: ToolCall, limits: Limits, searches: int, budget: int) -> tuple[str, ToolRecord]:
    """Run one tool call (or refuse it when the budget is spent) and describe what happened."""
    arguments = dict(call.arguments) if call.raw_arguments is None else {"raw": call.raw_arguments}
    try:
        params, cursor = _parse(call, limits)
    except _BadArguments as exc:
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
    "call_tool",
    "format_grep",
    "format_list",
    "format_show",
    "overview",
    "run_lookup",
    "session_model",
]
