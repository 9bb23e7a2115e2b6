"""The three tools of a lookup (``list_entries``, ``grep``, ``show_entry``): their arguments, checked as the model
sends them; their results, formatted as the model reads them; and running them on a transcript, with the same
functions and limits as ``picompact list/grep/show``. ``call_tool`` runs one outside a lookup (the Pi extension's
``context_*`` tools). The agent loop that lets a model call them is ``lookup.agent``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import orjson

from pi_compact.errors import NotFoundError, UsageError
from pi_compact.llm.types import ToolCall
from pi_compact.search.grep_results import GrepPage
from pi_compact.search.grepping import GrepQuery, grep
from pi_compact.search.listing import EntryPage, list_entries
from pi_compact.search.pages import DEFAULT_LIMITS, Limits
from pi_compact.search.render import safe_text
from pi_compact.search.show import ShowPage, show_entry
from pi_compact.search.transcript import Transcript

if TYPE_CHECKING:
    from pi_compact.lookup.masking import PageMasker
    from pi_compact.redact import Redactor

MAX_RESULT_CHARS = 30_000
_LINE_BREAKS = str.maketrans(
    {c: f"\\x{ord(c):02x}" for c in "\r\x0b\x0c\x1c\x1d\x1e\x85"} | {"\u2028": "\\u2028", "\u2029": "\\u2029"}
)

# ---------------------------------------------------------------------------------------------------------------
# Tool arguments


class BadArguments(Exception):
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
            raise BadArguments(f"{name} is required")
        return None
    if not isinstance(value, str):
        raise BadArguments(f"{name} must be a string")
    if required and not value:
        raise BadArguments(f"{name} must not be empty")
    return value


def _bool_arg(args: Mapping[str, Any], name: str) -> bool:
    value = args.get(name)
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise BadArguments(f"{name} must be true or false")


def _int_arg(args: Mapping[str, Any], name: str, low: int, high: int) -> int | None:
    value = args.get(name)
    if value is None:
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise BadArguments(f"{name} must be a whole number")
    if not low <= value <= high:
        raise BadArguments(f"{name} must be from {low} to {high} (got {value})")
    return value


def _names_arg(args: Mapping[str, Any], name: str) -> tuple[str, ...] | None:
    value = args.get(name)
    if value is None:
        return None
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(i, str) for i in items):
        raise BadArguments(f"{name} must be a list of strings")
    names = sorted({part.strip() for item in items for part in item.split(",") if part.strip()})
    return tuple(names) or None


def parse_call(call: ToolCall, limits: Limits) -> tuple[dict[str, Any], str | None]:
    """The call's arguments with defaults filled in (what decides the result), and its cursor."""
    if call.name not in _TOOL_KEYS:
        raise BadArguments(f"unknown tool {call.name!r}: use list_entries, grep or show_entry")
    if call.raw_arguments is not None:
        raise BadArguments("the arguments are not a JSON object")
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


def plural(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def format_list(page: EntryPage, name: str = "list_entries") -> str:
    """A list page as the model reads it: ``list``'s plain lines between a count and the way on (``name``: the
    tool's name as the model knows it, for the way on; the same in the two other formats)."""
    head = f"list_entries: {plural(len(page.entries), 'entry', 'entries')} on this page, {page.total} in all"
    return "\n".join([head, *(_line(line) for line in page.text_lines()), _more(name, page.next_cursor)])


def format_grep(page: GrepPage, name: str = "grep") -> str:
    """A grep page as the model reads it: ``grep``'s plain lines (each names its entry) between a count and the
    way on."""
    if not page.matches:
        return f"grep: no matches ({page.entries_searched} entries searched)\n{_more(name, page.next_cursor)}"
    count = plural(len(page.matches), "match", "matches")
    entries = plural(len({m.entry_id for m in page.matches}), "entry", "entries")
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


class Tools:
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
        params, cursor = parse_call(ToolCall("direct", tool, dict(arguments)), limits)
    except BadArguments as exc:
        raise UsageError(str(exc)) from None
    return Tools(transcript, limits, names={tool: name} if name else None).run(tool, params, cursor)[0]
