"""The stub a pruned tool output becomes, and how to recognise one.

``picompact prune`` replaces an old tool result's content, through a Pi ``context_edit``, with a short text that
says what the output was (the call's signature, its size in Pi's tokens, ok or error), the facts the checkpoint
would keep of it (``verbatim.facts``: the error line, test summaries, paths found, versions) and how to get it
back. The raw result stays in the session file; ``picompact show ID`` and the ``context_show_entry`` tool give it.

A stub is recognised by its first line (``PRUNE_MARK``), so that ``coverage``, ``audit``, ``lint``, ``grep`` and
``show`` tell a pruned output (recoverable, its facts kept) from one that is lost.
"""

from __future__ import annotations

from typing import Any

from pi_compact.checkpoint.verbatim.facts import Fact, facts_of_output
from pi_compact.checkpoint.verbatim.signatures import tool_signature
from pi_compact.session.entries import Entry, JsonDict

PRUNE_MARK = "[picompact pruned this tool output; the full output is kept in the session]"
FACT_LABELS = {"error": "error", "test": "tests", "path": "paths found", "version": "versions"}


def stub_text(
    entry_id: str,
    tool: Any,
    arguments: Any,
    result: JsonDict,
    outcome: str,
    tokens: int,
    cwd: str,
) -> str:
    """The stub of one tool result (``result``: its message; ``outcome``: ok, error or unknown), deterministic."""
    signature = tool_signature(tool, arguments, outcome, cwd)
    lines = [PRUNE_MARK, _heading(signature, tokens, entry_id)]
    facts = facts_of_output(entry_id, str(tool), arguments, result, outcome, cwd, signature)
    lines.extend(fact_lines(facts))
    lines.append(_way_back(entry_id))
    return "\n".join(lines)


def _heading(signature: str, tokens: int, entry_id: str) -> str:
    return f"{signature} · {tokens:,} tokens · entry {entry_id}"


def _way_back(entry_id: str) -> str:
    return f'Get it back: context_show_entry {{"id": "{entry_id}"}} (or `picompact show {entry_id}`).'


def stub_floor(entry_id: str, tokens: int) -> int:
    """The fewest characters the stub of this entry can have, whatever the call and output: its fixed lines with
    an empty signature and no facts (``stub_text`` only adds to them; a JavaScript length is never shorter)."""
    return len("\n".join([PRUNE_MARK, _heading("", tokens, entry_id), _way_back(entry_id)]))


def fact_lines(facts: list[Fact]) -> list[str]:
    """One line per kind of fact, in the order the checkpoint names them, duplicates dropped."""
    grouped: dict[str, list[str]] = {}
    for fact in facts:
        texts = grouped.setdefault(fact.kind, [])
        if fact.text not in texts:
            texts.append(fact.text)
    return [f"{FACT_LABELS[kind]}: {' · '.join(grouped[kind])}" for kind in FACT_LABELS if kind in grouped]


def replacement_text(replacement: Any) -> str | None:
    """The text of a ``context_edit`` replacement (a string, or its text blocks joined); None for an omission."""
    if not isinstance(replacement, dict):
        return None
    content = replacement.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(block.get("text", "")) for block in content if isinstance(block, dict) and block.get("type") == "text"
        )
    return None


def is_prune_stub(edit: Entry | JsonDict | None) -> bool:
    """Whether a ``context_edit`` entry (or its raw dict) replaces its target with a prune stub."""
    if edit is None:
        return False
    raw = edit.raw if isinstance(edit, Entry) else edit
    if raw.get("type") != "context_edit":
        return False
    text = replacement_text(raw.get("replacement"))
    return text is not None and text.startswith(PRUNE_MARK)
