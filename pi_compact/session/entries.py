"""The in-memory shape of a loaded session: entries as Pi parsed them, plus what went wrong."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import compress
from operator import attrgetter, indexOf
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, TypedDict

if TYPE_CHECKING:
    from pi_compact.session.mutations import Facts
    from pi_compact.session.source import FileSource

JsonDict = dict[str, Any]
_TYPE = attrgetter("type")

# The message roles and entry types picompact knows (others are kept and passed on untouched).
MESSAGE_ROLES = (
    "user",
    "assistant",
    "toolResult",
    "bashExecution",
    "custom",
    "branchSummary",
    "compactionSummary",
    "system",
)
ENTRY_TYPES = (
    "message",
    "model_change",
    "thinking_level_change",
    "compaction",
    "branch_summary",
    "custom",
    "custom_message",
    "label",
    "session_info",
    "usage",
    "context_edit",
)


# ``Diagnostic.to_json()``; in the call form, as check's start-up wants it (see ``ops.check.SpanJSON``).
DiagnosticJSON = TypedDict(  # noqa: UP013  (the call form, for check's start-up)
    "DiagnosticJSON",
    {
        "level": str,
        "code": str,
        "message": str,
        "line": int | None,
    },
)


class Diagnostic(NamedTuple):
    """A recoverable problem found while loading; reported, never fatal."""

    level: Literal["warning", "info"]
    code: str  # stable machine name: malformed-line, truncated-last-line, orphaned-branch, ...
    message: str
    line: int | None = None

    def to_json(self) -> DiagnosticJSON:
        return {"level": self.level, "code": self.code, "message": self.message, "line": self.line}


UNREAD = object()  # a field not read from the body yet


class Entry:
    """One parsed, non-header line. ``raw`` is the JSON object as Pi holds it after migration;
    unknown types and fields are kept untouched.

    ``id``, ``parent_id``, ``type`` and ``role`` are read once at construction (they are consulted constantly on
    large sessions); call ``refresh()`` after changing ``raw``.

    The loader may *release* an entry's parsed body (see ``session.source``): ``raw`` is then parsed again from
    the file the first time it is asked for, and kept.
    """

    __slots__ = (
        "_raw",
        "_source",
        "_timestamp",
        "id",
        "index",
        "length",
        "line",
        "offset",
        "parent_id",
        "role",
        "type",
    )

    def __init__(self, raw: JsonDict, line: int, index: int, offset: int = 0, length: int = 0) -> None:
        self._raw: JsonDict | None = raw
        self._source: FileSource | None = None
        self.line = line  # 1-based physical line in the file
        self.index = index  # 0-based position among parsed non-header entries, in file order
        self.offset = offset  # byte offset of the line in the file
        self.length = length  # byte length of the line, without the newline
        self.refresh()

    @classmethod
    def head_only(
        cls,
        source: FileSource,
        head: tuple[str | None, str | None, str, str | None],
        line: int,
        index: int,
        offset: int,
        length: int,
    ) -> Entry:
        """A released entry built from its head fields (id, parentId, type, role) as read before (an index of the
        file kept between runs); its body is read from ``source`` when asked, and checked against the head."""
        entry = cls.__new__(cls)
        entry._raw = None
        entry._source = source
        entry._timestamp = UNREAD
        entry.line, entry.index, entry.offset, entry.length = line, index, offset, length
        entry.id, entry.parent_id, entry.type, entry.role = head  # type: ignore[assignment]
        return entry

    @property
    def raw(self) -> JsonDict:
        raw = self._raw
        if raw is None:
            if self._source is None:
                raise ValueError(f"entry {self.id} has no body and nowhere to read it from")
            raw = self._raw = self._source.reload(self)
        return raw

    @raw.setter
    def raw(self, value: JsonDict) -> None:
        self._raw = value

    @property
    def loaded(self) -> bool:
        """Whether the parsed body is in memory (reading ``raw`` costs nothing)."""
        return self._raw is not None

    def release(self, source: FileSource) -> None:
        """Drop the parsed body; ``raw`` reads it again from ``source`` when asked."""
        self._source = source
        self._raw = None

    def forget(self) -> None:
        """Drop a body read back from the file once more (after one use, so a walk over every entry of a big
        session does not end up holding all of them); an entry that was never released keeps its body."""
        if self._source is not None:
            self._raw = None

    def may_contain(self, *needles: bytes) -> bool:
        """False only when the entry's line surely holds none of these bytes (a released entry is tested on
        disk, which is much cheaper than parsing it again); True whenever the body is in memory."""
        if self._raw is not None or self._source is None:
            return True
        return self._source.contains(self, needles)

    def refresh(self) -> None:
        self._timestamp: object = UNREAD
        raw = self.raw
        entry_id = raw.get("id")
        self.id: str = entry_id if isinstance(entry_id, str) else None  # type: ignore[assignment]
        parent = raw.get("parentId")
        self.parent_id: str | None = parent if isinstance(parent, str) and parent else None
        kind = raw.get("type")
        self.type: str = kind if isinstance(kind, str) else ""
        role = None
        if self.type == "message":
            msg = raw.get("message")
            role = msg.get("role") if isinstance(msg, dict) else None
        self.role: str | None = role if isinstance(role, str) else None

    def __repr__(self) -> str:
        return f"Entry(id={self.id!r}, type={self.type!r}, line={self.line})"

    @property
    def message(self) -> JsonDict | None:
        if self.type != "message":
            return None
        msg = self.raw.get("message")
        return msg if isinstance(msg, dict) else None

    @property
    def timestamp(self) -> str | None:
        ts = self._timestamp
        if ts is UNREAD:
            released = self._raw is None
            value = self.raw.get("timestamp")
            if released:
                self.forget()  # read back for this field only (grep asks it of every matching entry)
            ts = self._timestamp = value if isinstance(value, str) else None
        return ts  # type: ignore[return-value]

    @property
    def kind(self) -> str:
        """``message:role`` for messages, else the entry type; handy for display."""
        role = self.role
        return f"message:{role}" if role else self.type


@dataclass(slots=True, eq=False, repr=False)  # no field-by-field == or repr of every entry: quicker to define
class Session:
    """A loaded session file. ``entries`` are in file order; ``by_id`` lets the later duplicate win, as Pi does."""

    path: Path | None
    header: JsonDict
    entries: list[Entry]
    by_id: dict[str, Entry]
    diagnostics: list[Diagnostic] = field(default_factory=list)
    original_version: int = 3
    synthetic_ids: bool = False  # v1 file: ids were made up for reading
    size: int = 0
    ends_with_newline: bool = True
    torn_last_line: bool = False  # last line lacks "\n" and does not parse (a crash mid-write)
    tail: bytes = b""  # last bytes of the file as read, to detect concurrent appends
    # Decorated-only rendered lines of entries whose body the loader dropped, by entry index, when the caller asked
    # the loader to keep them (grep checks them for every entry; see ``load_session(decorate=...)``).
    decorated: dict[int, tuple[str, ...]] = field(default_factory=dict)
    no_leaf: bool = False  # the last parsed entry is not an object or has no id: Pi finds no leaf
    # For the first len(parent_slots) entries (an indexed prefix; see ``session.index``), where ``by_id`` takes each
    # entry's parentId: 0 none, 1 an id no entry has, else 2 + the index of that entry. Lets the branch walk skip
    # reading every entry of a long prefix.
    parent_slots: Sequence[int] | None = None
    # The tracked file modifications (``session.mutations.mutation_facts``) of the assistant messages and tool
    # results among the first ``mutations_known`` entries, by entry index (one not listed records none): taken
    # from each body as the loader dropped it, or from the file's index. Entries after those hold their bodies.
    mutations: dict[int, Facts] = field(default_factory=dict)
    mutations_known: int = 0
    # What the caller of the load asked to keep of each message whose body was dropped for its size while it may be
    # live (``load_session(facts=...)``), by entry index; None when it asked for none
    facts: dict[int, Any] | None = None

    def extended(self, added: list[Entry]) -> Session:
        """The session with ``added`` after its entries, in memory (a preview of lines about to be appended; their
        ``index`` and ``line`` follow the session's), the later of a repeated id winning as in Pi. The parent links
        of an indexed prefix (``parent_slots``) are kept while they hold: when no added entry takes an id the
        session has, or one that a parent names in vain."""
        by_id = {**self.by_id, **{e.id: e for e in added}}
        slots = self.parent_slots
        if slots is not None and added:
            named = len(by_id) == len(self.by_id) + len(added)  # every added id is new
            if named:
                orphans = compress(range(len(slots)), map((1).__eq__, slots))
                vain = {self.entries[i].parent_id for i in orphans}
                named = not any(e.id in vain for e in added)
            slots = slots if named else None
        return Session(
            path=self.path,
            header=self.header,
            entries=[*self.entries, *added],
            by_id=by_id,
            original_version=self.original_version,
            parent_slots=slots,
        )

    @property
    def leaf(self) -> Entry | None:
        """Pi's leaf: the last parsed non-header entry in file order, whatever its type; None when Pi finds none
        (the last parsed line is not an object, or its id is missing or empty: Pi's branch is then empty)."""
        if self.no_leaf:
            return None
        return self.entries[-1] if self.entries else None

    @property
    def cwd(self) -> str:
        cwd = self.header.get("cwd")
        return cwd if isinstance(cwd, str) else ""

    @property
    def session_id(self) -> str:
        return str(self.header.get("id", ""))

    @property
    def needs_migration(self) -> bool:
        return self.original_version < 3

    def get(self, entry_id: str) -> Entry | None:
        return self.by_id.get(entry_id)

    def labels(self) -> dict[str, str]:
        """Current label per target id, replayed in file order like Pi."""
        labels: dict[str, str] = {}
        for entry in self.entries:
            if entry.type != "label":
                continue
            target = entry.raw.get("targetId")
            if not isinstance(target, str):
                continue
            label = entry.raw.get("label")
            if label:
                labels[target] = str(label)
            else:
                labels.pop(target, None)
        return labels

    def name(self) -> str | None:
        """The session name from the latest session_info entry (an empty name clears it)."""
        try:  # looked for by type alone, from the end (a map in C: every entry is passed when there is none)
            at = len(self.entries) - 1 - indexOf(map(_TYPE, reversed(self.entries)), "session_info")
        except ValueError:
            return None
        name = self.entries[at].raw.get("name")
        return name.strip() or None if isinstance(name, str) else None
