"""The texts around the spans: the introduction with recovery commands, the file lists, the evidence boundary,
and the re-orientation reminder that follows the kept tail (V23–V26).

Order of the summary: introduction → spans (oldest first) → retained startup reads and file lists → evidence
boundary + start-of-tail marker. The reminder is a separate custom message placed after the kept tail.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass

from pi_compact.checkpoint.startup_reads import RetainedRead
from pi_compact.js import js_stringify

TITLE = "# Verbatim checkpoint (picompact)"
TAIL_MARKER = "<<< recent conversation, verbatim >>>"


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
                "Everything is in the session: `context_grep(pattern)`, `context_show_entry(id)`, "
                f"`context_list_entries()`{lookup}."
            )
        lookup = ', `picompact lookup "<question>" FILE`' if self.lookup_available else ""
        return (
            f"Everything is in FILE={self.session}: `picompact grep '<regex>' FILE`, `picompact show <id> FILE`, "
            f"`picompact list FILE`{lookup}."
        )


def introduction(recovery: Recovery, cwd: str, has_startup_reads: bool = False) -> str:
    """What was removed and how to get it back, said once for the whole checkpoint (the session path once)."""
    outputs = "tool outputs removed (but startup reads, kept below)" if has_startup_reads else "tool outputs removed"
    where = f" Paths relative to {cwd} (`.` in commands)." if cwd else ""
    return (
        f"{TITLE}\n"
        f"Earlier turns, compacted without a model: user messages and replies verbatim; thinking and {outputs}; "
        f"tool calls as `▸ tool(args) → ok|error|unknown` (the tool's flag).{where} "
        f"{recovery.recover_sentence()}"
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


MAX_MODIFIED_LINES = 16  # modified files shown one a line; the rest counted
MAX_FILE_LINES = 24  # files shown in both lists together (modified first); the rest counted, with how to list them
_RANGED = re.compile(
    r"^(?P<file>.*?[^:#\s])(?::(?P<a>\d+)(?:(?P<sep>[-:])(?P<b>\d+))?|#L(?P<c>\d+)(?:-L?(?P<d>\d+))?)$"
)


@dataclass(frozen=True, slots=True)
class FileLine:
    """One file of a list: its path, its evidence label, and the line ranges of the listed paths that named a
    part of it (``Dashboard.tsx:1-104``), merged; ``listed`` counts the paths it stands for."""

    path: str
    label: str | None
    ranges: tuple[tuple[int, int], ...] = ()
    listed: int = 1

    def render(self, counted: str) -> str:
        notes = []
        if self.ranges:
            spans = [f"{a}-{b}" if b != a else str(a) for a, b in self.ranges]
            shown = (
                ", ".join(spans)
                if len(spans) <= 3
                else f"{self.ranges[0][0]}-{self.ranges[-1][1]} in {len(spans)} parts"
            )
            notes.append(f"lines {shown}")
        if self.listed > 1:
            notes.append(f"{self.listed} {counted}")
        if self.label:
            notes.append(self.label)
        return f"- {self.path} ({'; '.join(notes)})" if notes else f"- {self.path}"


def group_files(rows: Sequence[tuple[str, str | None]]) -> list[FileLine]:
    """One line per file, sorted by path: the paths that name a line range of a file (``a.tsx:1-104``,
    ``a.tsx#L5-L9``, ``a.tsx:12``) join the file's own line, their ranges merged where they touch."""
    groups: dict[str, list[tuple[str | None, tuple[int, int] | None]]] = {}
    for path, label in rows:
        match = _RANGED.match(path)
        if match is None:
            groups.setdefault(path, []).append((label, None))
            continue
        start = int(match["a"] or match["c"])
        end = start if match["sep"] == ":" else int(match["b"] or match["d"] or start)  # file:line:column: a line
        groups.setdefault(match["file"], []).append((label, (min(start, end), max(start, end))))
    out = []
    for path in sorted(groups):
        members = groups[path]
        ranges = sorted(r for _, r in members if r is not None)
        whole = any(r is None for _, r in members)
        merged: list[tuple[int, int]] = []
        for a, b in ranges:
            if merged and a <= merged[-1][1] + 1:
                merged[-1] = (merged[-1][0], max(merged[-1][1], b))
            else:
                merged.append((a, b))
        own = next((label for label, r in members if r is None and label), None)
        label = own or next((label for label, _ in members if label), None)
        out.append(FileLine(path, label, () if whole else tuple(merged), len(members)))
    return out


def file_lists_section(
    read: Sequence[tuple[str, str | None]],
    modified: Sequence[tuple[str, str | None]],
    recovery: Recovery | None = None,
    max_lines: int = MAX_FILE_LINES,
) -> str:
    """Cumulative modified / read lists (paths only, never contents), one line a file (its ranged paths merged),
    each with its evidence label if any; modified first. Past ``max_lines`` files the rest are counted, with the
    search that lists every path the session's file tools named."""
    if not read and not modified:
        return ""
    changed, looked = group_files(modified), group_files(read)
    shown_changed = changed[: min(MAX_MODIFIED_LINES, max_lines)]
    room = max(max_lines - len(shown_changed), 0)
    # Read files with evidence in view first, then the most read, shown in path order.
    ranked = {id(f) for f in sorted(looked, key=lambda f: (f.label is None, -f.listed))[:room]}
    shown_looked = [f for f in looked if id(f) in ranked]
    labelled = any(f.label for f in (*shown_changed, *shown_looked))
    parts = [
        "## Files in the compacted history\n"
        "Labels: what this checkpoint and its tail hold, not the live files; no label: no read output kept."
        if labelled
        else "## Files in the compacted history (no read output kept)"
    ]
    how = _list_files_command(recovery)
    for title, shown, every, counted in (
        ("Modified", shown_changed, changed, "paths"),
        ("Read", shown_looked, looked, "reads"),
    ):
        if not every:
            continue
        lines = [f.render(counted) for f in shown]
        if len(every) > len(shown):
            lines.append(f"- + {len(every) - len(shown)} more {title.lower()} files: {how}")
        parts.append(f"{title}:\n" + "\n".join(lines))
    return "\n\n".join(parts)


def _list_files_command(recovery: Recovery | None) -> str:
    """The search that prints every path a file tool was called with."""
    if recovery is not None and recovery.tools:
        return '`context_grep("^path: ")`'
    return "`picompact grep '^path: ' FILE`"


def evidence_boundary() -> str:
    """One warning before the kept tail, then the marker where the verbatim conversation starts."""
    return "---\nAll of the above is history.\n" + TAIL_MARKER


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
    inputs = " (the startup reads are in view)" if recap.has_startup_reads else ""
    how = "the context_* tools" if recovery.tools else "the checkpoint's commands"
    failed = f" ({recap.tool_errors} failed)" if recap.tool_errors else ""
    request = (
        f'\nLatest request, compacted (entry {recap.last_request_id}): "{_quote_request(recap.last_request)}"'
        if recap.last_request is not None
        else ""
    )
    return (
        "[picompact: context compacted]\n"
        f"Re-read the files the next step needs{inputs} and redo cheap checks; old output is not current state; "
        f"label what is unverified. Recover history with {how} only if the task "
        "needs what is gone. Don't redo writes shown as done; check `git status`/`git diff`. Before replacing a file "
        "with `write`, re-read it unless it is in view; never rebuild unchanged parts from memory."
        f"\nCompacted: {_plural(recap.user_messages, 'user message')}, {_plural(recap.tool_calls, 'tool call')}"
        f"{failed}.{request}"
    )


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"
