"""The checks ``lint`` makes on a loaded session (``lint_session``), beyond the loader's diagnostics: the tree
(parentId cycles, dangling parents, entries no root reaches), tool calls and results that do not pair up, entries
one at a time (unknown types and roles, compactions and context edits off their branch, impossible usage, timestamps
that go backwards), and re-orientation messages appended twice.

Each body is read once, in the entry pass (``_entry_findings``), which takes what the other checks need of it
(``_Facts``); a body the loader dropped is read back for that pass only, so lint holds what loading the file holds."""

from __future__ import annotations

import contextlib
from datetime import datetime
from functools import cache
from typing import Any

from pi_compact.errors import CycleError
from pi_compact.js import js_string
from pi_compact.ops.lint_report import RANK, Finding, finding, from_diagnostic
from pi_compact.pi.projection import loadable_replacement
from pi_compact.session.entries import ENTRY_TYPES, MESSAGE_ROLES, Entry, JsonDict, Session

KNOWN_TYPES = frozenset(ENTRY_TYPES)
KNOWN_ROLES = frozenset(MESSAGE_ROLES)
# Messages after which Pi's provider layer closes the tool calls still open (transform-messages).
_TURN_BREAKING_ROLES = frozenset({"user", "custom", "bashExecution", "branchSummary", "compactionSummary"})
_TURN_BREAKING_TYPES = frozenset({"custom_message", "branch_summary", "compaction"})
USAGE_FIELDS = ("input", "output", "cacheRead", "cacheWrite", "totalTokens")
REMINDER_TYPE = "picompact.reorientation"  # the customType of picompact's re-orientation message


# ---------------------------------------------------------------------------------------------------------------
# The tree: cycles, dangling parents, entries no root reaches


def _tree_findings(session: Session, skip_dangling_lines: set[int]) -> list[Finding]:
    by_id = session.by_id
    # 0: unknown, 1: being walked, 2: reaches a root, 3: does not (dangling parent or cycle)
    state: dict[int, int] = {}
    findings: list[Finding] = []
    reported_cycles: set[int] = set()
    for start in session.entries:
        if state.get(id(start), 0):
            continue
        walk: list[Entry] = []
        current: Entry | None = start
        outcome = 2
        while current is not None:
            seen = state.get(id(current), 0)
            if seen == 1:  # back on this walk: a cycle
                outcome = 3
                members = walk[walk.index(current) :]
                key = min(id(m) for m in members)
                if key not in reported_cycles:
                    reported_cycles.add(key)
                    first = min(members, key=lambda e: e.line)
                    ids = " -> ".join(m.id for m in members[:6]) + (" -> …" if len(members) > 6 else "")
                    findings.append(
                        finding(
                            "parent-cycle",
                            "error",
                            f"parentId cycle of {len(members)} entries ({ids} -> {current.id})",
                            first,
                        )
                    )
                break
            if seen in (2, 3):
                outcome = seen
                break
            state[id(current)] = 1
            walk.append(current)
            parent = current.parent_id
            if parent is None:
                outcome = 2
                break
            nxt = by_id.get(parent)
            if nxt is None:
                outcome = 3
                if current.line not in skip_dangling_lines:
                    findings.append(
                        finding(
                            "dangling-parent",
                            "warning",
                            f"parentId {parent} is not in the file (a malformed or lost line?)",
                            current,
                        )
                    )
                break
            current = nxt
        for entry in walk:
            state[id(entry)] = outcome
    detached = [e for e in session.entries if state.get(id(e)) == 3 and e.id is not None]
    if detached:
        lines = ", ".join(str(e.line) for e in detached[:5]) + (", …" if len(detached) > 5 else "")
        findings.append(
            finding(
                "off-branch",
                "warning",
                f"{len(detached)} entr{'y' if len(detached) == 1 else 'ies'} reach no root through parentId "
                f"(lines {lines})",
                detached[0],
            )
        )
    return findings


def _children(session: Session) -> dict[str | None, list[Entry]]:
    """Children by parent id, as Pi reaches them: shadowed duplicates left out, dangling parents made roots (None)."""
    kids: dict[str | None, list[Entry]] = {}
    for entry in session.entries:
        if entry.id is not None and session.by_id.get(entry.id) is not entry:
            continue  # a shadowed duplicate: Pi reaches the later one
        parent = entry.parent_id if entry.parent_id in session.by_id else None
        kids.setdefault(parent, []).append(entry)
    return kids


def _euler(kids: dict[str | None, list[Entry]]) -> dict[int, tuple[int, int]]:
    """Entry and exit times of a depth-first walk: ``a`` is an ancestor of ``b`` iff a's span contains b's."""
    spans: dict[int, tuple[int, int]] = {}
    clock = 0
    stack: list[tuple[Entry, bool]] = [(e, False) for e in reversed(kids.get(None, []))]
    opened: dict[int, int] = {}
    while stack:
        entry, done = stack.pop()
        if done:
            spans[id(entry)] = (opened[id(entry)], clock)
            clock += 1
            continue
        if id(entry) in opened:
            continue
        opened[id(entry)] = clock
        clock += 1
        stack.append((entry, True))
        if entry.id is not None:
            stack.extend((child, False) for child in reversed(kids.get(entry.id, [])))
    return spans


def _on_branch(spans: dict[int, tuple[int, int]], ancestor: Entry | None, entry: Entry) -> bool:
    if ancestor is None:
        return False
    a, b = spans.get(id(ancestor)), spans.get(id(entry))
    return a is not None and b is not None and a[0] <= b[0] and b[1] <= a[1]


# ---------------------------------------------------------------------------------------------------------------
# What the checks after the entry pass need of the bodies


class _Facts:
    """What the tool pairing and the re-orientation check need of entry bodies, taken as the entry pass reads each
    body once (so no body is read again, and none is held after it), by entry index."""

    __slots__ = ("calls", "reminders", "results")

    def __init__(self) -> None:
        # An assistant reply with a message: the ids of its tool calls (none when it stopped on an error or aborted)
        self.calls: dict[int, tuple[str, ...]] = {}
        # A tool result with a message: its toolCallId and its toolName as a finding names it
        self.results: dict[int, tuple[Any, str]] = {}
        # A re-orientation message of picompact's: the compaction it belongs to
        self.reminders: dict[int, str] = {}


def _call_ids(message: JsonDict) -> tuple[str, ...]:
    if message.get("stopReason") in ("error", "aborted"):
        return ()
    content = message.get("content")
    if not isinstance(content, list):
        return ()
    return tuple(
        block["id"]
        for block in content
        if isinstance(block, dict) and block.get("type") == "toolCall" and isinstance(block.get("id"), str)
    )


def _reminder_of(entry: Entry, raw: JsonDict) -> str | None:
    """The compaction id a re-orientation message of picompact's belongs to, or None for any other entry."""
    if entry.type != "custom_message" or raw.get("customType") != REMINDER_TYPE:
        return None
    details = raw.get("details")
    compaction = details.get("compactionId") if isinstance(details, dict) else None
    return compaction if isinstance(compaction, str) else None


# ---------------------------------------------------------------------------------------------------------------
# Tool calls and results


def _tool_findings(session: Session, kids: dict[str | None, list[Entry]], facts: _Facts) -> list[Finding]:
    """Pair calls and results along every branch as Pi's provider layer does: a result answers a call of the
    latest assistant reply before it; a user turn (or a new reply) closes the calls still open."""
    answered: set[tuple[int, str]] = set()
    calls: dict[tuple[int, str], Entry] = {}
    findings: list[Finding] = []
    seen: set[int] = set()
    call_ids, results = facts.calls, facts.results
    # Each stack item: an entry and the calls open when reaching it (call id -> (assistant entry, name)).
    stack: list[tuple[Entry, dict[str, Entry]]] = [(e, {}) for e in reversed(kids.get(None, []))]
    while stack:
        entry, pending = stack.pop()
        if id(entry) in seen:
            continue
        seen.add(id(entry))
        role = entry.role
        if role == "assistant" and entry.index in call_ids:
            pending = {}
            for call_id in call_ids[entry.index]:
                pending[call_id] = entry
                calls[(id(entry), call_id)] = entry
        elif role == "toolResult" and entry.index in results:
            call_id, tool_name = results[entry.index]
            if isinstance(call_id, str) and call_id in pending:
                answered.add((id(pending[call_id]), call_id))
            else:
                findings.append(
                    finding(
                        "orphan-tool-result",
                        "warning",
                        f"tool result for call {call_id!r} ({tool_name}) follows no assistant reply "
                        "that made that call",
                        entry,
                    )
                )
        elif (role in _TURN_BREAKING_ROLES) or entry.type in _TURN_BREAKING_TYPES:
            pending = {}
        children = kids.get(entry.id, []) if entry.id is not None else []
        for child in reversed(children):
            stack.append((child, pending if len(children) == 1 else dict(pending)))
    leaf = session.leaf
    for (key, call_id), entry in calls.items():
        if (key, call_id) in answered:
            continue
        if entry is leaf:
            findings.append(
                finding(
                    "pending-tool-result",
                    "info",
                    f"the last entry calls a tool (call {call_id}) whose result is not written yet",
                    entry,
                )
            )
        else:
            findings.append(
                finding("missing-tool-result", "warning", f"tool call {call_id} has no result on any branch", entry)
            )
    return findings


# ---------------------------------------------------------------------------------------------------------------
# Entries one at a time


@cache
def max_model_window() -> int:
    """The largest context window in Pi's model table: no real usage can exceed it."""
    from pi_compact.pi.catalog import builtin_rows

    windows = [row.get("contextWindow") for row in builtin_rows().values()]
    return max((int(w) for w in windows if isinstance(w, (int, float)) and not isinstance(w, bool)), default=0)


def _parse_time(value: str) -> datetime | None:
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def _entry_findings(session: Session, spans: dict[int, tuple[int, int]], facts: _Facts) -> list[Finding]:
    """The checks of each entry on its own, in one pass that reads each body once: a body the loader had dropped
    is read back for the pass and dropped again after it, so the pass holds one body at a time whatever the size
    of the file. What later checks need of the bodies is kept in ``facts``."""
    findings: list[Finding] = []
    window = max_model_window()
    previous: tuple[datetime, Entry, str] | None = None
    for entry in session.entries:
        released = not entry.loaded
        raw = entry.raw
        if released:
            entry.forget()  # ``raw`` holds it for this pass only
        kind = entry.type
        if kind not in KNOWN_TYPES:
            findings.append(finding("unknown-type", "info", f"unknown entry type {kind or raw.get('type')!r}", entry))
        elif kind == "message":
            message = raw.get("message")
            message = message if isinstance(message, dict) else None
            role = message.get("role") if message is not None else None
            if message is None:
                findings.append(finding("message-missing", "error", "message entry without a message object", entry))
            elif role not in KNOWN_ROLES:
                findings.append(finding("unknown-role", "warning", f"unknown message role {role!r}", entry))
            elif role == "assistant":
                findings.extend(_usage_findings(entry, message.get("usage"), window))
            if message is not None and entry.role == "assistant":
                facts.calls[entry.index] = _call_ids(message)
            elif message is not None and entry.role == "toolResult":
                facts.results[entry.index] = (message.get("toolCallId"), f"{message.get('toolName')}")
        elif kind == "compaction":
            kept = raw.get("firstKeptEntryId")
            target = session.by_id.get(kept) if isinstance(kept, str) else None
            if kept != entry.id and not _on_branch(spans, target, entry):
                where = "is not in the file" if target is None else "is not on the compaction's branch"
                findings.append(
                    finding("compaction-kept-missing", "error", f"firstKeptEntryId {kept!r} {where}", entry)
                )
        elif kind == "context_edit":
            target = raw.get("targetId")
            if not loadable_replacement(raw.get("replacement")):
                findings.append(
                    finding(
                        "edit-bad-replacement",
                        "error",
                        "replacement is neither null nor {content: string or array}",
                        entry,
                    )
                )
            if not isinstance(target, str) or target not in session.by_id:
                findings.append(
                    finding("edit-target-missing", "warning", f"targetId {target!r} is not in the file", entry)
                )
            elif not _on_branch(spans, session.by_id[target], entry):
                findings.append(
                    finding("edit-target-off-branch", "info", f"targetId {target} is not on the edit's branch", entry)
                )
        elif kind == "custom_message":
            reminder = _reminder_of(entry, raw)
            if reminder is not None:
                facts.reminders[entry.index] = reminder
        stamp = raw.get("timestamp")
        when = _parse_time(stamp) if isinstance(stamp, str) else None
        if when is None:
            findings.append(finding("bad-timestamp", "info", f"entry timestamp {stamp!r} is not an ISO time", entry))
            continue
        if previous is not None and when < previous[0]:
            findings.append(
                finding(
                    "time-backwards",
                    "warning",
                    f"timestamp {stamp} is earlier than that of the entry before it in the file "
                    f"({previous[2]}, line {previous[1].line})",
                    entry,
                )
            )
        previous = (when, entry, stamp)  # type: ignore[assignment]
    return findings


def _reminder_findings(session: Session, facts: _Facts) -> list[Finding]:
    """A re-orientation message with another one for the same compaction above it on its branch (between it and
    that compaction): both reach the model."""
    findings: list[Finding] = []
    by_id = session.by_id
    reminders = facts.reminders
    entries = session.entries
    for index, compaction in reminders.items():
        entry = entries[index]
        seen: set[int] = set()
        parent = by_id.get(entry.parent_id) if isinstance(entry.parent_id, str) else None
        while parent is not None and id(parent) not in seen and parent.id != compaction:
            seen.add(id(parent))
            if reminders.get(parent.index) == compaction:
                findings.append(
                    finding(
                        "duplicate-reminder",
                        "warning",
                        f"a second re-orientation message for compaction {compaction} on this branch (the first: "
                        f"entry {parent.id}, line {parent.line})",
                        entry,
                    )
                )
                break
            parent = by_id.get(parent.parent_id) if isinstance(parent.parent_id, str) else None
    return findings


def _count(n: int) -> str:
    """A count with thousands separators; one past 2^53 as JavaScript shows it (Infinity for a usage of 1e400)."""
    return f"{n:,}" if abs(n) <= 2**53 else js_string(n)


def _usage_findings(entry: Entry, usage: Any, window: int) -> list[Finding]:
    if not isinstance(usage, dict):
        return []
    out: list[Finding] = []
    numbers = {
        k: usage[k]
        for k in USAGE_FIELDS
        if isinstance(usage.get(k), (int, float)) and not isinstance(usage.get(k), bool)
    }
    negative = [f"{k}={v}" for k, v in numbers.items() if v < 0]
    if negative:
        out.append(finding("negative-usage", "error", f"negative usage: {', '.join(negative)}", entry))
    from pi_compact.pi.projection import calculate_usage_tokens

    total = calculate_usage_tokens(usage)
    if window and total > window:
        out.append(
            finding(
                "usage-over-window",
                "warning",
                f"usage of {_count(total)} tokens is larger than any model's context window ({window:,})",
                entry,
            )
        )
    return out


# ---------------------------------------------------------------------------------------------------------------
# One file, many files


def lint_session(session: Session, leaf_id: str | None = None) -> list[Finding]:
    """Every finding for a loaded session, in line order (file-wide findings first)."""
    from pi_compact.session.tree import get_branch

    by_line = {e.line: e for e in session.entries}
    findings = [from_diagnostic(d, by_line) for d in session.diagnostics]
    branch_lines: set[int] = set()
    # A cycle on the leaf's path has no branch; every cycle is reported below, the leaf's one included.
    with contextlib.suppress(CycleError):
        for diag in get_branch(session, leaf_id).diagnostics:
            findings.append(from_diagnostic(diag, by_line))
            if diag.line is not None:
                branch_lines.add(diag.line)
    findings.extend(_tree_findings(session, branch_lines))
    kids = _children(session)
    facts = _Facts()
    entry_findings = _entry_findings(session, _euler(kids), facts)
    findings.extend(_tool_findings(session, kids, facts))
    findings.extend(entry_findings)
    findings.extend(_reminder_findings(session, facts))
    # The branch's pi-throws for a message entry without a message says less than message-missing on that line.
    missing = {f.line for f in findings if f.code == "message-missing"}
    findings = [f for f in findings if not (f.code == "pi-throws" and f.line in missing)]
    findings.sort(key=lambda f: (f.line if f.line is not None else 0, -RANK[f.severity]))
    return findings
