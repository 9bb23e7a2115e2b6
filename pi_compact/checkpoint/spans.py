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

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pi_compact.checkpoint.signatures import (
    CALL_MARK,
    ELLIPSIS,
    bash_signature,
    json_cut,
    nested_signatures,
    tool_signature,
)
from pi_compact.projection import ProjectedEntry
from pi_compact.session.entries import Entry, JsonDict

REORIENTATION_CUSTOM_TYPE = "picompact.reorientation"

INLINE_KINDS = frozenset({"bash", "custom", "other"})
LINE_KINDS = frozenset({"assistant", "branch", "summary"})  # prose the cap may trim line by line
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

    @property
    def entries_attr(self) -> str:
        return self.first if self.first == self.last else f"{self.first}..{self.last}"

    def to_json(self) -> JsonDict:
        return {
            "compaction": self.number,
            "first": self.first,
            "last": self.last,
            "source": self.source,
            "items": [item.to_json() for item in self.items],
        }

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
        return cls(number, first, last, source, tuple(Item.from_json(i) for i in items))


# ---------------------------------------------------------------------------------------------------------------
# Building the new span from projected entries


def call_outcomes(entries: Iterable[Entry]) -> dict[tuple[str, str], tuple[str, JsonDict | None]]:
    """Outcome of every tool call on the branch, keyed by (assistant entry id, toolCallId).

    A result pairs with the oldest unanswered call of the same id before it. The label comes from the raw
    result's ``isError`` (a context edit never changes it); no result gives ``unknown``.
    """
    pending: dict[str, list[tuple[str, str]]] = {}
    outcomes: dict[tuple[str, str], tuple[str, JsonDict | None]] = {}
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
                        outcomes[key] = ("unknown", None)
                        pending.setdefault(block["id"], []).append(key)
        elif role == "toolResult":
            queue = pending.get(message.get("toolCallId"))  # type: ignore[arg-type]
            if queue:
                key = queue.pop(0)
                outcomes[key] = ("error" if message.get("isError") else "ok", message)
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


def _assistant_items(
    entry_id: str, message: JsonDict, head: str, outcomes: dict[tuple[str, str], tuple[str, JsonDict | None]], cwd: str
) -> list[Item]:
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
            outcome, result = (
                outcomes.get((entry_id, call_id), ("unknown", None))
                if isinstance(call_id, str)
                else (
                    "unknown",
                    None,
                )
            )
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
    outcomes: dict[tuple[str, str], tuple[str, JsonDict | None]],
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
    outcomes: dict[tuple[str, str], tuple[str, JsonDict | None]],
    cwd: str,
    split_turn: bool = False,
) -> Span:
    """The span for the entries compacted now, rendered as projected: omitted entries vanish, replaced ones show
    their replacement."""
    items: list[Item] = []
    for pe in entries:
        if pe.entry.type == "compaction":
            continue  # an older compaction inside the kept range contributes nothing to context
        for message in pe.messages:
            items.extend(message_items(pe.entry.id, message, outcomes, cwd, pe.replaced))
    if split_turn and items:
        items.append(Item("", "note", "", SPLIT_TURN_NOTE))
    first = entries[0].entry.id if entries else ""
    last = entries[-1].entry.id if entries else ""
    return Span(number, first, last, "verbatim", tuple(items))


def summary_span(number: int, compaction: Entry) -> Span:
    """A compaction picompact did not write (Pi's model summary, another extension): one span with its text."""
    summary = compaction.raw.get("summary")
    text = summary if isinstance(summary, str) and summary.strip() else "(empty summary)"
    item = Item(compaction.id, "summary", "summary of the earlier conversation:", text)
    return Span(number, compaction.id, compaction.id, "summary", (item,))


# ---------------------------------------------------------------------------------------------------------------
# Rendering (with what the cap removed)


@dataclass(slots=True)
class TrimState:
    """What the cap changed in one span: removed units and user messages shortened to stubs.

    Units: a user item is one unit ``(i, -1)``; any other item contributes one unit per line ``(i, j)``.
    """

    removed: set[tuple[int, int]] = field(default_factory=set)
    short: dict[int, str] = field(default_factory=dict)

    @property
    def changed(self) -> bool:
        return bool(self.removed or self.short)


def item_units(index: int, item: Item) -> list[tuple[int, int]]:
    """What the cap removes one at a time: a user message whole ``(i, -1)``, prose line by line ``(i, j)``, any
    other item whole ``(i, 0)`` (a call stays together with its nested calls)."""
    if item.kind == "user":
        return [(index, -1)]
    if item.kind in LINE_KINDS:
        return [(index, j) for j in range(item.text.count("\n") + 1)]
    return [(index, 0)]


def unit_text(item: Item, unit: tuple[int, int]) -> str:
    """The text one unit stands for."""
    if unit[1] < 0 or item.kind not in LINE_KINDS:
        return item.text
    return item.text.split("\n")[unit[1]]


RECOVER_HINT = "The originals are in the session file: recover them by entry id with the commands at the top"


def _marker(first: str, last: str) -> str:
    if not first:
        return f"[{ELLIPSIS} removed by the size cap {ELLIPSIS}]"
    where = f"entry {first}" if first == last else f"entries {first}..{last}"
    return f"[{ELLIPSIS} removed by the size cap: {where} {ELLIPSIS}]"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def trim_note(span: Span, state: TrimState) -> str:
    """The recovery note of a span the cap changed."""
    users = sum(1 for _, j in state.removed if j < 0)
    lines = sum(
        1 if span.items[i].kind in LINE_KINDS else span.items[i].text.count("\n") + 1
        for i, j in state.removed
        if j >= 0
    )
    shortened = sum(1 for i in state.short if (i, -1) not in state.removed)
    parts = []
    if lines:
        parts.append(_plural(lines, "line") + " of tool calls, replies and notes removed")
    if users:
        parts.append(_plural(users, "user message") + " removed")
    if shortened:
        parts.append(_plural(shortened, "user message") + " shortened")
    return f"[size cap: {'; '.join(parts)}. {RECOVER_HINT}]"


def render_body(items: Sequence[Item], state: TrimState | None = None) -> tuple[str, bool]:
    """The span body and whether anything of it is left (False when the cap removed everything)."""
    removed = state.removed if state else set()
    short = state.short if state else {}
    touched = Counter(i for i, _ in removed)  # removed units per item; untouched items are copied whole
    blocks: list[list[str]] = []
    prev_key: tuple[str, str] | None = None
    gap: list[str] | None = None  # [first entry, last entry] of the removed run being collected
    kept_any = False

    for index, item in enumerate(items):
        if index not in touched:
            pieces = [(short.get(index, item.text), False)]
        elif item.kind not in LINE_KINDS or touched[index] == item.text.count("\n") + 1:
            pieces = [(item.text, True)]  # removed whole
        else:
            pieces = [(line, (index, j) in removed) for j, line in enumerate(item.text.split("\n"))]
        shown_head = False
        for piece, is_removed in pieces:
            if is_removed:
                if gap is None:
                    gap = [item.entry, item.entry]
                elif item.entry:
                    gap[0] = gap[0] or item.entry
                    gap[1] = item.entry
                continue
            if gap is not None:
                blocks.append([_marker(gap[0], gap[1])])
                gap, prev_key, shown_head = None, None, False
            kept_any = True
            key = (item.entry, item.head)
            if shown_head or (item.head and key == prev_key):
                blocks[-1].append(piece)
            elif not item.head:
                blocks.append([piece])
            elif item.kind in INLINE_KINDS:
                blocks.append([f"[{item.entry}] {item.head} {piece}"])
            else:
                blocks.append([f"[{item.entry}] {item.head}", piece])
            shown_head = True
            prev_key = key if item.head else None
    if gap is not None:
        blocks.append([_marker(gap[0], gap[1])])
    return "\n\n".join("\n".join(block) for block in blocks), kept_any


def render_span(span: Span, state: TrimState | None = None) -> str:
    """A span wrapped in its tag; ``trimmed="true"`` and a recovery note when the cap changed it."""
    attrs = f'compaction="{span.number}" entries="{span.entries_attr}"'
    if span.source == "summary":
        attrs += ' source="summary"'
    if not span.items:
        return f"<span {attrs}></span>"
    body, kept_any = render_body(span.items, state)
    if state is None or not state.changed:
        return f"<span {attrs}>\n{body}\n</span>"
    attrs += ' trimmed="true"'
    if not kept_any:
        return f"<span {attrs}>[all of it removed by the size cap. {RECOVER_HINT}]</span>"
    return f"<span {attrs}>\n{trim_note(span, state)}\n{body}\n</span>"
