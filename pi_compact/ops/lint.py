"""``lint``: every structural problem of a session file that Pi would silently work around or trip over.

The loader's diagnostics are taken as they are (by code, whatever codes the loader has), so ``lint`` and the
loader never disagree; on top of them ``lint`` checks what a load does not need to look at: parentId cycles and
dangling parents anywhere in the tree, entries no root reaches, tool calls and results that do not pair up,
compactions whose kept range is not on their branch, context edits without a target, impossible usage, entry
timestamps that go backwards, unknown entry types and roles. Pure data: a ``LintReport`` per file.

``lint_paths`` lints many files in worker processes, a bounded number in flight, and yields the reports in the
order of the paths, so memory stays bounded however many files there are.
"""

from __future__ import annotations

import contextlib
import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any, Literal

from pi_compact.errors import CycleError, NotFoundError, PiCompactError, UsageError
from pi_compact.session.entries import ENTRY_TYPES, MESSAGE_ROLES, Diagnostic, Entry, Session

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")
RANK: dict[str, int] = {"info": 0, "warning": 1, "error": 2}

KNOWN_TYPES = frozenset(ENTRY_TYPES)
KNOWN_ROLES = frozenset(MESSAGE_ROLES)
# Messages after which Pi's provider layer closes the tool calls still open (transform-messages).
_TURN_BREAKING_ROLES = frozenset({"user", "custom", "bashExecution", "branchSummary", "compactionSummary"})
_TURN_BREAKING_TYPES = frozenset({"custom_message", "branch_summary", "compaction"})
USAGE_FIELDS = ("input", "output", "cacheRead", "cacheWrite", "totalTokens")

# What Pi 1.6 does about each problem, by code, checked against Pi's code and the oracle
# (tests/ops/test_lint_pi_claims.py).
# Every code lint can report has its entry; a code the loader adds later still lints (without one).
PI_DOES: dict[str, str] = {
    # from the loader
    "malformed-line": "skips the line; entries whose parent was on it start a new branch",
    "non-object-line": "keeps it as an entry without an id: no entry can be its child, it is on no branch, and as "
    "the last line it leaves Pi no leaf",
    "truncated-last-line": "ignores the line, and adds a newline after it when it opens the file, so its next entry "
    "starts a line of its own",
    "null-line": "skips the line",
    "no-final-newline": "adds the newline when it opens the file",
    "duplicate-id": "indexes the later entry under that id: every parentId naming it reaches the later entry",
    "orphaned-branch": "starts the branch at this entry: the history before it is not in the model's context",
    "missing-id": "keeps the entry; a missing or empty id names nothing (no entry can have it as parent, and as the "
    "last entry it leaves Pi no leaf), while a number id works as one in Pi",
    "leaf-without-id": "finds no leaf: its branch is empty and it never compacts the session; the context it sends "
    "falls back to the last entry and its parents (nothing for a line that is not an object)",
    "extra-header": "leaves it out of the tree: it is no entry, and never the leaf",
    "version-not-number": 'compares it as JavaScript does ("3" is 3, true is 1); a value that is no number '
    "migrates nothing, yet Pi rewrites the file when it opens it",
    "v1-with-ids": "migrates it as v1 when it opens it: every entry gets a new id, chained in file order (the tree "
    "is flattened), and the file is rewritten",
    "first-kept-not-on-branch": "keeps none of the branch before the compaction in the context: only the summary "
    "and what follows it",
    "pi-throws": "throws an error on it, at the step the message names (opening the file, building the context, "
    "listing sessions or showing the name)",
    "big-line": "reads the whole line into memory on every load",
    "old-version": "migrates the file to v3 when it opens it, and rewrites it",
    # fatal for the loader
    "bom": "refuses to open the file: with the mark its first line is not JSON, so there is no valid session header",
    "missing-header": "refuses to open the file (not a valid pi session)",
    "invalid-utf8": "reads the bad bytes as replacement characters (U+FFFD)",
    "deep-nesting": "loads the line in full",
    "not-regular-file": "does not check: it waits forever on a FIFO (for a writer), reads a device such as "
    "/dev/null as an empty file, and fails on a socket",
    "empty-file": "starts a new session in it, writing a session header into the file",
    "not-found": "starts a new session at that path (the file is written with its first message)",
    "unreadable": "cannot read it either (it fails with an error, or starts a new session it cannot save)",
    "line-too-long": "cannot open the file when the line is over 536,870,888 characters (JavaScript's longest "
    "string); picompact stops at 1 GiB",
    # lint's own
    "parent-cycle": "loops forever walking a branch through it (hangs or crashes)",
    "dangling-parent": "starts a branch at this entry: nothing before it is in the model's context on that branch",
    "off-branch": "stops each walk up at the entry whose parent is missing, which starts their branch (nothing "
    "above it is in the context), or loops forever on a cycle",
    "orphan-tool-result": "sends the result without its call; the provider may reject the request",
    "missing-tool-result": 'sends a synthetic error result "No result provided" in its place (in each request, '
    "not in the file)",
    "pending-tool-result": 'sends a synthetic error result "No result provided" if the session goes on without '
    "one (in the request, not in the file)",
    "compaction-kept-missing": "keeps nothing before the compaction: the history it meant to keep silently vanishes",
    "edit-target-missing": "applies the edit to nothing",
    "edit-target-off-branch": "applies the edit to nothing on this branch",
    "negative-usage": "takes a usage only when its total (totalTokens, else input + output + cacheRead + "
    "cacheWrite) is above zero: a total at or below zero is passed over for an earlier reply's, a positive one "
    "is taken as it is",
    "usage-over-window": "trusts it: while it is the latest usage in the context, Pi's context figure is over the "
    "window and it compacts at its next check",
    "time-backwards": "keeps file order; tools that sort by time disagree with it",
    "bad-timestamp": "keeps the entry; its time is unknown",
    "unknown-type": "keeps the entry but never puts it in the model's context",
    "unknown-role": "keeps the message in its context but leaves it out of what it sends to the model",
    "message-missing": "throws on it (cannot read 'role') when it builds the context of a branch through it, so it "
    "cannot resume that branch; its session list leaves the whole session out",
    "duplicate-reminder": "puts every custom message of the branch in the model's context: the model reads the same "
    "re-orientation again (two copies of picompact's extension were loaded, or a checkpoint was appended twice)",
}
REMINDER_TYPE = "picompact.reorientation"  # the customType of picompact's re-orientation message
FATAL_DEFAULT_CODE = "unreadable"


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem: a stable code, a severity, where it is, and what Pi does about it."""

    code: str
    severity: Severity
    message: str
    line: int | None = None
    entry_id: str | None = None
    pi: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "severity": self.severity,
            "line": self.line,
            "entry_id": self.entry_id,
            "message": self.message,
            "pi": self.pi,
        }


@dataclass(frozen=True)
class LintReport:
    """The findings for one file. ``readable`` is False when the file cannot be read as a Pi session at all.

    ``counts`` and ``codes`` cover every finding, also those left out of ``findings`` by a cap.
    """

    path: str
    findings: tuple[Finding, ...]
    readable: bool = True
    entries: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    codes: dict[str, int] = field(default_factory=dict)
    omitted: int = 0  # findings left out by ``max_findings``

    def at_or_above(self, level: str) -> int:
        return sum(n for sev, n in self.counts.items() if RANK[sev] >= RANK[level])

    @property
    def clean(self) -> bool:
        return self.readable and not self.findings and not self.omitted

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "readable": self.readable,
            "entries": self.entries,
            "counts": {sev: self.counts.get(sev, 0) for sev in SEVERITIES},
            "codes": dict(self.codes),
            "findings": [f.to_json() for f in self.findings],
            "findings_omitted": self.omitted,
        }


def check_level(level: str) -> str:
    if level not in RANK:
        raise UsageError(f"--level must be one of error, warning, info (got {level!r})")
    return level


def _finding(
    code: str, severity: Severity, message: str, entry: Entry | None = None, line: int | None = None
) -> Finding:
    return Finding(
        code=code,
        severity=severity,
        message=message,
        line=entry.line if entry is not None else line,
        entry_id=entry.id if entry is not None else None,
        pi=PI_DOES.get(code),
    )


def from_diagnostic(diag: Diagnostic, by_line: dict[int, Entry]) -> Finding:
    """A loader (or branch) diagnostic as a finding: same code, same level, same line."""
    entry = by_line.get(diag.line) if diag.line is not None else None
    severity: Severity = diag.level if diag.level in RANK else "warning"  # type: ignore[assignment]
    return Finding(diag.code, severity, diag.message, diag.line, entry.id if entry else None, PI_DOES.get(diag.code))


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
                        _finding(
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
                        _finding(
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
            _finding(
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
# Tool calls and results


def _tool_findings(session: Session, kids: dict[str | None, list[Entry]]) -> list[Finding]:
    """Pair calls and results along every branch as Pi's provider layer does: a result answers a call of the
    latest assistant reply before it; a user turn (or a new reply) closes the calls still open."""
    answered: set[tuple[int, str]] = set()
    calls: dict[tuple[int, str], Entry] = {}
    findings: list[Finding] = []
    seen: set[int] = set()
    # Each stack item: an entry and the calls open when reaching it (call id -> (assistant entry, name)).
    stack: list[tuple[Entry, dict[str, Entry]]] = [(e, {}) for e in reversed(kids.get(None, []))]
    while stack:
        entry, pending = stack.pop()
        if id(entry) in seen:
            continue
        seen.add(id(entry))
        role = entry.role
        message = entry.message
        if role == "assistant" and message is not None:
            pending = {}
            if message.get("stopReason") not in ("error", "aborted"):
                for block in message.get("content") or []:
                    if isinstance(block, dict) and block.get("type") == "toolCall":
                        call_id = block.get("id")
                        if isinstance(call_id, str):
                            pending[call_id] = entry
                            calls[(id(entry), call_id)] = entry
        elif role == "toolResult" and message is not None:
            call_id = message.get("toolCallId")
            if isinstance(call_id, str) and call_id in pending:
                answered.add((id(pending[call_id]), call_id))
            else:
                findings.append(
                    _finding(
                        "orphan-tool-result",
                        "warning",
                        f"tool result for call {call_id!r} ({message.get('toolName')}) follows no assistant reply "
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
                _finding(
                    "pending-tool-result",
                    "info",
                    f"the last entry calls a tool (call {call_id}) whose result is not written yet",
                    entry,
                )
            )
        else:
            findings.append(
                _finding("missing-tool-result", "warning", f"tool call {call_id} has no result on any branch", entry)
            )
    return findings


# ---------------------------------------------------------------------------------------------------------------
# Entries one at a time


@cache
def max_model_window() -> int:
    """The largest context window in Pi's model table: no real usage can exceed it."""
    from pi_compact.pi.catalog import _builtin_rows

    windows = [row.get("contextWindow") for row in _builtin_rows().values()]
    return max((int(w) for w in windows if isinstance(w, (int, float)) and not isinstance(w, bool)), default=0)


def _parse_time(value: str) -> datetime | None:
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return parsed if parsed.tzinfo is not None else None


def _entry_findings(session: Session, spans: dict[int, tuple[int, int]]) -> list[Finding]:
    findings: list[Finding] = []
    window = max_model_window()
    previous: tuple[datetime, Entry] | None = None
    for entry in session.entries:
        kind = entry.type
        raw = entry.raw
        if kind not in KNOWN_TYPES:
            findings.append(_finding("unknown-type", "info", f"unknown entry type {kind or raw.get('type')!r}", entry))
        elif kind == "message":
            message = entry.message
            role = message.get("role") if message is not None else None
            if message is None:
                findings.append(_finding("message-missing", "error", "message entry without a message object", entry))
            elif role not in KNOWN_ROLES:
                findings.append(_finding("unknown-role", "warning", f"unknown message role {role!r}", entry))
            elif role == "assistant":
                findings.extend(_usage_findings(entry, message.get("usage"), window))
        elif kind == "compaction":
            kept = raw.get("firstKeptEntryId")
            target = session.by_id.get(kept) if isinstance(kept, str) else None
            if kept != entry.id and not _on_branch(spans, target, entry):
                where = "is not in the file" if target is None else "is not on the compaction's branch"
                findings.append(
                    _finding("compaction-kept-missing", "error", f"firstKeptEntryId {kept!r} {where}", entry)
                )
        elif kind == "context_edit":
            target = raw.get("targetId")
            if not isinstance(target, str) or target not in session.by_id:
                findings.append(
                    _finding("edit-target-missing", "warning", f"targetId {target!r} is not in the file", entry)
                )
            elif not _on_branch(spans, session.by_id[target], entry):
                findings.append(
                    _finding("edit-target-off-branch", "info", f"targetId {target} is not on the edit's branch", entry)
                )
        stamp = raw.get("timestamp")
        when = _parse_time(stamp) if isinstance(stamp, str) else None
        if when is None:
            findings.append(_finding("bad-timestamp", "info", f"entry timestamp {stamp!r} is not an ISO time", entry))
            continue
        if previous is not None and when < previous[0]:
            findings.append(
                _finding(
                    "time-backwards",
                    "warning",
                    f"timestamp {stamp} is earlier than that of the entry before it in the file "
                    f"({previous[1].timestamp}, line {previous[1].line})",
                    entry,
                )
            )
        previous = (when, entry)
    return findings


def _reminder_of(entry: Entry) -> str | None:
    """The compaction id a re-orientation message of picompact's belongs to, or None for any other entry."""
    raw = entry.raw
    if entry.type != "custom_message" or raw.get("customType") != REMINDER_TYPE:
        return None
    details = raw.get("details")
    compaction = details.get("compactionId") if isinstance(details, dict) else None
    return compaction if isinstance(compaction, str) else None


def _reminder_findings(session: Session) -> list[Finding]:
    """A re-orientation message with another one for the same compaction above it on its branch (between it and
    that compaction): both reach the model."""
    findings: list[Finding] = []
    by_id = session.by_id
    for entry in session.entries:
        compaction = _reminder_of(entry)
        if compaction is None:
            continue
        seen: set[int] = set()
        parent = by_id.get(entry.parent_id) if isinstance(entry.parent_id, str) else None
        while parent is not None and id(parent) not in seen and parent.id != compaction:
            seen.add(id(parent))
            if _reminder_of(parent) == compaction:
                findings.append(
                    _finding(
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
        out.append(_finding("negative-usage", "error", f"negative usage: {', '.join(negative)}", entry))
    from pi_compact.pi.projection import calculate_usage_tokens

    total = calculate_usage_tokens(usage)
    if window and total > window:
        out.append(
            _finding(
                "usage-over-window",
                "warning",
                f"usage of {total:,} tokens is larger than any model's context window ({window:,})",
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
    findings.extend(_tool_findings(session, kids))
    findings.extend(_entry_findings(session, _euler(kids)))
    findings.extend(_reminder_findings(session))
    # The branch's pi-throws for a message entry without a message says less than message-missing on that line.
    missing = {f.line for f in findings if f.code == "message-missing"}
    findings = [f for f in findings if not (f.code == "pi-throws" and f.line in missing)]
    findings.sort(key=lambda f: (f.line if f.line is not None else 0, -RANK[f.severity]))
    return findings


def _report(path: str, findings: list[Finding], entries: int, readable: bool, cap: int | None) -> LintReport:
    counts = Counter(f.severity for f in findings)
    codes = Counter(f.code for f in findings)
    kept = findings if cap is None else findings[:cap]
    return LintReport(
        path=path,
        findings=tuple(kept),
        readable=readable,
        entries=entries,
        counts={sev: counts.get(sev, 0) for sev in SEVERITIES},
        codes=dict(sorted(codes.items())),
        omitted=len(findings) - len(kept),
    )


def fatal_finding(exc: PiCompactError) -> Finding:
    code = exc.code or FATAL_DEFAULT_CODE
    return Finding(code, "error", exc.message, exc.line, None, PI_DOES.get(code))


def lint_file(path: str | os.PathLike[str], leaf_id: str | None = None, max_findings: int | None = None) -> LintReport:
    """Lint one file. A file that cannot be read as a Pi session gives one error finding and ``readable`` False."""
    from pi_compact.session.load import load_session

    where = os.fspath(path)
    try:
        session = load_session(where, keep_bodies=True)  # every entry is read: parse each line once
    except PiCompactError as exc:
        return _report(where, [fatal_finding(exc)], 0, False, max_findings)
    if leaf_id is not None:
        from pi_compact.session.tree import resolve_entry

        resolve_entry(session, leaf_id)  # an unknown --leaf is a usage error, not a finding
    return _report(where, lint_session(session, leaf_id), len(session.entries), True, max_findings)


def _lint_batch(paths: list[str], max_findings: int | None) -> list[LintReport]:
    return [lint_file(p, max_findings=max_findings) for p in paths]


def _worker_init() -> None:
    """Workers leave Ctrl-C to the parent, which stops them (no traceback from each worker)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def iter_session_files(
    roots: Iterable[str | os.PathLike[str]], unreadable: Callable[[str, str], None] | None = None
) -> Iterator[Path]:
    """``*.jsonl`` files under each root (a root that is a file is itself), sorted, walked lazily. A directory that
    cannot be listed is passed to ``unreadable`` (its path and the reason), and the walk goes on."""

    def failed(exc: OSError) -> None:
        if unreadable is not None:
            from pi_compact.pi.sessions import os_reason

            unreadable(os.fspath(exc.filename) if exc.filename is not None else "?", os_reason(exc))

    for root in roots:
        top = Path(root)
        if top.is_file():
            yield top
            continue
        if not top.is_dir():
            raise NotFoundError("no such file or directory", path=str(top))
        for directory, dirs, files in os.walk(top, onerror=failed):
            dirs.sort()
            for name in sorted(files):
                if name.endswith(".jsonl"):
                    yield Path(directory) / name


def lint_paths(
    paths: Iterable[str | os.PathLike[str]],
    *,
    jobs: int | None = None,
    max_findings: int | None = 50,
    batch: int = 8,
) -> Iterator[LintReport]:
    """Lint many files, ``jobs`` worker processes at a time, yielding reports in the order of ``paths``.

    Files go to the workers in batches of ``batch`` (one round trip per batch, not per file), and at most four
    batches per worker are in flight: memory stays bounded by a few sessions per worker however many files there
    are. Each report keeps at most ``max_findings`` findings (its counts stay exact).
    """
    workers = jobs if jobs is not None else min(os.cpu_count() or 1, 8)
    if workers < 1:
        raise UsageError(f"--jobs must be at least 1 (got {workers})")
    iterator = iter(paths)
    if workers == 1:
        for p in iterator:
            yield lint_file(p, max_findings=max_findings)
        return
    from collections import deque
    from concurrent.futures import Future, ProcessPoolExecutor
    from itertools import islice

    limit = 4 * workers
    pool = ProcessPoolExecutor(max_workers=workers, initializer=_worker_init)
    try:
        in_flight: deque[Future[list[LintReport]]] = deque()
        while chunk := [os.fspath(p) for p in islice(iterator, batch)]:
            in_flight.append(pool.submit(_lint_batch, chunk, max_findings))
            if len(in_flight) >= limit:
                yield from in_flight.popleft().result()
        while in_flight:
            yield from in_flight.popleft().result()
    finally:
        # Stopped early (Ctrl-C, a closed pipe, an error): drop the batches not started yet.
        pool.shutdown(wait=True, cancel_futures=True)


@dataclass
class LintTotals:
    """The running total of a multi-file lint."""

    files: int = 0
    clean: int = 0
    with_findings: int = 0
    unreadable: int = 0
    counts: Counter[str] = field(default_factory=Counter)

    def add(self, report: LintReport) -> None:
        self.files += 1
        if not report.readable:
            self.unreadable += 1
        elif report.clean:
            self.clean += 1
        else:
            self.with_findings += 1
        self.counts.update(report.counts)

    def at_or_above(self, level: str) -> int:
        return sum(n for sev, n in self.counts.items() if RANK[sev] >= RANK[level])

    def to_json(self) -> dict[str, Any]:
        return {
            "files": self.files,
            "clean": self.clean,
            "with_findings": self.with_findings,
            "unreadable": self.unreadable,
            "counts": {sev: self.counts.get(sev, 0) for sev in SEVERITIES},
        }
