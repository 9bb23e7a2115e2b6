"""``coverage``: what of the compacted history survives in the text the model reads after a compaction.

A deterministic recall proxy, the same for any compaction (picompact's verbatim checkpoint, an LLM summary by
picompact or by Pi, an extension's): the compacted span is what the compaction replaced (Pi's projection just before
it, from the previous compaction's kept range up to ``firstKeptEntryId``); the text the model reads is Pi's
projection right after it (the summary, the kept tail, and the entries written with the compaction, such as
picompact's re-orientation message). Four categories of items are looked for in that text:

- user messages: ``verbatim`` (whole text present), ``shortened`` (at least ``SHORTENED_MIN_SHARE`` of its
  characters present, in runs of three words or more: a stub), ``trace`` (less than that, or only its entry id: a
  reader knows it was there, not what it said), else ``missing`` (gone);
- modified files (write/edit tool calls): ``found`` when the path appears (as written or relative to the session
  cwd);
- failed tool results (and failed shell commands): their most distinctive error line;
- decision-like assistant sentences ("I'll…", "decided…", "instead of…"): ``verbatim``, ``shortened``, ``trace``,
  ``missing``;
- standing instructions of the compacted user messages (checkpoint/standing.py decides which sentences state one):
  ``rules`` (rules, constraints, preferences) and ``values`` (settings; a value a later message superseded is not
  counted, only the one in force): graded as decisions are;
- ``progress``: each command the agent ran (found when the command's text appears).

Every missing item is looked up with ``picompact grep`` (fixed string) on the raw branch: ``recovered`` says whether
the search finds it in its own entry (it always should).

Each category's ``score`` counts only what a reader can use: a whole item counts 1, a shortened one the share of
its characters still present, a trace and a missing item nothing (``score_any`` is the share with anything left at
all, a trace included: the looser figure). Text is compared after collapsing whitespace; nothing is
paraphrase-aware, by design: the same inputs always give the same score.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from pi_compact.errors import NotFoundError, UsageError
from pi_compact.js import js_stringify
from pi_compact.pi.messages import convert_to_llm
from pi_compact.pi.plan import FileOps
from pi_compact.pi.projection import build_projection
from pi_compact.pi.tokens import message_text_for_count
from pi_compact.session.entries import Entry, JsonDict, Session
from pi_compact.session.tree import Branch, get_branch, resolve_entry

if TYPE_CHECKING:
    from pi_compact.ops.check import CheckResult

CATEGORIES = ("user_messages", "rules", "values", "decisions", "progress", "modified_files", "failed_tool_results")
NEEDLE_CHARS = 80
SNIPPET_CHARS = 120
# A text item with at least this share of its characters present is ``shortened`` (a stub a reader can use); less
# than that is a ``trace`` (its opening words, its id).
SHORTENED_MIN_SHARE = 0.25

Status = Literal["verbatim", "shortened", "trace", "found", "missing"]

DECISION = re.compile(
    r"\b(?:I'll|I will|I'm going to|let's|let us|we'll|we will|we should|I decided|decided|decision|"
    r"instead of|rather than|chose|choose|going with|switch(?:ed)? to|the plan is|the approach|should use|"
    r"will use|I prefer|we prefer)\b",
    re.IGNORECASE,
)
SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")
ERROR_HINT = re.compile(
    r"error|exception|traceback|failed|failure|not found|no such|cannot|can't|denied|fatal|panic|undefined|invalid",
    re.IGNORECASE,
)
_SPACE = re.compile(r"\s+")


def normalize(text: str) -> str:
    return _SPACE.sub(" ", text).strip()


class CoverageItemJSON(TypedDict):
    category: str
    entry_id: str
    line: int
    text: str
    status: str
    kept_share: float  # the share of its characters the model still reads (1 whole, 0 gone)
    needle: str
    recovered: bool | None


class CategoryScoreJSON(TypedDict):
    category: str
    total: int
    present: int  # whole (or found)
    shortened: int
    shortened_share: float | None  # the mean share of characters the shortened items keep
    trace: int  # only a trace: the opening words or the entry id
    partial: int  # shortened + trace (the figure of earlier versions)
    missing: int  # gone
    recovered: int | None  # of the missing, how many grep finds (null in a dry run: nothing searched)
    score: float | None  # (present + the shares the shortened keep) / total: what a reader can use
    score_any: float | None  # (present + shortened + trace) / total: anything left at all


@dataclass(frozen=True, slots=True)
class CoverageItem:
    """One thing from the compacted span, and whether the model can still read it."""

    category: str
    entry_id: str
    line: int
    text: str  # what was looked for (a path, an error line, a sentence, a user message)
    status: Status
    needle: str  # the fixed string grep looks for
    recovered: bool | None = None  # for missing items: whether grep finds it in its entry
    kept_share: float = -1.0  # the share of its characters present; -1: 1 when verbatim or found, else 0

    @property
    def share(self) -> float:
        if self.kept_share >= 0:
            return self.kept_share
        return 1.0 if self.status in ("verbatim", "found") else 0.0

    def to_json(self) -> CoverageItemJSON:
        snippet = self.text if len(self.text) <= SNIPPET_CHARS else self.text[: SNIPPET_CHARS - 1] + "…"
        return {
            "category": self.category,
            "entry_id": self.entry_id,
            "line": self.line,
            "text": snippet,
            "status": self.status,
            "kept_share": round(self.share, 3),
            "needle": self.needle,
            "recovered": self.recovered,
        }


@dataclass(frozen=True, slots=True)
class CategoryScore:
    category: str
    total: int
    verbatim: int  # verbatim or found
    shortened: int
    trace: int
    missing: int
    recovered: int  # missing items grep finds
    shortened_kept: float = 0.0  # the sum of the shares of characters the shortened items keep

    @property
    def partial(self) -> int:
        return self.shortened + self.trace

    @property
    def score(self) -> float | None:
        """What a reader can use: whole items, and shortened ones by the share of characters they keep; None when
        there are none."""
        return (self.verbatim + self.shortened_kept) / self.total if self.total else None

    @property
    def score_any(self) -> float | None:
        """The share of items with anything left (a trace included)."""
        return (self.verbatim + self.partial) / self.total if self.total else None

    def to_json(self) -> CategoryScoreJSON:
        score, score_any = self.score, self.score_any
        return {
            "category": self.category,
            "total": self.total,
            "present": self.verbatim,
            "shortened": self.shortened,
            "shortened_share": round(self.shortened_kept / self.shortened, 3) if self.shortened else None,
            "trace": self.trace,
            "partial": self.partial,
            "missing": self.missing,
            "recovered": self.recovered,
            "score": round(score, 3) if score is not None else None,
            "score_any": round(score_any, 3) if score_any is not None else None,
        }


class CoverageJSON(TypedDict):
    """``CoverageResult.to_json()``: the ``coverage --json`` document."""

    session: str | None
    compaction_id: str
    compaction_line: int
    kind: str
    first_kept_entry_id: str | None
    span_entries: int
    context_chars: int
    categories: dict[str, CategoryScoreJSON]
    missing: list[CoverageItemJSON]
    items: list[CoverageItemJSON]


@dataclass
class CoverageResult:
    session: Session
    compaction: Entry
    kind: str
    span_entries: int
    context_chars: int
    items: list[CoverageItem]
    categories: list[CategoryScore] = field(default_factory=list)

    @property
    def missing(self) -> list[CoverageItem]:
        return [i for i in self.items if i.status == "missing"]

    def to_json(self) -> CoverageJSON:
        return {
            "session": str(self.session.path) if self.session.path else None,
            "compaction_id": self.compaction.id,
            "compaction_line": self.compaction.line,
            "kind": self.kind,
            "first_kept_entry_id": self.compaction.raw.get("firstKeptEntryId"),
            "span_entries": self.span_entries,
            "context_chars": self.context_chars,
            "categories": {c.category: c.to_json() for c in self.categories},
            "missing": [i.to_json() for i in self.missing],
            "items": [i.to_json() for i in self.items],
        }


def compaction_kind(entry: Entry) -> str:
    from pi_compact.checkpoint.verbatim.build import is_verbatim_details

    details = entry.raw.get("details")
    if is_verbatim_details(details):
        return "picompact verbatim checkpoint"
    if not entry.raw.get("fromHook"):
        return "LLM summary (Pi's format: Pi's own, or picompact --mode summary)"
    return "other (written by an extension)"


def _pick_compaction(session: Session, branch: Branch, compaction_id: str | None) -> Entry:
    where = str(session.path or "<session>")
    if compaction_id is not None:
        entry = resolve_entry(session, compaction_id)
        if entry.type != "compaction":
            raise UsageError(f"entry {compaction_id} is a {entry.kind}, not a compaction", path=where, line=entry.line)
        return entry
    for entry in reversed(branch.entries):
        if entry.type == "compaction":
            return entry
    raise NotFoundError("no compaction on this branch (give --compaction ID or --leaf)", path=where)


def _span_and_context(session: Session, compaction: Entry, branch: Branch) -> tuple[list[Entry], list[JsonDict]]:
    """The entries the compaction replaced, and the messages the model reads right after it.

    ``branch`` holds the compaction; the entries written with it (a re-orientation message, context edits: anything
    up to the next message) count as part of what it gives."""
    path = branch.entries
    at = next(i for i, e in enumerate(path) if e is compaction)
    before = build_projection(Branch(session, path[:at]))
    start = 1 if before.entries and before.entries[0].entry.type == "compaction" else 0
    kept = compaction.raw.get("firstKeptEntryId")
    cut = before.index_of(kept) if isinstance(kept, str) else -1
    span = [pe.entry for pe in before.entries[start : cut if cut >= 0 else len(before.entries)]]
    end = at + 1
    while end < len(path) and path[end].type != "message" and path[end].type != "compaction":
        end += 1
    after = build_projection(Branch(session, path[:end]))
    return span, after.messages


def _context_text(messages: list[JsonDict]) -> str:
    return normalize("\n".join(message_text_for_count(m) for m in convert_to_llm(messages)))


def _text_blocks(message: JsonDict, kinds: tuple[str, ...] = ("text",)) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(
        str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") in kinds and b.get("text")
    )


def _first_line(text: str) -> str:
    for line in text.split("\n"):
        if line.strip():
            return line.strip()[:NEEDLE_CHARS].strip()
    return ""


def _trigrams(text: str) -> set[tuple[str, ...]]:
    words = text.split(" ")
    return {tuple(words[i : i + 3]) for i in range(len(words) - 2)}


def kept_share(flat: str, context_trigrams: set[tuple[str, ...]]) -> float:
    """The share of the characters of ``flat`` (whitespace collapsed) that the context holds in runs of three
    words or more: a word counts when one of the word triples it is part of is in the context."""
    words = flat.split(" ")
    if len(words) < 3:
        return 0.0
    covered = [False] * len(words)
    for i in range(len(words) - 2):
        if (words[i], words[i + 1], words[i + 2]) in context_trigrams:
            covered[i] = covered[i + 1] = covered[i + 2] = True
    kept = sum(len(word) + 1 for word, hit in zip(words, covered, strict=True) if hit)
    return min(kept / (len(flat) + 1), 1.0)


def _grade(
    text: str, context: str, context_trigrams: set[tuple[str, ...]], entry_id: str | None = None
) -> tuple[Status, float]:
    """(status, share of characters kept): whole, shortened (a usable share kept), a trace (less, or only the
    entry id named), or missing."""
    flat = normalize(text)
    if not flat or flat in context:
        return "verbatim", 1.0
    share = kept_share(flat, context_trigrams)
    if share >= SHORTENED_MIN_SHARE:
        return "shortened", share
    if share > 0 or flat[:40] in context or (entry_id is not None and entry_id in context):
        return "trace", share
    return "missing", 0.0


# Lines that name no error of their own: a traceback's banner, the exit notice Pi's bash tool appends.
_BANNER = re.compile(r"^(?:Traceback \(most recent call last\):?|Command exited with code -?\d+)$")
_LINE_PREFIX = re.compile(r"^(?:[EF>]\s{2,}|[-*>|#:\s]+)")


def _error_line(text: str) -> str:
    """The line of an error output that names the error (test runners' "E   " margins dropped)."""
    lines = [_LINE_PREFIX.sub("", ln.strip()) for ln in text.split("\n") if ln.strip()]
    lines = [ln for ln in lines if ln and not _BANNER.match(ln)]
    for line in lines:
        if ERROR_HINT.search(line):
            return line[:SNIPPET_CHARS]
    return lines[0][:SNIPPET_CHARS] if lines else ""


def _standing_items(span: list[Entry], context: str, trigrams: set[tuple[str, ...]]) -> list[CoverageItem]:
    """The rules and the values in force that the compacted user messages state."""
    from pi_compact.checkpoint.verbatim.standing import standing_instructions

    lines = {e.id: e.line for e in span}
    messages = [
        (e.id, _text_blocks(e.message)) for e in span if e.message is not None and e.message.get("role") == "user"
    ]
    items = []
    for found in standing_instructions(messages, opening=False):
        if found.superseded_by is not None:
            continue
        category = "values" if found.kind == "value" else "rules" if found.kind != "goal" else None
        if category is None:
            continue
        status, share = _grade(found.text.rstrip("…"), context, trigrams)
        items.append(
            CoverageItem(
                category,
                found.entry,
                lines.get(found.entry, 0),
                found.text,
                status,
                found.text[:NEEDLE_CHARS].rstrip("…").strip(),
                kept_share=share,
            )
        )
    return items


def _command_text(block: Any) -> str | None:
    if not isinstance(block, dict) or block.get("type") != "toolCall":
        return None
    arguments = block.get("arguments")
    command = arguments.get("command") if isinstance(arguments, dict) else None
    return command if isinstance(command, str) and command.strip() else None


def _items(span: list[Entry], cwd: str, context: str) -> list[CoverageItem]:
    trigrams = _trigrams(context)
    items: list[CoverageItem] = _standing_items(span, context, trigrams)
    seen_paths: set[str] = set()
    for entry in span:
        message = entry.message
        if message is None:
            continue
        role = message.get("role")
        if role == "user":
            text = _text_blocks(message)
            if text.strip():
                status, share = _grade(text, context, trigrams, entry.id)
                items.append(
                    CoverageItem(
                        "user_messages",
                        entry.id,
                        entry.line,
                        normalize(text),
                        status,
                        _first_line(text),
                        kept_share=share,
                    )
                )
        elif role == "assistant":
            ops = FileOps()
            ops.add_message(message)
            for path in sorted(ops.written | ops.edited):
                if path in seen_paths:
                    continue
                seen_paths.add(path)
                relative = path[len(cwd) :].lstrip("/") if cwd and path.startswith(cwd.rstrip("/") + "/") else None
                found = path in context or (relative is not None and relative in context)
                items.append(
                    CoverageItem(
                        "modified_files",
                        entry.id,
                        entry.line,
                        path,
                        "found" if found else "missing",
                        path[:NEEDLE_CHARS],
                    )
                )
            content = message.get("content")
            for block in content if isinstance(content, list) else []:
                command = _command_text(block)
                if command is None:
                    continue
                shown = normalize(command)[:NEEDLE_CHARS].strip()
                relative = shown.replace(cwd.rstrip("/"), ".") if cwd else shown
                escaped = (js_stringify(relative) or "")[1:-1]
                present = any(form in context for form in (shown, relative, escaped))
                items.append(
                    CoverageItem("progress", entry.id, entry.line, shown, "found" if present else "missing", shown)
                )
            for sentence in _decisions(_text_blocks(message)):
                status, share = _grade(sentence, context, trigrams)
                items.append(
                    CoverageItem(
                        "decisions",
                        entry.id,
                        entry.line,
                        sentence,
                        status,
                        sentence[:NEEDLE_CHARS].strip(),
                        kept_share=share,
                    )
                )
        elif (role == "toolResult" and message.get("isError")) or (
            role == "bashExecution" and message.get("exitCode") not in (0, None) and not message.get("cancelled")
        ):
            text = _text_blocks(message) if role == "toolResult" else str(message.get("output") or "")
            line = _error_line(text)
            if line:
                seen: Status = "found" if normalize(line) in context else "missing"
                items.append(
                    CoverageItem("failed_tool_results", entry.id, entry.line, line, seen, line[:NEEDLE_CHARS].strip())
                )
    return items


def _decisions(text: str) -> list[str]:
    out = []
    for part in SENTENCE_END.split(text):
        sentence = normalize(part)
        if 20 <= len(sentence) <= 300 and not sentence.endswith("?") and DECISION.search(sentence):
            out.append(sentence)
    return out


def _recover(branch: Branch, item: CoverageItem) -> bool:
    """Whether ``picompact grep -F NEEDLE`` on the raw branch finds the item in its own entry: grep renders and
    matches each entry on its own, so that entry alone is searched (a search of the whole branch for each item
    would read every entry once per item)."""
    from pi_compact.search.grepping import GrepQuery, grep

    if not item.needle:
        return False
    own = Branch(branch.session, [e for e in branch.entries if e.id == item.entry_id])
    if not own.entries:
        return False
    cursor: str | None = None
    for _ in range(50):  # pages; a needle this specific rarely needs a second one
        page = grep(own, GrepQuery.of(item.needle, fixed=True), cursor=cursor, max_count=200)
        if any(m.entry_id == item.entry_id for m in page.matches):
            return True
        cursor = page.next_cursor
        if cursor is None:
            return False
    return False


def measure_coverage(
    session: Session, compaction_id: str | None = None, *, leaf_id: str | None = None, recover: bool = True
) -> CoverageResult:
    """Measure what the compaction ``compaction_id`` (default: the latest on the branch) kept readable."""
    branch = get_branch(session, leaf_id)
    compaction = _pick_compaction(session, branch, compaction_id)
    if branch.position(compaction.id) < 0 or branch.entries[branch.position(compaction.id)] is not compaction:
        branch = get_branch(session, compaction.id)  # a compaction off the leaf's branch: search its own branch
    span, after = _span_and_context(session, compaction, branch)
    context = _context_text(after)
    items = _items(span, session.cwd, context)
    if recover:
        items = [replace(i, recovered=_recover(branch, i)) if i.status == "missing" else i for i in items]
    categories = []
    for name in CATEGORIES:
        mine = [i for i in items if i.category == name]
        categories.append(
            CategoryScore(
                category=name,
                total=len(mine),
                verbatim=sum(1 for i in mine if i.status in ("verbatim", "found")),
                shortened=sum(1 for i in mine if i.status == "shortened"),
                trace=sum(1 for i in mine if i.status == "trace"),
                missing=sum(1 for i in mine if i.status == "missing"),
                recovered=sum(1 for i in mine if i.status == "missing" and i.recovered),
                shortened_kept=sum(i.share for i in mine if i.status == "shortened"),
            )
        )
    return CoverageResult(
        session=session,
        compaction=compaction,
        kind=compaction_kind(compaction),
        span_entries=len(span),
        context_chars=len(context),
        items=items,
        categories=categories,
    )


def drafted_coverage(check: CheckResult, entries: list[JsonDict]) -> dict[str, CategoryScoreJSON]:
    """The categories of the compaction ``entries`` would make (a dry run's draft), measured in memory on the
    session as it would be; nothing is searched (``recovered`` stays null)."""
    from pi_compact.ops.compact import session_after

    after, leaf = session_after(check, entries)
    measured = measure_coverage(after, str(entries[0]["id"]), leaf_id=leaf, recover=False)
    out: dict[str, CategoryScoreJSON] = {}
    for c in measured.categories:
        drafted = c.to_json()
        drafted["recovered"] = None
        out[c.category] = drafted
    return out
