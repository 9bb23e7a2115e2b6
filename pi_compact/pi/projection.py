"""Pi's context projection: what the model sees for a branch, and how many tokens that is.

Mirrors Pi 1.6's buildContextEntries / buildSessionProjection / estimateProjectedContextTokens.
"""

from __future__ import annotations

import contextlib
from operator import attrgetter, indexOf
from typing import Any, Literal, NamedTuple

from pi_compact.js import js_double, js_integer, js_string
from pi_compact.pi.messages import current_system_message, entry_messages
from pi_compact.pi.tokens import estimate_tokens
from pi_compact.session import load as loader
from pi_compact.session.entries import Entry, JsonDict
from pi_compact.session.tree import Branch

EDITABLE_ROLES = ("user", "assistant", "toolResult", "custom")
_UNKNOWN: Any = object()
_TYPE = attrgetter("type")


class ProjectedEntry:
    """One context entry with the messages it contributes after its latest context edit."""

    __slots__ = ("_tokens", "edit", "entry", "facts", "messages")

    def __init__(self, entry: Entry, messages: list[JsonDict], edit: Entry | None = None) -> None:
        self.entry = entry
        self.messages = messages
        self.edit = edit
        self._tokens: int | None = None
        self.facts: MessageFacts | None = None

    @property
    def tokens(self) -> int:
        if self._tokens is None:
            self._tokens = sum(map(estimate_tokens, self.messages))
        return self._tokens

    @property
    def omitted(self) -> bool:
        return self.edit is not None and self.edit.raw.get("replacement") is None

    @property
    def replaced(self) -> bool:
        return self.edit is not None and self.edit.raw.get("replacement") is not None


class MessageFacts(NamedTuple):
    """What the context needs of a message whose body is not held (``message_facts``): Pi's estimate of it, the
    tokens of its usage when Pi trusts it (``assistant_usage``), and the file operations Pi's lists take from it
    (``plan.FileOps``: read, write or edit with a path)."""

    tokens: int
    usage: int | None
    file_ops: tuple[tuple[str, str], ...]


def message_facts(message: JsonDict) -> MessageFacts | None:
    """The ``MessageFacts`` of a message (the loader keeps them of the live bodies it drops for their size:
    ``ops.check``); None for one without content, which Pi reads as one with empty content (``entry_messages``)."""
    if message.get("content") is None:
        return None
    usage = assistant_usage(message)
    ops: list[tuple[str, str]] = []
    role = message.get("role")
    calls: object = None
    if role == "assistant":
        calls = message.get("content")
    elif role == "toolResult":
        nested = message.get("nestedCalls")
        calls = nested.get("calls") if isinstance(nested, dict) else None
    if isinstance(calls, list):
        assistant = role == "assistant"
        for block in calls:
            if not isinstance(block, dict):
                continue
            if assistant and (block.get("type") != "toolCall" or "arguments" not in block or "name" not in block):
                continue
            tool, args = block.get("name"), block.get("arguments")
            path = args.get("path") if isinstance(args, dict) else None
            if tool in ("read", "write", "edit") and isinstance(path, str) and path:
                ops.append((tool, path))  # type: ignore[arg-type]
    return MessageFacts(
        estimate_tokens(message), calculate_usage_tokens(usage) if usage is not None else None, tuple(ops)
    )


class HeldProjectedEntry(ProjectedEntry):
    """A message entry whose body the loader dropped for its size (a long span never compacted): its facts stand
    in for it, and ``messages`` reads the body from the file each time, without keeping it, so a walk over the
    whole context holds one body at a time."""

    __slots__ = ()

    def __init__(self, entry: Entry, facts: MessageFacts) -> None:
        self.entry = entry
        self.edit = None
        self._tokens = facts.tokens
        self.facts = facts

    @property
    def messages(self) -> list[JsonDict]:  # type: ignore[override]
        entry = self.entry
        loaded = entry.loaded
        message = entry.raw["message"]
        if not loaded:
            entry.forget()
        return [message]


class Projection(NamedTuple):
    """The context entries in Pi's order: latest compaction, its kept range, then everything after it."""

    branch: Branch
    entries: list[ProjectedEntry]
    compaction: Entry | None
    model: tuple[str, str] | None
    thinking_level: str
    edits: dict[str, Entry]  # entry id -> its latest context edit

    @property
    def messages(self) -> list[JsonDict]:
        return [m for pe in self.entries for m in pe.messages]

    def index_of(self, entry_id: str) -> int:
        for i, pe in enumerate(self.entries):
            if pe.entry.id == entry_id:
                return i
        return -1


def session_model(path: list[Entry]) -> tuple[tuple[str, str] | None, str]:
    """The current model and thinking level: latest model_change or assistant message on the path.

    Walked from the leaf back (the latest of each wins), so only the entries that decide are read; once the model
    is decided, the latest thinking level change is looked for by type alone.
    """
    model: tuple[str, str] | None = None
    thinking: str | None = None
    i = len(path) - 1
    while i >= 0:
        entry = path[i]
        kind = entry.type
        if kind == "thinking_level_change":
            if thinking is None:
                thinking = str(entry.raw.get("thinkingLevel"))
        elif kind == "model_change":
            model = _model_ref(entry.raw.get("provider"), entry.raw.get("modelId"))
            break
        elif entry.role == "assistant":
            msg = entry.message or {}
            model = _model_ref(msg.get("provider"), msg.get("model"))
            break
        i -= 1
    if thinking is None and i > 0:  # the model decided at ``i``: the latest change before it, if any
        with contextlib.suppress(ValueError):
            at = i - 1 - indexOf(map(_TYPE, reversed(path[:i])), "thinking_level_change")
            thinking = str(path[at].raw.get("thinkingLevel"))
    return model, "off" if thinking is None else thinking


def _model_ref(provider: object, model_id: object) -> tuple[str, str] | None:
    """(provider, id), or None when the entry does not name both (Pi then knows no model either)."""
    if isinstance(provider, str) and provider and isinstance(model_id, str) and model_id:
        return provider, model_id
    return None


def context_entries(path: list[Entry], distinct: bool = False) -> tuple[list[Entry], Entry | None]:
    """Latest compaction first, then its kept range (system messages left out), then all later entries.

    ``distinct``: no id is on the path twice (a walked branch), so the first kept entry is looked for from the
    compaction back, where it lies."""
    compaction_index = -1
    for i in range(len(path) - 1, -1, -1):
        if path[i].type == "compaction":
            compaction_index = i
            break
    if compaction_index < 0:
        return list(path), None
    compaction = path[compaction_index]
    first_kept = compaction.raw.get("firstKeptEntryId")
    start = compaction_index  # none kept when the first kept entry is not before the compaction
    if distinct and isinstance(first_kept, str):  # (entries without an id may repeat None)
        for i in range(compaction_index - 1, -1, -1):
            if path[i].id == first_kept:
                start = i
                break
    else:
        start = next((i for i in range(compaction_index) if path[i].id == first_kept), compaction_index)
    out = [compaction]
    out.extend([entry for entry in path[start:compaction_index] if entry.role != "system"])
    out.extend(path[compaction_index + 1 :])
    return out, compaction


def loadable_replacement(replacement: object) -> bool:
    """Whether Pi can project a ``context_edit``'s replacement: null (an omission) or an object whose ``content`` is
    a string or an array (as ``appendContextEdit`` requires). Any other value makes Pi 1.6 throw ("content is not
    iterable") when it builds the context of a branch where the edit and its target are in view."""
    if replacement is None:
        return True
    return isinstance(replacement, dict) and isinstance(replacement.get("content"), (str, list))


def unloadable_edits(projection: Projection) -> list[Entry]:
    """The context edits in view whose replacement Pi cannot project (``loadable_replacement``): Pi cannot resume
    this branch."""
    return [
        pe.edit
        for pe in projection.entries
        if pe.edit is not None and not loadable_replacement(pe.edit.raw.get("replacement"))
    ]


def apply_edit(messages: list[JsonDict], edit: Entry | None) -> list[JsonDict]:
    """Pi's projectContextEntry: null omits, ``{content}`` replaces the content of editable roles."""
    if edit is None:
        return messages
    replacement = edit.raw.get("replacement")
    if replacement is None:
        return []
    content = replacement.get("content") if isinstance(replacement, dict) else None
    out: list[JsonDict] = []
    for message in messages:
        role = message.get("role")
        if role not in EDITABLE_ROLES:
            out.append(message)
            continue
        new_content = content
        if role in ("assistant", "toolResult") and isinstance(content, str):
            new_content = [{"type": "text", "text": content}]
        out.append({**message, "content": new_content})
    return out


def build_projection(branch: Branch) -> Projection:
    """The projection of a branch, exactly as Pi builds it for the model."""
    path = branch.entries
    model, thinking = session_model(path)
    selected, compaction = context_entries(path, branch.distinct)
    edits: dict[str, Entry] = {}
    for entry in selected:
        if entry.type == "context_edit":
            target = entry.raw.get("targetId")
            if isinstance(target, str):
                edits[target] = entry
    projected: list[ProjectedEntry] = []
    session = branch.session
    facts = session.facts
    old_before = session.size - loader.HOLD_BYTES  # (where the facts of a body read back are kept, not the body)
    for index, entry in enumerate(selected):
        kind = entry.type
        if kind == "compaction" and index > 0:
            projected.append(ProjectedEntry(entry, []))
            continue
        edit = edits.get(entry.id) if edits else None
        if kind == "message" and edit is None:  # the common entry, as ``entry_messages`` reads it, inlined
            if facts is not None and entry.role != "system" and not entry.loaded:
                known = facts.get(entry.index, _UNKNOWN)
                if known is _UNKNOWN and entry.offset < old_before:  # an indexed line, far from the end
                    message = entry.raw.get("message")
                    known = facts[entry.index] = message_facts(message) if isinstance(message, dict) else None
                    entry.forget()
                if known is not None and known is not _UNKNOWN:
                    projected.append(HeldProjectedEntry(entry, known))
                    continue
            message = entry.raw.get("message")
            if isinstance(message, dict) and message.get("content") is not None:
                projected.append(ProjectedEntry(entry, [message]))
                continue
        projected.append(ProjectedEntry(entry, apply_edit(entry_messages(entry), edit), edit))
    return Projection(branch, projected, compaction, model, thinking, edits)


# ---------------------------------------------------------------------------------------------------------------
# Context tokens


def calculate_usage_tokens(usage: JsonDict) -> int:
    """totalTokens, or the sum of its parts when that is missing or zero (an infinite one, 1e400 in the file, as
    ``js_integer`` holds it: Pi's count is then Infinity, and the session is over any threshold)."""

    def num(key: str) -> float:
        value = usage.get(key)
        return value if isinstance(value, (int, float)) and not isinstance(value, bool) else 0

    total = num("totalTokens")
    if total:
        return js_integer(total)
    parts = [num("input"), num("output"), num("cacheRead"), num("cacheWrite")]
    if all(isinstance(part, int) for part in parts):
        return int(sum(parts))
    return js_integer(sum(js_double(part) if isinstance(part, int) else part for part in parts))  # as doubles


def assistant_usage(message: JsonDict) -> JsonDict | None:
    """The usage of an assistant reply Pi trusts: not aborted, not an error, non-zero."""
    if message.get("role") != "assistant" or "usage" not in message:
        return None
    if message.get("stopReason") in ("aborted", "error"):
        return None
    usage = message.get("usage")
    if not isinstance(usage, dict) or calculate_usage_tokens(usage) <= 0:
        return None
    return usage


Method = Literal["usage+estimate", "estimate", "stale-usage"]


class ContextTokens(NamedTuple):
    """Context tokens and how they were obtained."""

    tokens: int
    usage_tokens: int
    trailing_tokens: int
    method: Method
    usage_entry: Entry | None = None  # the assistant reply whose usage was used (or found stale)
    trailing_messages: int = 0  # messages estimated after that reply
    invalidating_entry: Entry | None = None  # the compaction/context edit that made the usage stale

    def describe(self) -> str:
        if self.method == "usage+estimate" and self.usage_entry is not None:
            return (
                f"usage of entry {self.usage_entry.id} ({js_string(self.usage_tokens)}) + estimate of "
                f"{self.trailing_messages} later message{'s' if self.trailing_messages != 1 else ''} "
                f"({self.trailing_tokens})"
            )
        if self.method == "stale-usage" and self.invalidating_entry is not None:
            kind = "compaction" if self.invalidating_entry.type == "compaction" else "context edit"
            return (
                f"estimate only: usage is stale (recorded before the latest {kind}, entry {self.invalidating_entry.id})"
            )
        return "estimate only (no assistant usage in context)"


def context_tokens(projection: Projection) -> ContextTokens:
    """Pi's estimateProjectedContextTokens: last trusted usage plus later estimates, unless that usage is stale.

    Walked from the newest message back to the last trusted usage; an entry whose body is not held answers from
    its facts (``MessageFacts``), so no body is read that the answer does not need."""
    entries = projection.entries
    usage_tokens = -1
    usage_pe = usage_at = -1  # the entry, and the message within it, of the usage found
    for i in range(len(entries) - 1, -1, -1):
        pe = entries[i]
        facts = pe.facts
        if facts is not None:
            if facts.usage is not None:
                usage_tokens, usage_pe, usage_at = facts.usage, i, 0
                break
            continue
        messages = pe.messages
        for j in range(len(messages) - 1, -1, -1):
            usage = assistant_usage(messages[j])
            if usage is not None:
                usage_tokens, usage_pe, usage_at = calculate_usage_tokens(usage), i, j
                break
        if usage_pe >= 0:
            break
    path = projection.branch.entries
    if usage_pe >= 0:
        found = entries[usage_pe]
        usage_entry = found.entry
        later = found.messages[usage_at + 1 :] if found.facts is None else []
        trailing = sum(map(estimate_tokens, later))
        count = len(later)
        for pe in entries[usage_pe + 1 :]:
            trailing += pe.tokens
            count += 1 if pe.facts is not None else len(pe.messages)
        usage_pos = projection.branch.position(usage_entry.id)
        invalidating_pos = -1
        for i in range(len(path) - 1, -1, -1):
            if path[i].type in ("context_edit", "compaction"):
                invalidating_pos = i
                break
        if usage_pos > invalidating_pos:
            return ContextTokens(usage_tokens + trailing, usage_tokens, trailing, "usage+estimate", usage_entry, count)
        stale_by = path[invalidating_pos] if invalidating_pos >= 0 else None
    else:
        usage_entry = None
        stale_by = None
    tokens = context_estimate(projection)
    count = sum(1 if pe.facts is not None else len(pe.messages) for pe in entries)
    method: Method = "stale-usage" if usage_entry is not None else "estimate"
    return ContextTokens(tokens, 0, tokens, method, usage_entry, count, stale_by)


def context_estimate(projection: Projection) -> int:
    """Pi's estimate of every message of the context, the current system message counted once: what Pi counts
    without a usage it trusts (after a context edit, say)."""
    system: list[JsonDict] = []
    total = 0
    for pe in projection.entries:
        total += pe.tokens
        if pe.facts is None:  # (one held without its body is one message, never a system one)
            system.extend(m for m in pe.messages if m.get("role") == "system")
    current = current_system_message(system)  # (which reads the system messages alone)
    total -= sum(map(estimate_tokens, system))
    return total + (estimate_tokens(current) if current is not None else 0)
