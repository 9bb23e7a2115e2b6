"""What the model sees now: Pi's projection of the branch, message by message, with token estimates.

The opposite view to list/grep/show (which read the raw branch): this is the compacted context Pi would send,
so a user can see where the compaction boundary lies and what each message costs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypedDict

from pi_compact.pi.projection import build_projection, context_tokens
from pi_compact.pi.tokens import estimate_tokens
from pi_compact.search.render import entry_label, preview
from pi_compact.session.entries import Entry, JsonDict, Session
from pi_compact.session.tree import Branch, get_branch, no_leaf_context

Segment = Literal["summary", "kept", "new", "history"]
SEGMENT_TITLES: dict[str, str] = {
    "summary": "compaction summary",
    "kept": "kept from before the compaction",
    "new": "after the compaction",
    "history": "history (no compaction)",
}


class ContextMessageJSON(TypedDict):
    position: int
    entry_id: str
    entry_type: str
    role: str
    tokens: int
    segment: str
    edit: str | None
    edit_id: str | None
    preview: str


@dataclass(frozen=True, slots=True)
class ContextMessage:
    """One message in the model's context (or an entry a context edit removed from it)."""

    position: int  # index among the messages the model sees; -1 for an omitted entry
    entry_id: str
    entry_type: str
    role: str
    tokens: int  # Pi's chars/4 estimate of this message
    segment: Segment
    edit: Literal["omitted", "replaced"] | None
    edit_id: str | None
    preview: str

    def to_json(self) -> ContextMessageJSON:
        return {
            "position": self.position,
            "entry_id": self.entry_id,
            "entry_type": self.entry_type,
            "role": self.role,
            "tokens": self.tokens,
            "segment": self.segment,
            "edit": self.edit,
            "edit_id": self.edit_id,
            "preview": self.preview,
        }


class ContextViewJSON(TypedDict):
    """``ContextView.to_json()``: the ``context --json`` document."""

    leaf_id: str | None
    branch_length: int
    compaction_id: str | None
    first_kept_entry_id: str | None
    messages: list[ContextMessageJSON]
    message_count: int
    estimated_tokens: int
    context_tokens: int
    context_tokens_method: str
    context_tokens_source: str


@dataclass(frozen=True, slots=True)
class ContextView:
    messages: tuple[ContextMessage, ...]
    estimated_tokens: int  # sum of the per-message estimates
    context_tokens: int  # Pi's figure (last valid usage + later estimates, unless stale)
    context_tokens_method: str
    context_tokens_source: str
    compaction_id: str | None  # the compaction in effect
    first_kept_id: str | None  # where its kept range starts
    leaf_id: str | None
    branch_length: int

    def to_json(self) -> ContextViewJSON:
        return {
            "leaf_id": self.leaf_id,
            "branch_length": self.branch_length,
            "compaction_id": self.compaction_id,
            "first_kept_entry_id": self.first_kept_id,
            "messages": [m.to_json() for m in self.messages],
            "message_count": sum(1 for m in self.messages if m.position >= 0),
            "estimated_tokens": self.estimated_tokens,
            "context_tokens": self.context_tokens,
            "context_tokens_method": self.context_tokens_method,
            "context_tokens_source": self.context_tokens_source,
        }


def _message_preview(entry: Entry, message: JsonDict, width: int) -> str:
    fake = Entry({"type": "message", "id": entry.id, "message": message}, entry.line, entry.index)
    return preview(fake, width)


def build_context_view(source: Session | Branch, *, leaf_id: str | None = None, preview_chars: int = 80) -> ContextView:
    """Every message Pi would send for the branch, in order, with the compaction boundary marked."""
    branch = source if isinstance(source, Branch) else get_branch(source, leaf_id)
    pi_branch = branch
    if not branch.entries and branch.session.no_leaf:
        branch = no_leaf_context(branch.session)  # Pi finds no leaf, yet sends the last entry and its parents
    projection = build_projection(branch)
    compaction = projection.compaction
    kept_start = compaction.raw.get("firstKeptEntryId") if compaction is not None else None
    # On the branch, the kept range lies before the compaction entry and the new entries after it.
    before_compaction: set[int] = set()
    if compaction is not None:
        for entry in branch.entries:
            if entry is compaction:
                break
            before_compaction.add(id(entry))
    messages: list[ContextMessage] = []
    position = 0
    for index, projected in enumerate(projection.entries):
        entry = projected.entry
        if compaction is not None and index == 0:
            segment: Segment = "summary"
        elif compaction is not None:
            segment = "kept" if id(entry) in before_compaction else "new"
        else:
            segment = "history"
        edit = projected.edit
        edit_kind: Literal["omitted", "replaced"] | None = (
            "omitted" if projected.omitted else "replaced" if projected.replaced else None
        )
        edit_id = entry_label(edit) if edit is not None else None
        if projected.omitted:
            messages.append(
                ContextMessage(
                    -1,
                    entry_label(entry),
                    entry.type,
                    entry.role or entry.type,
                    0,
                    segment,
                    edit_kind,
                    edit_id,
                    preview(entry, preview_chars),
                )
            )
            continue
        for message in projected.messages:
            role = message.get("role")
            messages.append(
                ContextMessage(
                    position,
                    entry_label(entry),
                    entry.type,
                    role if isinstance(role, str) else "?",
                    estimate_tokens(message),
                    segment,
                    edit_kind,
                    edit_id,
                    _message_preview(entry, message, preview_chars),
                )
            )
            position += 1
    tokens = context_tokens(projection)
    return ContextView(
        messages=tuple(messages),
        estimated_tokens=sum(m.tokens for m in messages),
        context_tokens=tokens.tokens,
        context_tokens_method=tokens.method,
        context_tokens_source=tokens.describe(),
        compaction_id=entry_label(compaction) if compaction is not None else None,
        first_kept_id=kept_start if isinstance(kept_start, str) else None,
        leaf_id=entry_label(pi_branch.leaf) if pi_branch.leaf is not None else None,
        branch_length=len(pi_branch.entries),
    )
