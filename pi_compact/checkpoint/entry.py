"""The one builder of the entries a compaction appends: the ``compaction`` entry and its re-orientation message.

Both compaction modes (verbatim and LLM summary) go through here, so every entry picompact writes has exactly the
shape Pi's ``appendCompaction`` gives it: the same key order, an 8-hex id unique in the file, an ISO timestamp with
milliseconds, and the current system message replayed from the projection as ``systemMessage``.
The clock and the id generator are injected so that the same input gives the same bytes in tests.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Collection, Sequence
from datetime import UTC, datetime
from typing import Any

from pi_compact.js import js_stringify
from pi_compact.pi.messages import current_system_message
from pi_compact.pi.projection import Projection, build_projection
from pi_compact.session.entries import Entry, JsonDict, Session
from pi_compact.session.tree import Branch

Clock = Callable[[], datetime]
IdGenerator = Callable[[Collection[str]], str]  # given the ids already taken, return a fresh 8-hex id


def system_clock() -> datetime:
    """Now, in UTC (what Pi's ``new Date()`` gives)."""
    return datetime.now(UTC)


def parse_timestamp(text: str) -> datetime:
    """An ISO timestamp (``Z`` or an offset; a naive one is taken as UTC)."""
    value = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def fixed_clock(moment: datetime | str) -> Clock:
    """A clock that always answers the same instant (deterministic output)."""
    fixed = parse_timestamp(moment) if isinstance(moment, str) else moment
    if fixed.tzinfo is None:
        fixed = fixed.replace(tzinfo=UTC)
    return lambda: fixed


def iso_timestamp(moment: datetime) -> str:
    """``2024-12-03T14:00:00.123Z``: JavaScript's ``Date.toISOString()`` (milliseconds, UTC, ``Z``)."""
    utc = moment.astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def epoch_ms(moment: datetime) -> int:
    """Milliseconds since the epoch, truncated like ``Date.getTime()`` of the ISO string."""
    utc = moment.astimezone(UTC)
    return int(utc.replace(microsecond=0).timestamp()) * 1000 + utc.microsecond // 1000


def random_id(taken: Collection[str]) -> str:
    """Pi's id rule: the first 8 hex chars of a random UUID, retried until unused in the file."""
    while True:
        candidate = uuid.uuid4().hex[:8]
        if candidate not in taken:
            return candidate


def seeded_ids(seed: str) -> IdGenerator:
    """Deterministic 8-hex ids derived from ``seed`` (same seed, same sequence), still unique in the file."""
    counter = 0

    def generate(taken: Collection[str]) -> str:
        nonlocal counter
        while True:
            counter += 1
            candidate = hashlib.sha256(f"{seed}:{counter}".encode()).hexdigest()[:8]
            if candidate not in taken:
                return candidate

    return generate


def serialize_entry(entry: JsonDict) -> str:
    """One session line: ``JSON.stringify(entry) + "\\n"``."""
    text = js_stringify(entry)
    if text is None:  # only for undefined-like values; a dict always serialises
        raise ValueError("entry does not serialise to JSON")
    return text + "\n"


def serialize_entries(entries: list[JsonDict]) -> list[str]:
    return [serialize_entry(e) for e in entries]


def reorientation_type() -> str:
    """The customType of picompact's re-orientation message (owned by the verbatim checkpoint module)."""
    from pi_compact.checkpoint.verbatim.build import REORIENTATION_CUSTOM_TYPE

    return REORIENTATION_CUSTOM_TYPE


def build_compaction_entries(
    session: Session,
    branch: Branch,
    *,
    summary: str,
    first_kept_entry_id: str | None,
    tokens_before: int,
    details: Any,
    from_hook: bool,
    usage: JsonDict | None = None,
    reminder: str | None = None,
    clock: Clock = system_clock,
    new_id: IdGenerator = random_id,
    projection: Projection | None = None,
    reminder_type: str | None = None,
    omit_entry_ids: Sequence[str] = (),
) -> list[JsonDict]:
    """The entries to append for one compaction, as Pi's ``appendCompaction`` would write them.

    ``parentId`` is the branch leaf (so ``--leaf`` on a side branch extends that branch). A ``None``
    ``first_kept_entry_id`` keeps nothing (Pi stores the compaction's own id). ``systemMessage`` is the system
    prompt and tools replayed from the branch's projection, stamped with the entry time, and present only when
    there is one. ``omit_entry_ids`` (earlier re-orientation messages still in the kept tail) each get a
    ``context_edit`` that omits them, chained after the compaction, so only the new reminder stays in view. With a
    ``reminder``, a hidden ``custom_message`` comes last (a child of the compaction, or of the last edit): Pi places
    it after the kept tail, where the model resumes.
    """
    moment = clock()
    timestamp = iso_timestamp(moment)
    taken: set[str] = set(session.by_id)
    compaction_id = new_id(taken)
    taken.add(compaction_id)
    leaf = branch.leaf
    messages = (projection if projection is not None else build_projection(branch)).messages
    system = current_system_message(messages)

    entry: JsonDict = {
        "type": "compaction",
        "id": compaction_id,
        "parentId": leaf.id if leaf is not None else None,
        "timestamp": timestamp,
        "summary": summary,
        "firstKeptEntryId": first_kept_entry_id if first_kept_entry_id is not None else compaction_id,
        "tokensBefore": tokens_before,
    }
    if details is not None:
        entry["details"] = details
    if usage is not None:
        entry["usage"] = usage
    entry["fromHook"] = from_hook
    if system is not None:
        entry["systemMessage"] = {**system, "timestamp": epoch_ms(moment)}
    out = [entry]
    for target in omit_entry_ids:
        # Key order of Pi's appendContextEdit; a null replacement omits the target from the model's context.
        out.append(
            {
                "type": "context_edit",
                "id": new_id(taken),
                "parentId": out[-1]["id"],
                "timestamp": timestamp,
                "targetId": target,
                "replacement": None,
            }
        )
        taken.add(out[-1]["id"])
    if reminder is not None:
        # Key order of Pi's appendCustomMessageEntry.
        out.append(
            {
                "type": "custom_message",
                "customType": reminder_type or reorientation_type(),
                "content": reminder,
                "display": False,
                "details": {"compactionId": compaction_id},
                "id": new_id(taken),
                "parentId": out[-1]["id"],
                "timestamp": timestamp,
            }
        )
    return out


def entries_as_session_entries(session: Session, raws: list[JsonDict]) -> list[Entry]:
    """Wrap new entries as ``Entry`` objects placed after the session's last line (for in-memory previews)."""
    last_line = session.entries[-1].line if session.entries else 1
    base = len(session.entries)
    return [Entry(raw, last_line + i + 1, base + i) for i, raw in enumerate(raws)]
