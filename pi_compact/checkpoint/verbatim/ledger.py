"""The progress ledger: one line per run of compacted tool calls and replies, in place of what the cap removes.

A *segment* is a maximal run of non-user items in a span (what the agent did between two user messages). When
the cap needs the room, a segment's items are replaced by its ledger line, which says in one line what was done
and how it ended, then by a shorter line, then by a terse one (only what was decided or found, as the clause that
carries it, the files changed, commits and unresolved failures), then by a finding line (of that, only what was
decided or found and commits: the file lists and the unresolved errors show the rest), and only then removed::

    [b2c3d4e5..c3d4e5f6] edited src/tax.ts; wrote src/round.ts; read 2 files; ran "npm test" → error (ok later,
    [d4e5f6a7]), "git commit -m \\"fix rounding\\"" → ok; said: "The rounding now happens once, at the end."

Everything comes from the span's own items (signatures with their outcome labels, and the prose), so a ledger
line is the same whichever picompact version saved the span. An error counts as resolved when a later call of the
same tool on the same path or command reported no error (``resolutions``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from pi_compact.checkpoint.verbatim.signatures import CALL_MARK, ELLIPSIS, NESTED_MARK, shorten

FILE_VERBS = {"edit": "edited", "write": "wrote", "read": "read"}
MAX_COMMANDS = 6  # commands named in a full line; the rest are counted
COMMAND_CHARS = 90
LEAD_CHARS = 200
SHORT_LEAD_CHARS = 90
MAX_PATHS = 8

_SIGNATURE = re.compile(r"^(?P<name>[^(]*)\((?P<args>.*)\) → (?P<outcome>\S+)$", re.DOTALL)
_PATH_ARG = re.compile(r'(?:^|, )path=("(?:[^"\\]|\\.)*"|[^,]*)')
_COMMAND_ARG = re.compile(r'(?:^|, )(?:command|cmd)=("(?:[^"\\]|\\.)*"|"[^…]*…)')
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9`\"'(\[])|\n+")
_DECISION = re.compile(
    r"\b(?:I'll|I will|I'm going to|let's|we'll|we will|I decided|decided|decision|instead of|rather than|chose|"
    r"going with|switch(?:ed)? to|the plan is|the approach|will use|I prefer|root cause|the bug (?:is|was)|"
    r"the problem (?:is|was)|because)\b",
    re.IGNORECASE,
)
MAX_DECISIONS = 2
DECISION_CHARS = 160
_COMMIT = re.compile(r"\bgit\b.*\bcommit\b")
# A value stated: "the flag is dash_x_5724", "the query takes 6748 ms", "refreshes every 30 seconds" (the words
# that state it, then the value: a number, or a name holding one).
STATING_WORDS = r"is|are|was|equals|set to|stays at|takes|took|listens on|defaults? to|every|limit(?:ed)? to|now"
STATED_VALUE = r"\s+(?:[a-z]+\s+)?`?[\w./-]*\d"
# In a reply also "caps the series at 40".
_STATED = re.compile(rf"\b(?:{STATING_WORDS}|caps?\b[^.;\n]{{0,60}}?\bat){STATED_VALUE}", re.IGNORECASE)
_CLAUSE = re.compile(r"(?<=[;:])\s+|\s+(?=—|–)|,?\s+(?=because\b|since\b|so that\b|to stay\b)")
_LEAD_IN = re.compile(
    r"^(?:(?:so|ok|okay|right|good|found it|done|now|next|then|also|here)[,:]?\s+)+|"
    r"^(?:I'll|I will|I'm going to|let's|we'll|we will|I decided to|decided to)\s+(?:use\s+)?",
    re.IGNORECASE,
)
# What makes a clause worth a terse line: a choice made against another, or something it names (a number, a path,
# an identifier); "I'll read the module first" is a plan, not a decision.
_CHOICE = re.compile(r"\b(?:instead of|rather than|chose|decided|going with|switch(?:ed)? to|root cause)\b", re.I)
_REASON = re.compile(r"\s*(?:because|since|so that|to stay)\b", re.I)
_NAMED = re.compile(r"\d|\w[_./]\w|`|\b[a-z]+[A-Z]\w*")
# A clause that only announces the one after it: "Decision:", "The plan:", "Root cause:".
_LABEL = re.compile(r"^\s*(?:the\s+)?(?:decision|plan|approach|choice|fix|finding|root cause)\s*:\s*$", re.I)
# A clause that says what the agent is about to do, not what it decided or found ("check how X is used").
_PLAN = re.compile(r"(?:check|look|read|see|inspect|open|run|try|start|investigate|find out|figure out)\b", re.I)
TERSE_CLAUSE_CHARS = 70  # one clause of a terse ledger line
MAX_TERSE_CLAUSES = 3
MAX_FINDING_CLAUSES = 2  # of a finding line: the newest


@dataclass(frozen=True, slots=True)
class Call:
    """A tool call read back from its signature line."""

    name: str
    path: str | None
    command: str | None
    outcome: str  # ok | error | unknown

    @property
    def key(self) -> tuple[str, str]:
        """What a later call must repeat to resolve this one's error: the tool and its path or command."""
        return (self.name, self.path or self.command or "")


def parse_call(line: str) -> Call | None:
    """``▸ name(args) → outcome`` (or a nested ``↳`` line) as a Call; None when it is not a signature."""
    text = line.strip().removeprefix(CALL_MARK.strip()).removeprefix(NESTED_MARK.strip()).strip()
    match = _SIGNATURE.match(text)
    if match is None:
        return None
    args = match["args"]
    path = _PATH_ARG.search(args)
    command = _COMMAND_ARG.search(args)
    return Call(
        match["name"],
        path[1] if path else None,
        command[1] if command else None,
        match["outcome"],
    )


def calls_of(text: str) -> list[Call]:
    """Every call in a call item's text (its own line and its nested lines)."""
    return [call for line in text.split("\n") if (call := parse_call(line.strip())) is not None]


def sentences(text: str) -> list[str]:
    """The sentences of a reply, one line each, code blocks left out."""
    out = []
    for part in _SENTENCE_END.split(re.sub(r"```.*?(?:```|$)", "\n", text, flags=re.DOTALL)):
        part = " ".join(part.split())
        if part:
            out.append(part)
    return out


def decision_sentences(texts: Sequence[str], skip: str = "") -> list[str]:
    """Up to ``MAX_DECISIONS`` sentences that say what was decided or found (and why), in order, cut short."""
    found: list[str] = []
    for text in texts:
        for sentence in sentences(text):
            if len(sentence) >= 20 and _DECISION.search(sentence) and not sentence.endswith("?"):
                cut = shorten(sentence, DECISION_CHARS)
                if cut not in found and not skip.startswith(cut.rstrip(ELLIPSIS)):
                    found.append(cut)
    return found[:MAX_DECISIONS]


def _value_clause(sentence: str) -> str:
    """The clause of ``sentence`` that carries its decision or value, its lead-in words ("I'll use", "Found it:")
    left out, cut to ``TERSE_CLAUSE_CHARS``: ``a trie for the X lookups instead of a hash map``."""
    clauses = [c for c in _CLAUSE.split(sentence) if c.strip()]
    if len(clauses) > 1 and _LABEL.match(clauses[0]):  # "Decision: keep X pure": the clause after the label
        clauses = clauses[1:]
    best = next((c for c in clauses if _CHOICE.search(c)), None)
    best = best or next((c for c in clauses if _STATED.search(c)), None)
    best = best or next((c for c in clauses if _DECISION.search(c) and not _REASON.match(c)), None) or clauses[0]
    best = _LEAD_IN.sub("", best.strip().rstrip(".,;:")).strip()
    return shorten(best, TERSE_CLAUSE_CHARS)


def value_clauses(texts: Sequence[str]) -> list[str]:
    """What the replies decided or found, each as its value-bearing clause (see ``_value_clause``), in order: the
    sentences that state a choice or a value, up to ``MAX_TERSE_CLAUSES``, the newest when there are more."""
    found: list[str] = []
    for text in texts:
        for sentence in sentences(text):
            if len(sentence) < 20 or sentence.endswith("?"):
                continue
            if _DECISION.search(sentence) or _STATED.search(sentence):
                clause = _value_clause(sentence)
                if clause and clause not in found and (_CHOICE.search(clause) or _NAMED.search(clause)):
                    found.append(clause)
    return found[-MAX_TERSE_CLAUSES:]


def lead_sentence(text: str, limit: int = LEAD_CHARS) -> str:
    """The first sentence of a reply, one line, cut to ``limit`` characters with ``…``."""
    flat = text.strip()
    for part in _SENTENCE_END.split(flat):
        part = " ".join(part.split())
        if part and not part.startswith("```"):
            return part if len(part) <= limit else part[: limit - 1].rstrip() + ELLIPSIS
    return ""


class SpanItem(Protocol):
    """What the ledger reads of a span item (``spans.Item`` is one; the ledger does not import spans)."""

    @property
    def entry(self) -> str: ...

    @property
    def kind(self) -> str: ...

    @property
    def text(self) -> str: ...


Resolutions = dict[tuple[int, int, int], str]  # (span, item, call within the item) -> entry id of the later success


def resolutions(spans_items: Sequence[Sequence[SpanItem]]) -> Resolutions:
    """For every failed call, the entry id of the first later call with the same key that reported no error."""
    open_errors: dict[tuple[str, str], list[tuple[int, int, int]]] = {}
    resolved: Resolutions = {}
    for si, items in enumerate(spans_items):
        for ii, item in enumerate(items):
            if item.kind != "call":
                continue
            for ci, call in enumerate(calls_of(item.text)):
                if call.outcome == "error":
                    open_errors.setdefault(call.key, []).append((si, ii, ci))
                elif call.outcome == "ok" and call.key in open_errors:
                    for where in open_errors.pop(call.key):
                        resolved[where] = item.entry
    return resolved


def _paths(paths: list[str], limit: int = MAX_PATHS) -> str:
    unique = list(dict.fromkeys(paths))
    shown = ", ".join(unique[:limit])
    return shown + (f" (+{len(unique) - limit} more)" if len(unique) > limit else "")


def segment_lines(
    items: Sequence[SpanItem], si: int, start: int, end: int, resolved: Resolutions
) -> tuple[str, str, str, str]:
    """The full, the short, the terse and the finding ledger line of the segment ``items[start:end]`` of span
    ``si``. The terse line keeps only what a resumed agent could not easily find again, each as its value-bearing
    clause: what the replies decided or found, the files written and edited, commits and failures not resolved; it
    is empty when the segment holds none of these (the cap then removes the segment instead). The finding line
    keeps of it only what nothing else in the checkpoint shows (the file lists name the files changed, the block of
    unresolved errors the failures): what was decided or found, and commits; empty when there is none."""
    files: dict[str, list[str]] = {verb: [] for verb in FILE_VERBS.values()}
    commands: list[str] = []
    command_calls = 0
    command_errors = 0
    other: dict[str, int] = {}
    errors_other: list[str] = []
    prose = ""
    proses: list[str] = []
    kept_commands: list[str] = []  # commits and failed commands: named even in the short line
    notes: list[str] = []
    for ii in range(start, end):
        item = items[ii]
        if item.kind == "call":
            for ci, call in enumerate(calls_of(item.text)):
                later = resolved.get((si, ii, ci))
                status = call.outcome
                if status == "error":
                    status = f"error (ok later, [{later}])" if later else "error, not resolved here"
                if call.name in FILE_VERBS and call.path:
                    verb = FILE_VERBS[call.name]
                    files[verb].append(call.path if call.outcome != "error" else f"{call.path} ({status})")
                elif call.command is not None:
                    command_calls += 1
                    command_errors += call.outcome == "error"
                    shown = f"{shorten(call.command, COMMAND_CHARS)} → {status}"
                    commands.append(shown)
                    if (call.outcome == "error" and not later) or _COMMIT.search(call.command):
                        kept_commands.append(shown)
                else:
                    other[call.name] = other.get(call.name, 0) + 1
                    if call.outcome == "error":
                        errors_other.append(f"{call.name} → {status}")
        elif item.kind in ("assistant", "branch", "summary"):
            prose = item.text  # the last prose of the segment: where the agent left it
            proses.append(item.text)
        elif item.kind == "bash":
            commands.append(f"user ran {shorten(item.text, COMMAND_CHARS)}")
            command_calls += 1
        elif item.kind == "stop":
            notes.append(item.text.strip("()"))
        elif item.kind == "note":
            notes.append("the turn continues after this span")
        elif item.kind in ("custom", "other"):
            other["custom message"] = other.get("custom message", 0) + 1

    entries = [items[i].entry for i in range(start, end) if items[i].entry]
    where = ""
    if entries:
        where = f"[{entries[0]}] " if entries[0] == entries[-1] else f"[{entries[0]}..{entries[-1]}] "
    full: list[str] = []
    short: list[str] = []
    for verb in ("edited", "wrote"):
        if files[verb]:
            full.append(f"{verb} {_paths(files[verb])}")
            short.append(f"{verb} {_paths(files[verb], 4)}")
    if files["read"]:
        full.append(f"read {_paths(files['read'])}")
        count = len(dict.fromkeys(files["read"]))
        short.append(f"read {count} file{'s' if count != 1 else ''}")
    if commands:
        shown = ", ".join(commands[:MAX_COMMANDS])
        more = f" (+{len(commands) - MAX_COMMANDS} more)" if len(commands) > MAX_COMMANDS else ""
        full.append(f"ran {shown}{more}")
        failed = f" ({command_errors} failed)" if command_errors else ""
        named = f": {', '.join(kept_commands[:3])}" if kept_commands else ""
        short.append(f"ran {command_calls} command{'s' if command_calls != 1 else ''}{failed}{named}")
    if other:
        listed = ", ".join(f"{name} ×{n}" if n > 1 else name for name, n in other.items())
        full.append(f"called {listed}")
        if errors_other:
            full.append("; ".join(errors_other))
            short.append(f"{len(errors_other)} other call{'s' if len(errors_other) != 1 else ''} failed")
    full.extend(notes)
    short.extend(notes)
    if prose:
        lead = lead_sentence(prose)
        full.append(f'said: "{lead}"')
        short.append(f'said: "{lead_sentence(prose, SHORT_LEAD_CHARS)}"')
        decided = decision_sentences(proses, skip=lead)
        if decided:
            full.append("noted: " + " ".join(f'"{d}"' for d in decided))
            short.append(f'noted: "{shorten(decided[0], SHORT_LEAD_CHARS + 30)}"')
    body_full = "; ".join(full) or "nothing to report"
    body_short = "; ".join(short) or "nothing to report"
    terse: list[str] = []
    clauses = value_clauses(proses)
    if clauses:
        terse.append("; ".join(clauses))
    changed = [p for verb in ("edited", "wrote") for p in files[verb]]
    if changed:
        terse.append("changed " + _paths(changed, 2))
    terse.extend(kept_commands[:2])
    if errors_other:
        terse.append(errors_other[0])
    line_terse = (where + "; ".join(terse)) if terse else ""
    if len(line_terse) >= len(where + body_short):  # never longer than the short line it stands in for
        line_terse = where + body_short
    decided = [c for c in clauses if _CHOICE.search(c) or not _PLAN.match(c)]
    found = [*decided[-MAX_FINDING_CLAUSES:], *[c for c in kept_commands if _COMMIT.search(c)][:1]]
    line_found = (where + "; ".join(found)) if found else ""
    if len(line_found) >= len(line_terse):
        line_found = line_terse
    return where + body_full, where + body_short, line_terse, line_found


def open_errors(
    spans_items: Sequence[Sequence[SpanItem]], errors: Sequence[tuple[int, str, str, str]], limit: int = 8
) -> list[str]:
    """Lines for the failures no later call resolved: ``errors`` are (span, result entry, failed call's signature,
    error line) oldest first; ``spans_items`` may end with the kept tail's items (a success there resolves too).
    The newest ``limit``, oldest first, one line each: ``- [id] signature: error line``."""
    resolved = resolutions(spans_items)
    fixed: dict[tuple[int, tuple[str, str]], bool] = {}  # (span, key) -> every failure of it there was resolved
    for si, items in enumerate(spans_items):
        for ii, item in enumerate(items):
            if item.kind != "call":
                continue
            for ci, call in enumerate(calls_of(item.text)):
                if call.outcome == "error":
                    fixed[(si, call.key)] = fixed.get((si, call.key), True) and (si, ii, ci) in resolved
    latest: dict[tuple[str, str], str] = {}  # one line per failing call: its latest failure
    for si, entry, signature, line in errors:
        failed = parse_call(signature)
        if failed is None or fixed.get((si, failed.key), False):
            continue
        shown = shorten(signature.removesuffix(" → error"), COMMAND_CHARS + 20)
        latest.pop(failed.key, None)
        latest[failed.key] = f"- [{entry}] {shown}: {shorten(line, LEAD_CHARS)}"
    return list(latest.values())[-limit:]
