"""The tracked file modifications a message records, read while the loader still holds its body.

A checkpoint's file evidence (``checkpoint.evidence``) needs, for every assistant message and tool result on the
branch, the ``write``/``edit`` calls it records: most of them lie before the latest compaction, where the loader
drops parsed bodies (``session.source``). Reading them back (or even testing their lines for the tools' names) cost
more than the rest of ``check --json``; so the loader takes these facts from each body just before dropping it
(``Session.mutations``), and the index of the file keeps them (``session.index``). The evidence walk reads a
body's facts with this same function when the body is in memory, so the two can never disagree.
"""

from __future__ import annotations

from typing import Any

MUTATING_TOOLS = frozenset({"write", "edit"})

# (the toolCallId of a tool result, or None; (block or nested-call index, path) of each tracked modification)
Facts = tuple[str | None, tuple[tuple[int, str], ...]]


def mutation_path(name: Any, arguments: Any) -> str | None:
    """The path a tracked modification (``write``/``edit`` with a string ``path``, as Pi's file lists) touches."""
    if not isinstance(name, str) or name not in MUTATING_TOOLS or not isinstance(arguments, dict):
        return None
    path = arguments.get("path")
    return path if isinstance(path, str) and path else None


def mutation_facts(message: Any) -> Facts | None:
    """The tracked modifications one message records, None when it records none.

    An assistant message: each tool call block (a dict of ``type`` "toolCall" with a ``name``) with a mutation
    path, by its index among the content blocks. A tool result: each of its nested calls (``nestedCalls.calls``,
    the dicts among them, indexed among those) with one, and its ``toolCallId`` when that is a string (what finds
    the call it answers). As ``readtool.tool_call_blocks`` and ``readtool.nested_calls`` read them.
    """
    if not isinstance(message, dict):
        return None
    role = message.get("role")
    if role == "assistant":
        content = message.get("content")
        if not isinstance(content, list):
            return None
        found: list[tuple[int, str]] | None = None
        index = -1
        for block in content:  # a loop, not a generator: this runs for every assistant message the loader drops
            index += 1
            if isinstance(block, dict) and block.get("type") == "toolCall" and "name" in block:
                path = mutation_path(block.get("name"), block.get("arguments"))
                if path is not None:
                    if found is None:
                        found = []
                    found.append((index, path))
        return (None, tuple(found)) if found else None
    if role == "toolResult":
        nested = message.get("nestedCalls")
        calls = nested.get("calls") if isinstance(nested, dict) else None
        if not isinstance(calls, list):
            return None
        nested_found = tuple(
            (index, path)
            for index, call in enumerate([c for c in calls if isinstance(c, dict)])
            if (path := mutation_path(call.get("name"), call.get("arguments"))) is not None
        )
        if not nested_found:
            return None
        call_id = message.get("toolCallId")
        return (call_id if isinstance(call_id, str) else None, nested_found)
    return None
