"""Pi's context projection: what the model sees for a branch, and how many tokens that is.

Mirrors Pi 1.6's buildContextEntries / buildSessionProjection / estimateProjectedContextTokens.
"""

from __future__ import annotations

import contextlib
from operator import attrgetter, indexOf
from typing import Literal, NamedTuple

from pi_compact.js import js_double, js_integer, js_string
from pi_compact.pi.messages import current_system_message, entry_messages
from pi_compact.pi.tokens import estimate_tokens
from pi_compact.session.entries import Entry, JsonDict
from pi_compact.session.tree import Branch

EDITABLE_ROLES = ("user", "assistant", "toolResult", "custom")
_TYPE = attrgetter("type")


class ProjectedEntry:
    """One context entry with the messages it contributes after its latest context edit."""

    __slots__ = ("_tokens", "edit", "entry", "messages")

    def __init__(self, entry: Entry, messages: list[JsonDict], edit: Entry | None = None) -> None:
        self.entry = entry
        self.messages = messages
        self.edit = edit
        self._tokens: int | None = None

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
    for index, entry in enumerate(selected):
        kind = entry.type
        if kind == "compaction" and index > 0:
            projected.append(ProjectedEntry(entry, []))
            continue
        edit = edits.get(entry.id) if edits else None
        if kind == "message" and edit is None:  # the common entry, as ``entry_messages`` reads it, inlined
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
    """Pi's estimateProjectedContextTokens: last trusted usage plus later estimates, unless that usage is stale."""
    flat: list[tuple[ProjectedEntry, JsonDict]] = [(pe, m) for pe in projection.entries for m in pe.messages]
    usage_at = -1
    usage: JsonDict | None = None
    for i in range(len(flat) - 1, -1, -1):
        usage = assistant_usage(flat[i][1])
        if usage is not None:
            usage_at = i
            break
    path = projection.branch.entries
    if usage is not None:
        usage_entry = flat[usage_at][0].entry
        usage_tokens = calculate_usage_tokens(usage)
        trailing = sum(estimate_tokens(m) for _, m in flat[usage_at + 1 :])
        usage_pos = projection.branch.position(usage_entry.id)
        invalidating_pos = -1
        for i in range(len(path) - 1, -1, -1):
            if path[i].type in ("context_edit", "compaction"):
                invalidating_pos = i
                break
        if usage_pos > invalidating_pos:
            return ContextTokens(
                usage_tokens + trailing,
                usage_tokens,
                trailing,
                "usage+estimate",
                usage_entry,
                len(flat) - usage_at - 1,
            )
        stale_by = path[invalidating_pos] if invalidating_pos >= 0 else None
    else:
        usage_entry = None
        stale_by = None
    messages = [m for _, m in flat]
    system = current_system_message(messages)
    tokens = estimate_tokens(system) if system is not None else 0
    tokens += sum(estimate_tokens(m) for m in messages if m.get("role") != "system")
    method: Method = "stale-usage" if usage_entry is not None else "estimate"
    return ContextTokens(tokens, 0, tokens, method, usage_entry, len(messages), stale_by)
