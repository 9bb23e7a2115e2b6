"""The loader's state between lines (``ParseState``): what the lines read so far gave, built from an index's prefix
to resume after it, and turned into one for the index to keep; and the bodies the loader releases as it goes.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Sequence
from itertools import compress, repeat
from operator import is_
from typing import TYPE_CHECKING, Any

from pi_compact.session.entries import UNREAD, Diagnostic, Entry, JsonDict
from pi_compact.session.migrate import CURRENT_VERSION
from pi_compact.session.mutations import Facts, mutation_facts

if TYPE_CHECKING:
    from pi_compact.session.index import PrefixState
    from pi_compact.session.source import FileSource

Decorate = Callable[[Entry], tuple[str, ...]]
MessageFacts = Callable[[JsonDict], Any]  # what a caller keeps of a live message whose body is dropped
TAIL_BYTES = 64


class Heads:
    """Per entry, in file order, the head fields an index keeps, taken as each line is parsed (its values are in the
    processor's cache then: read back from 23,000 entries spread over the memory of a 100 MB parse they cost 40 ms),
    and where its parent was among the entries before it (``slots``: 0 no parent, 1 none found yet, else its index
    plus 2; ``ParseState.prefix_state`` settles them)."""

    __slots__ = ("ids", "length", "line", "offset", "parents", "roles", "slots", "types")

    def __init__(self) -> None:
        self.line: array[int] = array("q")
        self.offset: array[int] = array("q")
        self.length: array[int] = array("q")
        self.ids: list[str | None] = []
        self.parents: list[str | None] = []
        self.types: list[str] = []
        self.roles: list[str | None] = []
        self.slots: array[int] = array("q")

    @classmethod
    def of_prefix(cls, prefix: PrefixState) -> Heads:
        """The heads of an index's prefix, for a resumed load that writes the index again."""
        heads = cls()
        heads.line = array("q", prefix.line)
        heads.offset = array("q", prefix.offset)
        heads.length = array("q", prefix.length)
        heads.slots = array("q", prefix.parent_slots)
        heads.ids[:] = prefix.ids
        heads.parents[:] = prefix.parents
        heads.types[:] = prefix.types
        heads.roles[:] = prefix.roles
        return heads

    def add(self, entry: Entry, by_id: dict[str | None, Entry]) -> None:
        """Take the head of the entry just read (``by_id`` holds every entry read so far, this one included)."""
        self.line.append(entry.line)
        self.offset.append(entry.offset)
        self.length.append(entry.length)
        self.ids.append(entry.id)
        parent = entry.parent_id
        self.parents.append(parent)
        self.types.append(entry.type)
        self.roles.append(entry.role)
        if parent is None:
            self.slots.append(0)
        else:
            found = by_id.get(parent)
            self.slots.append(1 if found is None else found.index + 2)


class ParseState:
    """What the lines read so far gave (``load._parse_session`` keeps its hottest fields in local variables while
    it reads, and stores them here when it stops)."""

    __slots__ = (
        "binary_line",
        "by_id",
        "decorated",
        "diagnostics",
        "entries",
        "facts",
        "facts_of",
        "first_line_bom",
        "header",
        "header_line",
        "heads",
        "last_chunk",
        "last_parsed_ok",
        "last_terminated",
        "last_value",
        "lines",
        "malformed",
        "mutations",
        "non_objects",
        "prefix_len",
        "prev_chunk",
        "release",
        "released_to",
        "slots",
        "too_long_line",
    )

    def __init__(self) -> None:
        self.lines = 0  # the physical lines read
        self.prefix_len = 0  # the bytes read
        self.entries: list[Entry] = []
        # Every entry by its id as the lines give them, the later of a repeated id winning (``load._index_ids``
        # takes it when the ids are all distinct and nothing was migrated): built while each entry is fresh
        self.by_id: dict[str | None, Entry] = {}
        self.heads: Heads | None = None  # taken when an index will be written (``load._read_lines``)
        # Where each entry's parent was among the entries before it, as ``Heads.slots`` (taken there when there are
        # heads; not for a resumed load): ``load._session`` settles them into ``Session.parent_slots``
        self.slots: array[int] | None = array("q")
        self.diagnostics: list[Diagnostic] = []
        self.header: JsonDict | None = None
        self.header_line = 1
        self.last_terminated = True
        self.last_parsed_ok = True
        self.malformed: list[int] = []
        self.prev_chunk = b""  # the line before the last one read, and the last one (for ``Session.tail``)
        self.last_chunk = b""
        self.first_line_bom = False
        self.last_value: tuple[Any, int] | None = None  # the last parsed entry value (object or not) and its line
        self.non_objects: list[tuple[int, Any]] = []  # (line, value) of entry lines that are not objects
        self.binary_line: int | None = None  # the first line that is not UTF-8, before a header
        self.too_long_line: tuple[int, int] | None = None  # the first line too long to read, before a header (and
        # the limit)
        self.release = False  # whether bodies are released (see ``release_before``): not in a file to migrate
        self.released_to = 0  # every message entry before it was released
        self.decorated: dict[int, tuple[str, ...]] = {}
        self.mutations: dict[int, Facts] = {}
        # What a caller asks to know of each message a release drops while it is live (``load_session(facts=...)``),
        # and what it gave, by entry index
        self.facts_of: MessageFacts | None = None
        self.facts: dict[int, Any] = {}

    @classmethod
    def resumed(cls, prefix: PrefixState, source: FileSource, decorate: Decorate | None) -> ParseState:
        """The state after an index's prefix, its entries built released."""
        state = cls()
        state.lines, state.prefix_len = prefix.lines, prefix.prefix_len
        state.header, state.header_line = prefix.header, prefix.header_line
        state.release, state.released_to = True, prefix.released_to
        if prefix.last_value_line:
            state.last_value = (prefix.last_value, prefix.last_value_line)
        state.malformed = list(prefix.malformed)
        state.diagnostics = [Diagnostic(*d) for d in prefix.diagnostics]  # type: ignore[arg-type]
        state.prev_chunk, state.last_chunk = prefix.prev_tail, prefix.last_tail
        state.entries = _resumed_entries(prefix, source)
        state.slots = None
        state.by_id = dict(zip(prefix.ids, state.entries, strict=True))
        state.mutations = dict(prefix.mutations)
        if decorate is not None and prefix.decorated is not None:
            state.decorated = {i: tuple(lines) for i, lines in enumerate(prefix.decorated)}
        return state

    def release_before(
        self, first_kept: Any, source: FileSource, decorate: Decorate | None, live: bool = False
    ) -> None:
        """Release the bodies of message entries from ``released_to`` up to the first kept entry of the compaction
        just appended (or up to that compaction), and move ``released_to`` past them. The tracked modifications of
        each body dropped are kept in ``mutations`` (see ``session.mutations``); with ``live`` (bodies dropped for
        their size, not by a compaction: they may be in the context), what ``facts_of`` finds in each message too.

        Which bodies are dropped changes only memory and time, never an answer: a dropped body is read again when
        asked for.
        """
        entries, start = self.entries, self.released_to
        end = len(entries) - 1
        for i in range(end - 1, start - 1, -1):
            if entries[i].id == first_kept:
                end = i
                break
        dropped = entries[start:end]
        if decorate is not None:
            decorated = self.decorated
            for entry in dropped:
                if entry.type == "message":
                    decorated[entry.index] = decorate(entry)
        facts_of = self.facts_of if live else None
        if facts_of is not None:
            kept = self.facts
            for entry in dropped:
                raw = entry._raw
                if entry.type == "message" and raw is not None and type(message := raw.get("message")) is dict:
                    kept[entry.index] = facts_of(message)
        mutations = self.mutations
        for entry in dropped:
            if entry.type != "message":
                continue
            raw = entry._raw
            role = entry.role  # a role: the message is a dict
            if raw is not None and role is not None and _may_mutate(raw["message"], role):  # None: from the index
                facts = mutation_facts(raw["message"])
                if facts is not None:
                    mutations[entry.index] = facts
            entry._source = source  # entry.release(source), inlined
            entry._raw = None
        self.released_to = max(start, end)

    def mark(self) -> ParseState:
        """A copy of the state as it stands, for ``prefix_state`` once the rest is read: its lists copied, the
        released entries' decorated lines and facts shared (they only grow, and only for entries before it), and so
        are ``heads`` (read only as far as the copy's entries) and ``by_id`` (``prefix_state`` wants the final one)."""
        copy = ParseState.__new__(ParseState)
        for name in ParseState.__slots__:
            setattr(copy, name, getattr(self, name))
        copy.entries = self.entries[:]
        copy.diagnostics = self.diagnostics[:]
        copy.malformed = self.malformed[:]
        return copy

    def prefix_state(self, decorate: Decorate | None, known: int) -> PrefixState:
        """The state as an index keeps it (``known``: the facts of the entries before it are in ``mutations``);
        with ``decorate``, every entry's decorated lines too (those kept for released bodies, the others rendered
        now); the tracked modifications of every entry (those of released bodies as kept, the others' read now)."""
        kept = self.entries
        n_entries = len(kept)
        value = None
        if self.last_value is not None:
            value = self.last_value[0]
            if isinstance(value, dict):
                value = {"id": value["id"]} if "id" in value else {}
        from pi_compact.session.index import PrefixState  # only a load that keeps an index comes here

        facts = {i: f for i, f in self.mutations.items() if i < n_entries}
        for entry in kept[known:]:  # bodies still held (never released, or parsed after the indexed prefix)
            role = entry.role
            if role == "assistant" or role == "toolResult":
                found = mutation_facts(entry.raw["message"])
                if found is not None:
                    facts[entry.index] = found

        heads = self.heads
        assert heads is not None, "a load that keeps an index takes the heads as it reads (``load._read_lines``)"
        whole = n_entries == len(heads.ids)  # else a state marked before the last line: its entries come first

        def cut(column: Any) -> Any:
            return column if whole else column[:n_entries]

        parents = cut(heads.parents)
        slots = self._settled_slots(heads, n_entries)
        decorated = self.decorated
        assert self.header is not None, "only a state past the header is kept"
        return PrefixState(
            prefix_len=self.prefix_len,
            lines=self.lines,
            header=self.header,
            header_line=self.header_line,
            last_value=value,
            last_value_line=0 if self.last_value is None else self.last_value[1],
            released_to=self.released_to,
            malformed=list(self.malformed),
            diagnostics=[(d.level, d.code, d.message, d.line) for d in self.diagnostics],
            prev_tail=self.prev_chunk[-TAIL_BYTES:],
            last_tail=self.last_chunk[-TAIL_BYTES:],
            line=cut(heads.line),
            offset=cut(heads.offset),
            length=cut(heads.length),
            ids=cut(heads.ids),
            parents=parents,
            types=cut(heads.types),
            roles=cut(heads.roles),
            mutations=sorted(facts.items()),
            parent_slots=slots,
            dangling=sorted(set(compress(parents, map((1).__eq__, slots)))),  # type: ignore[arg-type]
            decorated=None
            if decorate is None
            else [list(decorated[e.index] if e.index in decorated else decorate(e)) for e in kept],
        )

    def _settled_slots(self, heads: Heads, n: int) -> Sequence[int]:
        """``heads.slots`` of the first ``n`` entries as ``_slots`` finds them over those entries: where the parent
        was found among the entries before it, it is the one ``by_id`` keeps when no id repeats; a parent not found
        before its child is looked for among all of them (settled in place: the heads are read no more)."""
        by_id = self.by_id
        if not len(by_id) == n == len(heads.ids):  # a repeated id (or two without one), or a state marked before
            return _slots(heads.ids[:n], heads.parents[:n])  # the last line: the later of an id wins, found afresh
        slots = heads.slots
        parents = heads.parents
        for i in compress(range(n), map((1).__eq__, slots)):
            found = by_id.get(parents[i])
            if found is not None and found.index < n:
                slots[i] = found.index + 2
        return slots


def _slots(ids: list[str | None], parents: list[str | None]) -> list[int]:
    """Per entry, 0 when it has no parent, else its parent's index plus 2 as ``by_id`` takes it (the later of an id
    wins), or 1 when no entry has that id."""
    where = dict(zip(ids, range(2, len(ids) + 2), strict=True))
    slots = list(map(where.get, parents, repeat(1)))
    for i in compress(range(len(parents)), map(is_, parents, repeat(None))):
        slots[i] = 0  # no parent (where.get(None) would find an entry without an id)
    return slots


def _may_mutate(message: JsonDict, role: str) -> bool:
    """Whether ``mutation_facts`` can find something in a message: an assistant's content holds a tool call block,
    or a tool result has nested calls (a test of its blocks' types, cheaper than the call: this runs for every
    message released)."""
    if role == "assistant":
        content = message.get("content")
        if type(content) is list:
            for block in content:
                if type(block) is dict and block.get("type") == "toolCall":
                    return True
        return False
    return role == "toolResult" and "nestedCalls" in message


def releasable(header: JsonDict) -> bool:
    """A v3 header: nothing will be migrated in memory, so a dropped body reads back the same."""
    version = header.get("version")
    return isinstance(version, int) and not isinstance(version, bool) and version >= CURRENT_VERSION


def _resumed_entries(state: PrefixState, source: FileSource) -> list[Entry]:
    """The prefix's entries, released, built from the index's columns (as ``Entry.head_only`` builds one, without
    a call per entry: this is most of what a re-run costs). The types, roles and parentIds are taken from their
    codes and slots as each entry is built (``index_format.Coded``), not made into lists first."""
    coded = state.coded
    if coded is None:
        return _listed_entries(state, source)
    n = len(state.ids)
    entries = list(map(Entry.__new__, repeat(Entry, n)))
    by_slot = [None, None, *state.ids]  # slot 1 (an orphan) is set afterwards
    type_values, role_values = coded.type_values, coded.role_values
    columns = zip(
        entries,
        range(n),
        state.ids,
        state.parent_slots,
        coded.type_codes,
        coded.role_codes,
        state.line,
        state.offset,
        state.length,
        strict=True,
    )
    for entry, index, entry_id, slot, kind, role, line, offset, length in columns:
        entry._raw = None  # one assignment a field: four at once would build and unpack a tuple each time
        entry._source = source
        entry._timestamp = UNREAD
        entry.id = entry_id
        entry.parent_id = by_slot[slot]
        entry.type = type_values[kind]
        entry.role = role_values[role]
        entry.line = line
        entry.index = index
        entry.offset = offset
        entry.length = length
    for index, parent in coded.orphans:
        entries[index].parent_id = parent
    return entries


def _listed_entries(state: PrefixState, source: FileSource) -> list[Entry]:
    """``_resumed_entries`` from a state whose types, roles and parentIds are lists."""
    entries = list(map(Entry.__new__, repeat(Entry, len(state.ids))))
    columns = zip(
        entries,
        range(len(entries)),
        state.ids,
        state.parents,
        state.types,
        state.roles,
        state.line,
        state.offset,
        state.length,
        strict=True,
    )
    for entry, index, entry_id, parent, kind, role, line, offset, length in columns:
        entry._raw = None  # one assignment a field: four at once would build and unpack a tuple each time
        entry._source = source
        entry._timestamp = UNREAD
        entry.id = entry_id
        entry.parent_id = parent
        entry.type = kind
        entry.role = role
        entry.line = line
        entry.index = index
        entry.offset = offset
        entry.length = length
    return entries
