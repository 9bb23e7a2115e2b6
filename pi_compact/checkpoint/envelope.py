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
from pi_compact.tokens import js_stringify

TITLE = "# Verbatim checkpoint (picompact)"
TAIL_MARKER = "<<< start of the verbatim recent conversation: the messages below were kept exactly as they happened >>>"


@dataclass(frozen=True, slots=True)
class Recovery:
    """The shell commands that recover compacted history, with the session path filled in and quoted."""

    session_path: str
    lookup_available: bool
    tools: bool = False  # the agent has picompact's context_* tools (the Pi extension): advertise those instead

    @property
    def session(self) -> str:
        return shlex.quote(self.session_path)

    def commands(self) -> list[tuple[str, str]]:
        if self.tools:
            rows = [
                ("context_grep(pattern)", "search the full history (outputs and thinking included) by regex"),
                ("context_show_entry(id)", "one entry in full; ids are the [bracketed] ones in the spans"),
                ("context_list_entries()", "entry ids with their role, time and a preview"),
            ]
            if self.lookup_available:
                rows.append(("context_lookup(question)", "a search by a helper model that answers citing entry ids"))
            return rows
        s = self.session
        rows = [
            (f"picompact grep {s} '<regex>'", "search the full history (outputs and thinking included) by regex"),
            (f"picompact show {s} <entry-id>", "print one entry in full; ids are the [bracketed] ones in the spans"),
            (f"picompact list {s}", "list entry ids with their role, time and a preview"),
        ]
        if self.lookup_available:
            rows.append(
                (
                    f'picompact lookup {s} "<question>"',
                    "let a model search the history and answer, citing entry ids",
                )
            )
        return rows


def introduction(recovery: Recovery, cwd: str, has_startup_reads: bool = False) -> str:
    """What was removed and how to get it back, said once for the whole checkpoint."""
    width = max(len(cmd) for cmd, _ in recovery.commands())
    commands = "\n".join(f"  {cmd.ljust(width)}  # {why}" for cmd, why in recovery.commands())
    where = f" ({cwd})" if cwd else ""
    how = "call these tools" if recovery.tools else "run from the shell"
    outputs = (
        "Every tool output is removed, except the startup reads retained after the conversation."
        if has_startup_reads
        else "Every tool output is removed."
    )
    return f"""{TITLE}

The earlier conversation was compacted mechanically; no model rewrote it. What remains and what was taken out:
- User messages and assistant replies are kept word for word (the size cap may shorten old ones; see below).
- Thinking is removed.
- {outputs} Each tool call is one line, `▸ name(arguments) → ok | error | unknown`: the label only tells \
whether the tool reported an error \
(`unknown`: no result was recorded). It does not say that tests passed or that a change was right.
- Arguments are abbreviated: `content=<N chars>` for written file contents, `edits=K` for edit lists, character \
counts for oldText/newText, and a JSON prefix cut with `…` for anything else. Paths are relative to the working \
directory{where}, and `.` in shell commands stands for it: display only, not a command to replay.
- Custom (extension) messages show only their type, marked `content removed`.

Nothing is lost: the session file still holds every entry in full, including thinking, arguments and outputs. \
To recover a detail, {how}:
{commands}

Each compaction is one <span> below, oldest first; its `entries` attribute gives the first and last entry id it \
covers. A span marked trimmed="true" was shortened by the size cap and says what it lost; \
`[… removed by the size cap …]` marks where."""


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
        "---\n"
        "Everything above records earlier work as it was at the time, with outputs removed. It is not evidence of "
        "the current state of files, the repository, builds or tests: check before relying on it.\n" + TAIL_MARKER
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


def _quote_request(text: str, limit: int = 300) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[:limit].rstrip() + "…"


def reminder_text(recovery: Recovery, recap: Recap) -> str:
    """The re-orientation message read right where work resumes (V25). Wording is picompact's own."""
    s = recovery.session
    inputs = "the retained startup reads in the checkpoint and " if recap.has_startup_reads else ""
    if recovery.tools:
        lookup = ", or `context_lookup`" if recovery.lookup_available else ""
        tools = "`context_grep`, `context_show_entry`"
    else:
        lookup = f', or `picompact lookup {s} "<question>"`' if recovery.lookup_available else ""
        tools = f"`picompact grep {s} '<regex>'`, `picompact show {s} <entry-id>`"
    counts = (
        f"{recap.spans} compacted span{'s' if recap.spans != 1 else ''}, "
        f"{recap.user_messages} user message{'s' if recap.user_messages != 1 else ''}, "
        f"{recap.tool_calls} tool call{'s' if recap.tool_calls != 1 else ''} "
        f"({recap.tool_errors} reported an error)"
    )
    request = (
        f'\nMost recent user request (entry {recap.last_request_id}): "{_quote_request(recap.last_request)}"'
        if recap.last_request is not None
        else ""
    )
    return f"""[picompact: context was compacted]
Earlier history in this conversation is now a verbatim checkpoint: tool outputs and thinking were removed. \
Before you continue:
1. Restore the inputs the next step needs first: re-read the current versions of the files you will work on and \
redo cheap checks (a listing, a quick test run) rather than trusting old output. Still in view: \
{inputs}the recent conversation kept after the checkpoint. No blanket re-reading is needed.
2. Recover history only when the task needs something that is gone, such as an exact earlier error, where a \
finding came from, or results that would be slow to redo: {tools}{lookup}. What you recover tells you what was \
recorded, not whether it was right.
3. Do not repeat writes or edits the checkpoint shows as done. Run `git status` and `git diff` to see what is \
actually on disk.
4. Old tool output does not establish the current state of files, builds or tests. Where something relevant is \
uncertain or contradictory, verify it; label any claim you have not verified as unverified.
5. Before replacing an existing file with `write`, re-read it unless its current contents are in view, and never \
rebuild unchanged parts from memory.
Recap: {counts}.{request}"""
