"""Spans: the compacted conversation of one compaction, as items a model can read and a cap can trim.

A span is stored untrimmed in the compaction entry's ``details`` (see ``Span.to_json``) and re-rendered unchanged by
later checkpoints. Rendering layout (one block per entry, blocks separated by a blank line)::

    <span compaction="2" entries="a1b2c3d4..e5f6a7b8">
    [a1b2c3d4] user:
    Fix the rounding bug in src/tax.ts
    <BLANKLINE>
    [b2c3d4e5] assistant:
    Reading the file first.
    ▸ read(path=src/tax.ts) → ok
    ▸ bash(command="npm test") → error
    <BLANKLINE>
    [c3d4e5f6] user ran: "git status" → exit 0
    <BLANKLINE>
    [d4e5f6a7] custom "git-status": content removed
    </span>

Item kinds: ``user`` (verbatim user text, images as ``[image: mime]``), ``assistant`` (a prose block; thinking is
never rendered), ``call`` (a tool signature, nested calls indented under it), ``stop`` (an assistant reply that
ended in an error or was aborted), ``bash`` (a command the user ran, with its exit), ``custom`` (a custom message
stub), ``branch`` (a branch summary, as prose), ``summary`` (an inherited compaction summary, as prose),
``other`` (an unknown message role, stubbed), ``note`` (a remark with no entry of its own).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NamedTuple

from pi_compact.checkpoint.verbatim.facts import Fact, dedupe, facts_of_output, render_facts
from pi_compact.checkpoint.verbatim.ledger import Resolutions, segment_lines
from pi_compact.checkpoint.verbatim.signatures import (
    CALL_MARK,
    ELLIPSIS,
    bash_signature,
    json_cut,
    nested_signatures,
    tool_signature,
)
from pi_compact.pi.projection import ProjectedEntry
from pi_compact.session.entries import Entry, JsonDict

REORIENTATION_CUSTOM_TYPE = "picompact.reorientation"

INLINE_KINDS = frozenset({"bash", "custom", "other"})
ITEM_KINDS = frozenset({"user", "assistant", "call", "stop", "bash", "custom", "branch", "summary", "other", "note"})
SpanSource = Literal["verbatim", "summary"]


@dataclass(frozen=True, slots=True)
class Item:
    """One rendered piece of a span: ``head`` starts its entry's block (``[id] head``), ``text`` follows it."""

    entry: str
    kind: str
    head: str
    text: str

    def to_json(self) -> JsonDict:
        return {"id": self.entry, "kind": self.kind, "head": self.head, "text": self.text}

    @classmethod
    def from_json(cls, data: Any) -> Item:
        if not isinstance(data, dict):
            raise ValueError("a span item is not an object")
        values = [data.get(k) for k in ("id", "kind", "head", "text")]
        strings = [v for v in values if isinstance(v, str)]
        if len(strings) != 4 or strings[1] not in ITEM_KINDS:
            raise ValueError("a span item lacks id/kind/head/text strings")
        return cls(*strings)


@dataclass(frozen=True, slots=True)
class Span:
    """The compacted conversation of one compaction. ``source`` is ``summary`` for an inherited, foreign summary."""

    number: int
    first: str
    last: str
    source: SpanSource
    items: tuple[Item, ...]
    facts: tuple[Fact, ...] = ()  # from the tool outputs this span removed (facts.py)

    @property
    def entries_attr(self) -> str:
        return self.first if self.first == self.last else f"{self.first}..{self.last}"

    def to_json(self) -> JsonDict:
        data: JsonDict = {
            "compaction": self.number,
            "first": self.first,
            "last": self.last,
            "source": self.source,
            "items": [item.to_json() for item in self.items],
        }
        if self.facts:
            data["facts"] = [fact.to_json() for fact in self.facts]
        return data

    @classmethod
    def from_json(cls, data: Any) -> Span:
        """A saved span; ValueError when it is not one (the caller then treats the checkpoint as foreign)."""
        if not isinstance(data, dict):
            raise ValueError("a saved span is not an object")
        number, first, last, source = (data.get(k) for k in ("compaction", "first", "last", "source"))
        items = data.get("items")
        if not isinstance(number, int) or isinstance(number, bool) or number < 1:
            raise ValueError("a saved span has no compaction number")
        if not isinstance(first, str) or not isinstance(last, str) or source not in ("verbatim", "summary"):
            raise ValueError("a saved span lacks its entry range or source")
        if not isinstance(items, list):
            raise ValueError("a saved span has no item list")
        facts = data.get("facts", [])
        if not isinstance(facts, list):
            raise ValueError("a saved span's facts are not a list")
        return cls(
            number,
            first,
            last,
            source,
            tuple(Item.from_json(i) for i in items),
            tuple(Fact.from_json(f) for f in facts),
        )


# ---------------------------------------------------------------------------------------------------------------
# Building the new span from projected entries


class Outcome(NamedTuple):
    """How a tool call ended: its label, the paired result message and the entry that holds it."""

    label: str
    result: JsonDict | None
    entry: str | None


Outcomes = dict[tuple[str, str], Outcome]


def call_outcomes(entries: Iterable[Entry]) -> Outcomes:
    """Outcome of every tool call on the branch, keyed by (assistant entry id, toolCallId).

    A result pairs with the oldest unanswered call of the same id before it. The label comes from the raw
    result's ``isError`` (a context edit never changes it); no result gives ``unknown``.
    """
    pending: dict[str, list[tuple[str, str]]] = {}
    outcomes: Outcomes = {}
    for entry in entries:
        message = entry.message
        if message is None:
            continue
        role = message.get("role")
        if role == "assistant" and isinstance(message.get("content"), list):
            for block in message["content"]:
                if isinstance(block, dict) and block.get("type") == "toolCall" and isinstance(block.get("id"), str):
                    key = (entry.id, block["id"])
                    if key not in outcomes:
                        outcomes[key] = Outcome("unknown", None, None)
                        pending.setdefault(block["id"], []).append(key)
        elif role == "toolResult":
            queue = pending.get(message.get("toolCallId"))  # type: ignore[arg-type]
            if queue:
                key = queue.pop(0)
                outcomes[key] = Outcome("error" if message.get("isError") else "ok", message, entry.id)
    return outcomes


def user_text(content: Any) -> str:
    """A user message word for word: text blocks joined by newlines, images as ``[image: mime]`` placeholders."""
    if isinstance(content, str):
        return content if content else "(empty message)"
    parts: list[str] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind == "image":
            mime = block.get("mimeType")
            parts.append(f"[image: {mime}]" if isinstance(mime, str) and mime else "[image]")
        else:
            parts.append(f"[{json_cut(kind)} block]")
    text = "\n".join(parts)
    return text if text.strip() else "(empty message)"


def _assistant_items(entry_id: str, message: JsonDict, head: str, outcomes: Outcomes, cwd: str) -> list[Item]:
    items: list[Item] = []
    content = message.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    for block in blocks if isinstance(blocks, list) else []:
        if not isinstance(block, dict):
            continue
        kind = block.get("type")
        if kind == "text":
            text = block.get("text")
            if isinstance(text, str) and text.strip():
                items.append(Item(entry_id, "assistant", head, text))
        elif kind == "toolCall":
            call_id = block.get("id")
            found = outcomes.get((entry_id, call_id)) if isinstance(call_id, str) else None
            outcome, result = (found.label, found.result) if found is not None else ("unknown", None)
            lines = [CALL_MARK + tool_signature(block.get("name"), block.get("arguments"), outcome, cwd)]
            lines += nested_signatures(result, cwd)
            items.append(Item(entry_id, "call", head, "\n".join(lines)))
        # thinking and any other block kinds are left out: they stay in the raw session
    stop = message.get("stopReason")
    if stop in ("error", "aborted"):
        error = message.get("errorMessage")
        detail = f": {json_cut(error)}" if isinstance(error, str) and error else ""
        verb = "was aborted" if stop == "aborted" else "ended with an error"
        items.append(Item(entry_id, "stop", head, f"(the reply {verb}{detail})"))
    return items


def message_items(
    entry_id: str,
    message: JsonDict,
    outcomes: Outcomes,
    cwd: str,
    edited: bool = False,
) -> list[Item]:
    """The items of one projected message (V3–V12)."""
    role = message.get("role")
    mark = " (context-edited)" if edited else ""
    if role == "user":
        return [Item(entry_id, "user", f"user{mark}:", user_text(message.get("content")))]
    if role == "assistant":
        return _assistant_items(entry_id, message, f"assistant{mark}:", outcomes, cwd)
    if role in ("toolResult", "system"):
        return []  # outputs are removed (their outcome labels the call); the system prompt lives on separately
    if role == "bashExecution":
        return [Item(entry_id, "bash", "user ran:", bash_signature(message, cwd))]
    if role == "custom":
        custom_type = message.get("customType")
        if custom_type == REORIENTATION_CUSTOM_TYPE:
            return []  # regenerated by every checkpoint, never accumulated
        return [Item(entry_id, "custom", f"custom {json_cut(custom_type)}{mark}:", "content removed")]
    if role == "branchSummary":
        source = message.get("fromId")
        origin = f" (from {source})" if isinstance(source, str) and source else ""
        return [Item(entry_id, "branch", f"branch summary{origin}:", str(message.get("summary") or ""))]
    if role == "compactionSummary":
        return [Item(entry_id, "summary", "earlier summary:", str(message.get("summary") or ""))]
    return [Item(entry_id, "other", f"{json_cut(role)} message:", "content removed")]


SPLIT_TURN_NOTE = "(This turn continues after this span.)"


def build_span(
    number: int,
    entries: Sequence[ProjectedEntry],
    outcomes: Outcomes,
    cwd: str,
    split_turn: bool = False,
    known_facts: set[tuple[str, str]] | None = None,
) -> Span:
    """The span for the entries compacted now, rendered as projected: omitted entries vanish, replaced ones show
    their replacement. Its facts are those of the outputs it removes that ``known_facts`` (kind, text) does not
    hold yet; the set is updated."""
    items: list[Item] = []
    found: list[Fact] = []
    for pe in entries:
        if pe.entry.type == "compaction":
            continue  # an older compaction inside the kept range contributes nothing to context
        for message in pe.messages:
            items.extend(message_items(pe.entry.id, message, outcomes, cwd, pe.replaced))
            found.extend(_output_facts(pe.entry.id, message, outcomes, cwd))
    if split_turn and items:
        items.append(Item("", "note", "", SPLIT_TURN_NOTE))
    first = entries[0].entry.id if entries else ""
    last = entries[-1].entry.id if entries else ""
    visible = "\n".join(item.text for item in items)
    facts = dedupe(found, known_facts if known_facts is not None else set(), visible)
    return Span(number, first, last, "verbatim", tuple(items), tuple(facts))


def _output_facts(entry_id: str, message: JsonDict, outcomes: Outcomes, cwd: str) -> list[Fact]:
    """The facts of the outputs of an assistant message's tool calls (the outputs themselves are removed)."""
    if message.get("role") != "assistant" or not isinstance(message.get("content"), list):
        return []
    facts: list[Fact] = []
    for block in message["content"]:
        if not isinstance(block, dict) or block.get("type") != "toolCall" or not isinstance(block.get("id"), str):
            continue
        found = outcomes.get((entry_id, block["id"]))
        if found is None or found.result is None:
            continue
        where = found.entry or entry_id
        name, arguments = block.get("name"), block.get("arguments")
        signature = tool_signature(name, arguments, found.label, cwd) if found.label == "error" else ""
        facts.extend(facts_of_output(where, str(name), arguments, found.result, found.label, cwd, signature))
    return facts


def summary_span(number: int, compaction: Entry) -> Span:
    """A compaction picompact did not write (Pi's model summary, another extension): one span with its text."""
    summary = compaction.raw.get("summary")
    text = summary if isinstance(summary, str) and summary.strip() else "(empty summary)"
    item = Item(compaction.id, "summary", "summary of the earlier conversation:", text)
    return Span(number, compaction.id, compaction.id, "summary", (item,))


# ---------------------------------------------------------------------------------------------------------------
# Rendering (with what the cap changed)


def segments(items: Sequence[Item]) -> tuple[tuple[int, int], ...]:
    """The runs of consecutive non-user items, as ``(start, end)`` index ranges: what the agent did between two
    user messages, the unit the cap condenses into a ledger line."""
    runs: list[tuple[int, int]] = []
    start: int | None = None
    for index, item in enumerate(items):
        if item.kind == "user":
            if start is not None:
                runs.append((start, index))
                start = None
        elif start is None:
            start = index
    if start is not None:
        runs.append((start, len(items)))
    return tuple(runs)


CONDENSED_HEAD = "assistant, condensed:"
FACTS_HEAD = "facts from the removed tool output:"


@dataclass(frozen=True, slots=True)
class SpanLayout:
    """A span with what the cap can put in place of its parts: each segment's full, short, terse and finding ledger
    line (the last two empty when the segment holds nothing they keep), and its facts as rendered lines (oldest
    first)."""

    span: Span
    segments: tuple[tuple[int, int], ...]
    ledger: tuple[tuple[str, str, str, str], ...]
    facts: tuple[str, ...]


def span_layout(span: Span, index: int = 0, resolved: Resolutions | None = None) -> SpanLayout:
    """The layout of ``span``, the ``index``-th of the checkpoint (``resolved``: see ledger.resolutions)."""
    runs = segments(span.items)
    ledger = tuple(segment_lines(span.items, index, start, end, resolved or {}) for start, end in runs)
    return SpanLayout(span, runs, ledger, tuple(render_facts(span.facts)))


# Levels of a segment under the cap: its items, its full, short, terse and finding ledger line, nothing.
KEPT, CONDENSED, SHORT, TERSE, FINDING, GONE = 0, 1, 2, 3, 4, 5


@dataclass(slots=True)
class TrimState:
    """What the cap changed in one span: segment levels, user messages shortened to stubs or removed, and how
    many of its oldest fact lines were dropped."""

    levels: dict[int, int] = field(default_factory=dict)
    short: dict[int, str] = field(default_factory=dict)
    removed: set[int] = field(default_factory=set)
    facts_dropped: int = 0

    @property
    def changed(self) -> bool:
        return bool(any(self.levels.values()) or self.short or self.removed or self.facts_dropped)

    def copy(self) -> TrimState:
        return TrimState(dict(self.levels), dict(self.short), set(self.removed), self.facts_dropped)


RECOVER_HINT = "recover the originals by entry id"  # the commands are in the introduction, said once
EMPTIED_SUFFIX = f"[all of it removed by the size cap; {RECOVER_HINT}]</span>"


RUN_MARKER = f"[{ELLIPSIS}]"  # a removed run of tool calls and replies between two kept items


def _marker(first: str, last: str, users: bool = True) -> str:
    if not users:
        return RUN_MARKER
    if not first:
        return f"[{ELLIPSIS} removed by the size cap {ELLIPSIS}]"
    where = f"entry {first}" if first == last else f"entries {first}..{last}"
    return f"[{ELLIPSIS} removed by the size cap: {where} {ELLIPSIS}]"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def trim_note(layout: SpanLayout, state: TrimState) -> str:
    """The recovery note of a span the cap changed."""
    levels = [_level(layout, k, level) for k, level in state.levels.items()]
    condensed = sum(1 for level in levels if level in (CONDENSED, SHORT, TERSE, FINDING))
    gone = sum(1 for level in levels if level == GONE)
    shortened = sum(1 for i in state.short if i not in state.removed)
    parts = []
    if condensed:
        parts.append(_plural(condensed, "run") + " of tool calls and replies condensed")
    if gone:
        parts.append(_plural(gone, "run") + f" of tool calls and replies removed ({RUN_MARKER} between kept items)")
    if state.removed:
        parts.append(_plural(len(state.removed), "user message") + " removed")
    if shortened:
        parts.append(_plural(shortened, "user message") + " shortened")
    if state.facts_dropped:
        parts.append(_plural(min(state.facts_dropped, len(layout.facts)), "fact line") + " removed")
    return f"[size cap: {'; '.join(parts)}; {RECOVER_HINT}]"


def _level(layout: SpanLayout, k: int, level: int) -> int:
    """The level segment ``k`` is shown at: a terse or finding level with no such line is no line at all."""
    return GONE if level in (TERSE, FINDING) and not layout.ledger[k][level - 1] else level


def _segment_blocks(items: Sequence[Item], start: int, end: int) -> list[list[str]]:
    """The items of one kept segment, one block per entry (consecutive items of an entry share its header)."""
    blocks: list[list[str]] = []
    prev_key: tuple[str, str] | None = None
    for index in range(start, end):
        item = items[index]
        key = (item.entry, item.head)
        if item.head and key == prev_key:
            blocks[-1].append(item.text)
        elif not item.head:
            blocks.append([item.text])
        elif item.kind in INLINE_KINDS:
            blocks.append([f"[{item.entry}] {item.head} {item.text}"])
        else:
            blocks.append([f"[{item.entry}] {item.head}", item.text])
        prev_key = key if item.head else None
    return blocks


def _condensed(line: str) -> str:
    """A ledger line under the condensed head: ``[a..b] assistant, condensed: …``."""
    if line.startswith("["):
        where, _, body = line.partition("] ")
        return f"{where}] {CONDENSED_HEAD} {body}"
    return f"{CONDENSED_HEAD} {line}"


def render_body(layout: SpanLayout, state: TrimState | None = None) -> tuple[str, bool]:
    """The span body and whether anything of it is left (False when the cap removed everything)."""
    items = layout.span.items
    state = state or TrimState()
    starts = {start: k for k, (start, _) in enumerate(layout.segments)}
    blocks: list[list[str]] = []
    gap: list[str] | None = None  # [first entry, last entry] of the removed run being collected
    gap_users = False  # whether the run holds a user message (then its ids are named)

    def widen(first: str, last: str, user: bool = False) -> None:
        nonlocal gap, gap_users
        gap_users = gap_users or user
        if gap is None:
            gap = [first, last]
        elif last:
            gap[0] = gap[0] or first
            gap[1] = last

    def flush() -> None:
        nonlocal gap, gap_users
        if gap is not None:
            blocks.append([_marker(gap[0], gap[1], gap_users or not blocks)])
            gap, gap_users = None, False

    index = 0
    while index < len(items):
        item = items[index]
        if index in starts:
            k = starts[index]
            start, end = layout.segments[k]
            level = _level(layout, k, state.levels.get(k, KEPT))
            if level == GONE:
                ids = [items[i].entry for i in range(start, end) if items[i].entry]
                widen(ids[0] if ids else "", ids[-1] if ids else "")
            else:
                flush()
                if level == KEPT:
                    blocks.extend(_segment_blocks(items, start, end))
                else:
                    blocks.append([_condensed(layout.ledger[k][level - 1])])
            index = end
            continue
        if index in state.removed:
            widen(item.entry, item.entry, user=True)
        else:
            flush()
            blocks.append([f"[{item.entry}] {item.head}", state.short.get(index, item.text)])
        index += 1
    flush()
    facts = layout.facts[state.facts_dropped :]
    if facts:
        blocks.append([FACTS_HEAD, *facts])
    kept_any = any(
        block[0] != RUN_MARKER and not block[0].startswith(f"[{ELLIPSIS} removed by the size cap") for block in blocks
    )
    return "\n\n".join("\n".join(block) for block in blocks), kept_any


def render_span(span: Span | SpanLayout, state: TrimState | None = None) -> str:
    """A span wrapped in its tag; ``trimmed="true"`` and a recovery note when the cap changed it."""
    if isinstance(span, SpanLayout):
        layout = span
    elif state is not None and any(state.levels.values()):
        layout = span_layout(span)
    else:  # nothing condensed: no ledger line is shown, so none is made
        layout = SpanLayout(span, segments(span.items), (), tuple(render_facts(span.facts)))
    span = layout.span
    attrs = f'compaction="{span.number}" entries="{span.entries_attr}"'
    if span.source == "summary":
        attrs += ' source="summary"'
    if not span.items and not span.facts:
        return f"<span {attrs}></span>"
    body, kept_any = render_body(layout, state)
    if state is None or not state.changed:
        return f"<span {attrs}>\n{body}\n</span>"
    attrs += ' trimmed="true"'
    if not kept_any:
        return f"<span {attrs}>{EMPTIED_SUFFIX}"
    return f"<span {attrs}>\n{trim_note(layout, state)}\n{body}\n</span>"
