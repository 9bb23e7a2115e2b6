"""The tools the Pi extension gives the agent, defined once, here: names, labels, descriptions and parameter
schemas with their limits. ``picompact pi config --json`` sends them (``tools``), and the extension registers what
it receives, so its TypeScript holds no copy of them; ``picompact pi tool NAME`` checks the arguments against the
same limits (``lookup.tools`` and ``extension.hook``).
"""

from __future__ import annotations

from typing import Any, Literal

from pi_compact.lookup.prompts import PATTERN_PROPERTIES
from pi_compact.search.pages import DEFAULT_LIMITS

# The one tool that reads other sessions (through ``picompact search``'s index), apart from the recovery tools, which
# stay on this session's branch.
SEARCH_SESSIONS = "context_search_sessions"
SEARCH_MAX_COUNT = 20  # results per page of it

# The bounds `picompact pi tool` checks the arguments against (lookup.tools), told to the model in the schemas.
LIST_MAX_COUNT = DEFAULT_LIMITS.list_limit
GREP_MAX_COUNT = DEFAULT_LIMITS.grep_max_count
CONTEXT_MAX = DEFAULT_LIMITS.max_context

ToolKind = Literal["search", "lookup"]  # search: run as `picompact pi tool NAME`; lookup: `picompact lookup`

CURSOR = {
    "type": "string",
    "description": "To get the next page of an earlier result: the cursor that result gave, with all other "
    "arguments as before.",
}
ROLES = {
    "type": "array",
    "items": {"type": "string"},
    "description": "Only entries of these roles or entry types: user, assistant, toolResult, bashExecution, "
    "custom, ...",
}


def _tool(
    name: str, label: str, description: str, properties: dict[str, Any], required: list[str], kind: ToolKind
) -> dict[str, Any]:
    parameters: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False}
    if required:
        parameters["required"] = required
    return {"name": name, "label": label, "description": description, "parameters": parameters, "kind": kind}


def _list_tool() -> dict[str, Any]:
    return _tool(
        "context_list_entries",
        "List session entries",
        "List the entries of this session's full recorded history (the current branch, including what compaction "
        f"removed from your context): id, role, timestamp, size and a one-line preview, {LIST_MAX_COUNT} per "
        "page. Use it to find the entry id of an earlier step, then context_show_entry to read it.",
        {
            "role": ROLES,
            "since": {"type": "string", "description": "Only entries at or after this ISO time."},
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": LIST_MAX_COUNT,
                "description": f"Entries per page (at most {LIST_MAX_COUNT}).",
            },
            "cursor": CURSOR,
        },
        [],
        "search",
    )


def _grep_tool() -> dict[str, Any]:
    return _tool(
        "context_grep",
        "Search session history",
        "Search this session's full recorded history (every tool output, thinking and argument, also what "
        "compaction removed from your context) with a regular expression. Each matching line comes back as "
        "`<entry id>:<section>:<line>:<text>`. Use it to recover an exact earlier error or output, or where a "
        "finding came from, instead of redoing slow work; re-read project files for their current contents.",
        {
            **PATTERN_PROPERTIES,
            "context": {
                "type": "integer",
                "minimum": 0,
                "maximum": CONTEXT_MAX,
                "description": "Lines of context around each match.",
            },
            "role": ROLES,
            "max_count": {
                "type": "integer",
                "minimum": 1,
                "maximum": GREP_MAX_COUNT,
                "description": f"Matches per page (at most {GREP_MAX_COUNT}).",
            },
            "cursor": CURSOR,
        },
        ["pattern"],
        "search",
    )


def _show_tool(cross_session: str | None) -> dict[str, Any]:
    return _tool(
        "context_show_entry",
        "Show session entry",
        "Show one entry of this session's recorded history in full (thinking, tool arguments and outputs "
        "included), paged. Ids are the ones context_grep, context_list_entries or the checkpoint show.",
        {
            "id": {"type": "string", "description": "The entry id (a unique prefix of 4+ characters works)."},
            **(
                {}
                if cross_session is None
                else {
                    "session": {
                        "type": "string",
                        "description": f"Only for an entry of another session: the session id {SEARCH_SESSIONS} "
                        "gave with it (or its file, when it says the id is shared).",
                    }
                }
            ),
            "cursor": CURSOR,
        },
        ["id"],
        "search",
    )


def _search_tool(cross_session: str | None) -> dict[str, Any]:
    scope = "every recorded Pi session" if cross_session == "all" else "this project's recorded Pi sessions"
    return _tool(
        SEARCH_SESSIONS,
        "Search other sessions",
        f"Search {scope} (earlier and parallel sessions, not only this one) for words, ranked best first: "
        '`timeout retry` (both words), `"connection reset"` (a phrase), `migrat*` (a prefix), OR, AND, NOT; '
        "or an exact pattern with regex or fixed. Each result gives a session id, an entry id, its role, time "
        "and a snippet; read one with context_show_entry {id, session}. Use it to find how something was "
        "solved or decided in another session; for this session's own history use context_grep.",
        {
            "query": {"type": "string", "description": "The words (or the pattern, with regex or fixed)."},
            "regex": {"type": "boolean", "description": "The query is a regular expression."},
            "fixed": {"type": "boolean", "description": "The query is literal text."},
            "ignore_case": {"type": "boolean", "description": "With regex or fixed: match regardless of case."},
            "role": ROLES,
            "tool": {"type": "string", "description": "Only calls of this tool and their results."},
            "errors": {"type": "boolean", "description": "Only failed tool results."},
            "since": {
                "type": "string",
                "description": "Only entries at or after this time (ISO, or an age: 2h, 7d).",
            },
            "until": {"type": "string", "description": "Only entries at or before this time."},
            "max_count": {
                "type": "integer",
                "minimum": 1,
                "maximum": SEARCH_MAX_COUNT,
                "description": f"Results per page (at most {SEARCH_MAX_COUNT}).",
            },
            "cursor": CURSOR,
        },
        ["query"],
        "search",
    )


def _lookup_tool() -> dict[str, Any]:
    return _tool(
        "context_lookup",
        "Look up session history",
        "Ask a helper model to search this session's full recorded history (including what compaction "
        "removed from your context) and answer one question, citing entry ids; its searching stays out of "
        "your context. Use it to recover specific earlier details: an exact error, where a finding came from, "
        "why something was decided, or to settle a contradiction. Not for project discovery or the current "
        "state of files. One attempt until the user writes, a bash command runs or another tool returns; "
        "then use context_grep.",
        {"question": {"type": "string", "description": "The question, with what to cite."}},
        ["question"],
        "lookup",
    )


def extension_tools(cross_session: str | None, lookup: bool) -> list[dict[str, Any]]:
    """The tools to register, in order: the three of this session's history, ``context_search_sessions`` unless
    ``cross_session`` is None (``picompact.crossSession: false``), and ``context_lookup`` when a model is there."""
    tools = [_list_tool(), _grep_tool(), _show_tool(cross_session)]
    if cross_session is not None:
        tools.append(_search_tool(cross_session))
    if lookup:
        tools.append(_lookup_tool())
    return tools


__all__ = ["extension_tools"]
