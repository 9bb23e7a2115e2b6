"""The branch: the path from a leaf up through parentId to a root, as Pi's getBranch() walks it."""

from __future__ import annotations

import contextlib
import difflib
from array import array
from collections.abc import Iterable, Sequence
from itertools import islice, repeat
from operator import attrgetter, indexOf

from pi_compact.errors import CycleError, NotFoundError
from pi_compact.session.entries import Diagnostic, Entry, Session

_ID = attrgetter("id")


class Branch:
    """Entries root → leaf, plus what the walk noticed (an orphaned start, say)."""

    __slots__ = ("_distinct", "_positions", "diagnostics", "entries", "session")

    def __init__(self, session: Session, entries: list[Entry], diagnostics: list[Diagnostic] | None = None) -> None:
        self.session = session
        self.entries = entries
        self.diagnostics: list[Diagnostic] = [] if diagnostics is None else diagnostics
        self._positions: dict[str, int] | None = None
        self._distinct = False  # every id on it is another (a walked branch: see ``_walk``)

    @property
    def distinct(self) -> bool:
        """Whether every id on the branch is another (a walked branch: see ``_walk``)."""
        return self._distinct

    @property
    def leaf(self) -> Entry | None:
        return self.entries[-1] if self.entries else None

    def position(self, entry_id: str) -> int:
        """0-based position of an entry on the branch (the first with that id), or -1."""
        if self._positions is None and self._distinct:
            # The only entry with that id: looked for from the leaf back, where the entries asked about lie
            with contextlib.suppress(ValueError):
                return len(self.entries) - 1 - indexOf(map(_ID, reversed(self.entries)), entry_id)
        if self._positions is None:
            ids = list(map(_ID, self.entries))
            ids.reverse()  # the first of a repeated id is written last, and wins
            self._positions = dict(zip(ids, range(len(ids) - 1, -1, -1), strict=True))
        return self._positions.get(entry_id, -1)

    def __len__(self) -> int:
        return len(self.entries)


MIN_PREFIX = 4  # shortest id prefix accepted in place of a whole id


def _shared_prefix(a: str, b: str) -> int:
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def suggest_ids(session: Session | None, wanted: str, limit: int = 3, ids: Iterable[str] | None = None) -> list[str]:
    """Ids that look like a mistyped one: ids starting with it first, then the longest shared prefix, then
    overall similarity. ``ids`` replaces the session's ids (a scope's labels, say)."""
    pool = list(ids if ids is not None else session.by_id if session is not None else ())

    def score(candidate: str) -> tuple[bool, int, float]:
        ratio = difflib.SequenceMatcher(None, candidate, wanted).ratio()
        return candidate.startswith(wanted), _shared_prefix(candidate, wanted), ratio

    ranked = sorted(((score(i), i) for i in pool if i != wanted), key=lambda item: (item[0], item[1]), reverse=True)
    return [i for (starts, prefix, ratio), i in ranked[:limit] if starts or prefix >= 2 or ratio >= 0.5]


def find_entry(session: Session, entry_id: str) -> Entry | None:
    """The entry with this id, or the only one whose id starts with it (at least MIN_PREFIX characters)."""
    entry = session.by_id.get(entry_id)
    if entry is not None or len(entry_id) < MIN_PREFIX:
        return entry
    hits = [e for key, e in session.by_id.items() if key.startswith(entry_id)]
    return hits[0] if len(hits) == 1 else None


def not_found(entry_id: str, ids: Iterable[str], where: str, session: Session | None = None) -> NotFoundError:
    """The error for an id that names no entry: an ambiguous prefix lists its matches; otherwise the nearest ids."""
    pool = list(ids)
    starting = sorted(i for i in pool if i.startswith(entry_id))
    if len(entry_id) >= MIN_PREFIX and len(starting) > 1:
        shown = ", ".join(starting[:5]) + (", ..." if len(starting) > 5 else "")
        return NotFoundError(
            f"id prefix {entry_id!r} matches {len(starting)} entries ({shown}): give more characters", path=where
        )
    near = suggest_ids(session, entry_id, ids=pool)
    hint = f" (did you mean {', '.join(near)}?)" if near else ""
    short = f"; an id prefix needs at least {MIN_PREFIX} characters" if starting and len(entry_id) < MIN_PREFIX else ""
    return NotFoundError(f"no entry with id {entry_id!r}{hint}{short}", path=where)


def resolve_entry(session: Session, entry_id: str) -> Entry:
    """The entry with this id (or unique prefix of MIN_PREFIX+ characters), or NotFoundError naming the nearest."""
    entry = find_entry(session, entry_id)
    if entry is None:
        raise not_found(entry_id, session.by_id, str(session.path or "<session>"), session)
    return entry


def no_leaf_reason(session: Session) -> str:
    """Why Pi finds no leaf in ``session`` (``session.no_leaf``), naming the line, and which --leaf to give."""
    from pi_compact.session.diagnose import leaf_advice

    line = next((d.line for d in session.diagnostics if d.code == "leaf-without-id" and d.line), None)
    if line is None:
        return "Pi finds no leaf: the last entry has no id, so the branch is empty"
    return (
        f"Pi finds no leaf: the last entry (line {line}) is not an object or has no id, so the branch is empty; "
        f"{leaf_advice(session.entries, line)}"
    )


def no_leaf_context(session: Session) -> Branch:
    """The entries Pi builds its context from when it finds no leaf (``session.no_leaf``): its context code falls
    back to the last entry of the file and walks its parents; a last line that is not an object gives nothing.
    Pi's branch (``get_branch``) stays empty meanwhile."""
    line = next((d.line for d in session.diagnostics if d.code == "leaf-without-id"), None)
    last = session.entries[-1] if session.entries else None
    if not session.no_leaf or last is None or last.line != line:
        return Branch(session, [])
    return _walk(session, last, str(session.path or "<session>"))


def get_branch(session: Session, leaf_id: str | None = None) -> Branch:
    """Walk from the leaf (the last entry, or ``leaf_id``) to the root; empty when Pi finds no leaf.

    A parentId cycle would make Pi loop forever: refuse it. A parentId that points nowhere ends the walk, as in Pi;
    say how many earlier entries that leaves off the branch.
    """
    where = str(session.path or "<session>")
    start = resolve_entry(session, leaf_id) if leaf_id is not None else session.leaf
    if start is None:
        return Branch(session, [])
    # Pi keeps the leaf as an id and looks it up, so a duplicate id resolves to the later entry.
    if start.id is not None and session.by_id.get(start.id) is not None:
        start = session.by_id[start.id]
    return _walk(session, start, where)


def _walk(session: Session, start: Entry, where: str) -> Branch:
    path: list[Entry] = []
    append = path.append
    get = session.by_id.get
    entries = session.entries
    bound = len(entries)  # a walk longer than the file has entries has met an entry twice: a cycle
    slots = session.parent_slots
    indexed = len(slots) if slots is not None else 0
    current: Entry | None = start
    while current is not None:
        append(current)
        at = current.index
        if at < indexed and entries[at] is current:  # into the indexed prefix: follow its parent links by number
            _follow_slots(slots, entries, at, path, bound, where)  # type: ignore[arg-type]
            break
        parent = current.parent_id
        if parent is None:
            break
        current = get(parent)  # None: the parent is missing, and the branch starts here (reported below)
        if len(path) > bound:
            _refuse_cycle(path, where)
    path.reverse()
    diagnostics: list[Diagnostic] = []
    if path and path[0].parent_id is not None:
        diagnostics.append(_orphan_diagnostic(session, path))
    _check_first_kept(path, diagnostics)
    _check_message_objects(path, diagnostics)
    branch = Branch(session, path, diagnostics)
    # Every entry after the start is by_id's entry for its id, and by_id holds one per id: a second entry with one
    # of the ids would be the same entry again, a cycle (refused above)
    branch._distinct = True
    return branch


def _follow_slots(
    slots: Sequence[int], entries: list[Entry], at: int, path: list[Entry], bound: int, where: str
) -> None:
    """Extend ``path`` with the ancestors of ``entries[at]`` as ``Session.parent_slots`` gives them. Where entries
    follow their parents one after the other (as Pi writes a branch), the run is found by comparing the slots with
    those of such a run many at a time (``_run_start``), and taken whole."""
    if not (isinstance(slots, array) and slots.typecode in _RUN_CODES and len(slots) > _RUN_MIN):
        _step_slots(slots, entries, at, path, bound, where)
        return
    consecutive = array(slots.typecode, range(1, len(slots) + 1))  # the slot of an entry whose parent precedes it
    extend = path.extend
    slot = slots[at]
    while slot >= 2:  # every pass adds at least one entry: past ``bound`` the walk has met one twice, a cycle
        if slot == at + 1:  # the parent is the entry before: so may its own be, and so on
            start = _run_start(slots, consecutive, at)
            extend(reversed(entries[start:at]))
            at = start
        else:
            at = slot - 2
            path.append(entries[at])
        if len(path) > bound:
            _refuse_cycle(path, where)
        slot = slots[at]


_RUN_CODES = ("I", "Q", "q")  # wide enough for a slot past 255
_RUN_MIN = 255  # below it, a step at a time


def _run_start(slots: array[int], consecutive: array[int], at: int) -> int:
    """The least ``start`` from which every entry up to ``entries[at]`` has the entry before it as its parent
    (``slots[j] == j + 1`` for ``start < j <= at``; ``at >= 1`` and ``slots[at] == at + 1``)."""
    view, run = memoryview(slots), memoryview(consecutive)
    good, size = 1, 2  # slots (at - good, at] agree; try (at - size, at]
    while size <= at and view[at - size + 1 : at + 1] == run[at - size + 1 : at + 1]:
        good, size = size, size * 2
    bad = min(size, at + 1)  # (at - bad, at] does not agree, or reaches slot 0 (which no parent precedes)
    while bad - good > 1:
        mid = (good + bad) // 2
        if view[at - mid + 1 : at - good + 1] == run[at - mid + 1 : at - good + 1]:
            good = mid
        else:
            bad = mid
    return at - good


def _step_slots(slots: Sequence[int], entries: list[Entry], at: int, path: list[Entry], bound: int, where: str) -> None:
    """``_follow_slots`` a step at a time."""
    chain: list[int] = []
    add = chain.append
    slot = slots[at]
    for _ in repeat(None, bound - len(path) + 1):
        if slot < 2:
            break
        at = slot - 2
        add(at)
        slot = slots[at]
    else:
        path.extend(map(entries.__getitem__, chain))
        _refuse_cycle(path, where)
    path.extend(map(entries.__getitem__, chain))


def _orphan_diagnostic(session: Session, path: list[Entry]) -> Diagnostic:
    first = path[0]
    on_path = {id(e) for e in path}
    earlier = sum(1 for e in session.entries if e.index < first.index and id(e) not in on_path)
    return Diagnostic(
        "warning",
        "orphaned-branch",
        f"entry {first.id} points to parent {first.parent_id}, which is not in the file (a malformed line?): "
        f"the branch starts here, as in Pi, and {earlier} earlier entries are not on it",
        first.line,
    )


def _refuse_cycle(path: list[Entry], where: str) -> None:
    """CycleError naming the first entry the walk meets a second time, as a walk keeping every entry seen would."""
    seen: set[int] = set()
    for entry in path:
        if id(entry) in seen:
            raise CycleError(
                f"parentId cycle through entry {entry.id} (Pi would hang on this file)", path=where, line=entry.line
            )
        seen.add(id(entry))
    raise AssertionError("a walk longer than the file repeats an entry")  # pragma: no cover


def _check_message_objects(path: list[Entry], diagnostics: list[Diagnostic]) -> None:
    """A message entry on the branch without a message (or with null): Pi reads ``entry.message.role`` and throws."""
    # entry.role is read at load: an entry with a role has a message, and its body need not be read again (a
    # comprehension: a fifth of what compress over map(attrgetter) costs on 23,000 entries)
    for entry in [e for e in path if e.role is None]:
        if entry.type == "message" and entry.raw.get("message") is None:
            diagnostics.append(
                Diagnostic(
                    "warning",
                    "pi-throws",
                    f"message entry {entry.id} has no message: Pi 1.6 throws on it when it builds the context "
                    "(cannot read 'role'), so it cannot resume this branch",
                    entry.line,
                )
            )


def _check_first_kept(path: list[Entry], diagnostics: list[Diagnostic]) -> None:
    """Warn when the latest compaction on the branch keeps from an entry that is not before it on the branch:
    Pi then keeps none of the earlier history, only the summary (a compaction that names itself keeps nothing on
    purpose, as Pi writes it)."""
    at = next((i for i in range(len(path) - 1, -1, -1) if path[i].type == "compaction"), None)
    if at is None:
        return
    compaction = path[at]
    first_kept = compaction.raw.get("firstKeptEntryId")
    if first_kept == compaction.id or first_kept in map(_ID, islice(reversed(path), len(path) - at, None)):
        return  # looked for from the compaction back: Pi's compactions keep from shortly before themselves
    shown = first_kept if isinstance(first_kept, str) else "(missing)"
    diagnostics.append(
        Diagnostic(
            "warning",
            "first-kept-not-on-branch",
            f"compaction {compaction.id} keeps from entry {shown}, which is not on the branch before it: Pi drops "
            f"all {at} earlier entries of the branch from the context and keeps only the summary",
            compaction.line,
        )
    )


def children(session: Session) -> dict[str | None, list[Entry]]:
    """Child lists by parent id (None for roots), in file order."""
    out: dict[str | None, list[Entry]] = {}
    for entry in session.entries:
        out.setdefault(entry.parent_id, []).append(entry)
    return out


def leaves(session: Session) -> list[Entry]:
    """Entries with no children: the tips of every branch, in file order."""
    has_child = {e.parent_id for e in session.entries if e.parent_id}
    return [e for e in session.entries if e.id not in has_child]
