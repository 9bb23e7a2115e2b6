"""The texts around the spans: the introduction with recovery commands, the file lists, the evidence boundary,
and the re-orientation reminder that follows the kept tail (V23–V26).

Order of the summary: introduction → spans (oldest first) → retained startup reads and file lists → evidence
boundary + start-of-tail marker. The reminder is a separate custom message placed after the kept tail.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from pi_compact.checkpoint.startup_reads import RetainedRead
from pi_compact.js import js_stringify

TITLE = "# Verbatim checkpoint (picompact)"
TAIL_MARKER = "<<< the recent conversation, kept verbatim, starts here >>>"


@dataclass(frozen=True, slots=True)
class Recovery:
    """The shell commands that recover compacted history, with the session path filled in and quoted."""

    session_path: str
    lookup_available: bool
    tools: bool = False  # the agent has picompact's context_* tools (the Pi extension): advertise those instead

    @property
    def session(self) -> str:
        return shlex.quote(self.session_path)

    def recover_sentence(self) -> str:
        """One sentence with the recovery commands, the session path written once."""
        if self.tools:
            lookup = ", `context_lookup(question)`" if self.lookup_available else ""
            return (
                "All of it is in the session: `context_show_entry(id)` ([ids] in brackets), `context_grep(pattern)`, "
                f"`context_list_entries()`{lookup}."
            )
        lookup = ', `picompact lookup "<question>" FILE`' if self.lookup_available else ""
        return (
            f"All of it is in the session FILE={self.session}: `picompact show <id> FILE` ([ids] in brackets), "
            f"`picompact grep '<regex>' FILE`, `picompact list FILE`{lookup}."
        )


def introduction(recovery: Recovery, cwd: str, has_startup_reads: bool = False) -> str:
    """What was removed and how to get it back, said once for the whole checkpoint (the session path once)."""
    outputs = "tool outputs removed (but startup reads, kept below)" if has_startup_reads else "tool outputs removed"
    where = f" Paths relative to {cwd} (`.` in commands)." if cwd else ""
    return (
        f"{TITLE}\n"
        "Earlier turns, compacted without a model: user messages and replies verbatim (the size cap marks what it "
        f"cut), thinking and {outputs}, tool calls as `▸ tool(args) → ok|error|unknown` (the tool's error flag "
        f"only).{where} {recovery.recover_sentence()}"
    )


def retained_reads_section(reads: Sequence[RetainedRead]) -> str:
    """Startup reads, each verbatim in a <read> block with its entry id, path, offset and limit."""
    if not reads:
        return ""
    blocks = [
        "## Retained startup reads\n"
        "Outputs of `read` calls made at the start of the session for files the project instructions name, kept "
        "verbatim with their pagination notices. They show each file as it was read then, not necessarily now."
    ]
    for read in reads:
        attrs = [f'entry="{read.entry_id}"', f"path={_attr(read.display_path or read.path)}"]
        if read.offset is not None:
            attrs.append(f"offset={_attr(read.offset)}")
        if read.limit is not None:
            attrs.append(f"limit={_attr(read.limit)}")
        blocks.append(f"<read {' '.join(attrs)}>\n{read.text}\n</read>")
    return "\n\n".join(blocks)


def _attr(value: object) -> str:
    """An attribute value in double quotes (JSON-escaped when it needs to be)."""
    text = value if isinstance(value, str) else js_stringify(value) or "null"
    return f'"{text}"' if all(c not in text for c in '"\\\n') else js_stringify(text) or '""'


def file_lists_section(
    header: str, read: Sequence[tuple[str, str | None]], modified: Sequence[tuple[str, str | None]]
) -> str:
    """Cumulative read / modified lists (paths only, never contents), each path with its evidence label if any."""
    if not read and not modified:
        return ""

    def lines(rows: Sequence[tuple[str, str | None]]) -> str:
        return "\n".join(f"- {path} ({label})" if label else f"- {path}" for path, label in rows)

    parts = ["## Files in the compacted history\n" + header]
    if read:
        parts.append("Read:\n" + lines(read))
    if modified:
        parts.append("Modified:\n" + lines(modified))
    return "\n\n".join(parts)


def evidence_boundary() -> str:
    """One warning before the kept tail, then the marker where the verbatim conversation starts."""
    return (
        "---\nAll of the above is history, not evidence of the current files, repository, builds or tests.\n"
        + TAIL_MARKER
    )


@dataclass(frozen=True, slots=True)
class Recap:
    """Counts and the latest request, for the reminder's short recap."""

    spans: int
    user_messages: int
    tool_calls: int
    tool_errors: int
    last_request_id: str | None
    last_request: str | None
    has_startup_reads: bool


def _quote_request(text: str, limit: int = 200) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit].rstrip() + "…"


def reminder_text(recovery: Recovery, recap: Recap) -> str:
    """The re-orientation message read right where work resumes (V25). Wording is picompact's own."""
    inputs = ", the startup reads" if recap.has_startup_reads else ""
    how = "the context_* tools" if recovery.tools else "the checkpoint's commands"
    request = (
        f'\nLatest request, compacted (entry {recap.last_request_id}): "{_quote_request(recap.last_request)}"'
        if recap.last_request is not None
        else ""
    )
    return (
        "[picompact: context was compacted]\n"
        "Re-read the files the next step needs and redo cheap checks, not trust old output (in view: the recent "
        f"conversation{inputs}). Recover history with {how} only if the task needs what is gone: it shows what was "
        "recorded, not that it was right. Don't redo writes shown as done; check `git status`/`git "
        "diff`. Old output is not current state: verify what matters, label what you have not. Before replacing a "
        "file with `write`, re-read it unless its contents are in view; never rebuild unchanged parts from memory."
        f"\nCompacted: {_plural(recap.user_messages, 'user message')}, {_plural(recap.tool_calls, 'tool call')} "
        f"({recap.tool_errors} failed).{request}"
    )


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"
