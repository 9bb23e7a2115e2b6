"""Evidence annotations for a checkpoint's read/modified file lists: what the kept tail still shows of each file.

``annotate_file_lists(plan, read_files, modified_files, cwd, retained_reads)`` labels every listed path from the
recorded session alone (no file is opened, no model is asked). Evidence is looked for in the *tail*: Pi's projected
entries from the cut (``plan.kept_entries()``) to the leaf, context edits applied. The turn prefix of a split turn is
being compacted and is never evidence. Retained startup reads count as evidence kept beside the tail.

- A read counts when it succeeded, its call and result pair unambiguously (one call, one result per id), both are
  visible in the projection, and its result is text: ``full read in tail``, ``partial read in tail``, or ``read
  output in tail`` when completeness cannot be told (a replaced result). Partial pages are never added up.
- A successful ``write`` whose call (with its ``content``) is visible: ``write content in tail``.
- Tracked modifications (``write``/``edit`` calls with a path, nested calls included, whatever their outcome or
  context edits, since a hidden message still happened) invalidate earlier snapshots: ``read in tail, then
  edited``. Nested calls only invalidate; they never supply contents.
- Calls in one assistant message may run concurrently: a snapshot with a same-path modification beside it gets
  ``…; order uncertain``.
- Among snapshots still valid, a complete one wins over a later partial one (no modification lies between them).
- A retained startup read keeps a positive label of its own (``full startup read retained``, ``partial startup
  read retained``), and is invalidated like any snapshot (``startup read retained, then edited`` / ``; order
  uncertain``) by modifications recorded after it anywhere on the branch.
- A modified path with no evidence: ``no read-tool output in tail``. An unmodified one: no label.

``FileListAnnotations`` holds both lists and the one-time header; ``dict(annotations)`` maps path → label and
``to_json()`` is what ``--json`` output reports.

Paths are compared after resolving them against cwd (``a.ts`` and ``/repo/a.ts`` are one file); a label applies to
each listed spelling.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence
from itertools import compress
from operator import attrgetter, itemgetter
from typing import Any, Literal, NamedTuple

from pi_compact.checkpoint.readtool import (
    display_path,
    mutation_path,
    parse_read_result,
    read_args,
    resolve_path,
    text_blocks_only,
    tool_call_blocks,
)
from pi_compact.checkpoint.startup_reads import RetainedRead
from pi_compact.pi.messages import entry_messages
from pi_compact.pi.plan import CompactionPlan
from pi_compact.pi.projection import ProjectedEntry
from pi_compact.session.entries import Entry, JsonDict
from pi_compact.session.mutations import Facts, mutation_facts

FULL_READ = "full read in tail"
PARTIAL_READ = "partial read in tail"
READ_OUTPUT = "read output in tail"
WRITE_CONTENT = "write content in tail"
READ_THEN_EDITED = "read in tail, then edited"
WRITE_THEN_EDITED = "write content in tail, then edited"
READ_ORDER_UNCERTAIN = "read in tail; order uncertain"
WRITE_ORDER_UNCERTAIN = "write content in tail; order uncertain"
NO_READ_OUTPUT = "no read-tool output in tail"
FULL_STARTUP_READ = "full startup read retained"
PARTIAL_STARTUP_READ = "partial startup read retained"
STARTUP_THEN_EDITED = "startup read retained, then edited"
STARTUP_ORDER_UNCERTAIN = "startup read retained; order uncertain"

HEADER = (
    "Paths relative to the session cwd; unless annotated, no retained read-tool output identified. Labels describe "
    "what this checkpoint and its tail hold, not the live filesystem (shell reads and outside changes not inferred)."
)

Kind = Literal["read", "write", "startup"]
Completeness = Literal["full", "partial", "unknown"]

_LABELS: dict[tuple[Kind, str], str] = {
    ("read", "full"): FULL_READ,
    ("read", "partial"): PARTIAL_READ,
    ("read", "unknown"): READ_OUTPUT,
    ("write", "full"): WRITE_CONTENT,
    ("startup", "full"): FULL_STARTUP_READ,
    ("startup", "partial"): PARTIAL_STARTUP_READ,
    ("startup", "unknown"): PARTIAL_STARTUP_READ,
    ("read", "then"): READ_THEN_EDITED,
    ("write", "then"): WRITE_THEN_EDITED,
    ("startup", "then"): STARTUP_THEN_EDITED,
    ("read", "uncertain"): READ_ORDER_UNCERTAIN,
    ("write", "uncertain"): WRITE_ORDER_UNCERTAIN,
    ("startup", "uncertain"): STARTUP_ORDER_UNCERTAIN,
}


class FileAnnotation(NamedTuple):
    """One listed path: as Pi lists it, as the checkpoint shows it, and its label (None: nothing identified)."""

    path: str
    display_path: str
    label: str | None
    paths: tuple[str, ...] = ()  # every path Pi listed for this file (an absolute and a relative one, say)

    def to_json(self) -> JsonDict:
        return {
            "path": self.path,
            "paths": list(self.paths or (self.path,)),
            "displayPath": self.display_path,
            "label": self.label,
        }


class FileListAnnotations:
    """Both lists with their labels, and the header the checkpoint prints once above them."""

    __slots__ = ("header", "modified", "read")

    def __init__(
        self, read: tuple[FileAnnotation, ...] = (), modified: tuple[FileAnnotation, ...] = (), header: str = HEADER
    ) -> None:
        self.read = read
        self.modified = modified
        self.header = header

    def label(self, path: str) -> str | None:
        for item in (*self.modified, *self.read):
            if path in (item.paths or (item.path,)):
                return item.label
        return None

    @property
    def labels(self) -> dict[str, str | None]:
        """Path (as Pi lists it) → label; also what ``dict(annotations)`` gives."""
        return {path: item.label for item in (*self.read, *self.modified) for path in item.paths or (item.path,)}

    def keys(self) -> list[str]:
        return list(self.labels)

    def __getitem__(self, path: str) -> str | None:
        labels = self.labels
        if path not in labels:
            raise KeyError(path)
        return labels[path]

    def to_json(self) -> JsonDict:
        return {
            "header": self.header,
            "readFiles": [a.to_json() for a in self.read],
            "modifiedFiles": [a.to_json() for a in self.modified],
        }


# ---------------------------------------------------------------------------------------------------- events


class _Snapshot(NamedTuple):
    """Visible contents of a file at one point: ``group`` is the branch position of the assistant message."""

    kind: Kind
    completeness: Completeness
    group: int | None  # None: position unknown (a retained read not found on this branch)
    order: int
    ident: tuple[Any, ...]


class _Mutation(NamedTuple):
    group: int
    ident: tuple[Any, ...]


class _Evidence:
    __slots__ = ("mutations", "snapshots")

    def __init__(self) -> None:
        self.snapshots: dict[str, list[_Snapshot]] = {}
        self.mutations: dict[str, list[_Mutation]] = {}

    def snapshot(self, key: str, snap: _Snapshot) -> None:
        self.snapshots.setdefault(key, []).append(snap)

    def mutation(self, key: str, mut: _Mutation) -> None:
        self.mutations.setdefault(key, []).append(mut)


def _parent_group(branch: Sequence[Entry], call_id: str | None, position: int) -> int:
    """The assistant message that issued the call a tool result answers: the nearest one before it (looked for
    from the result back, so only the bodies in between are read), else the result's own position."""
    if call_id is None:
        return position
    for at in range(position, -1, -1):
        if branch[at].role != "assistant":
            continue  # only assistant messages issue tool calls
        for message in entry_messages(branch[at]):
            for _, block in tool_call_blocks(message):
                if block.get("id") == call_id:
                    return at
    return position


def _collect_mutations(
    branch: Sequence[Entry], cwd: str, evidence: _Evidence, known: int = 0, kept: dict[int, Facts] | None = None
) -> None:
    """Every tracked modification on the raw branch, context edits notwithstanding.

    Only assistant tool calls and tool results' nested calls can modify files (``session.mutations``). The facts
    of an entry among the session's first ``known`` come from ``kept`` (``Session.mutations``: taken by the loader
    from the body it dropped, with the same ``mutation_facts``), so no body is read back and those entries are not
    even visited; the bodies of the others are in memory.
    """
    found: list[tuple[int, str | None, str | None, tuple[tuple[int, str], ...]]] = []
    indexes = list(map(_INDEX, branch))
    in_order = indexes == sorted(indexes)  # a branch in file order (as Pi appends): its entries found by bisection
    if kept:
        where = None if in_order else dict(zip(indexes, range(len(branch)), strict=True))
        for index, (call_id, pairs) in kept.items():
            if index >= known:
                continue
            if where is None:
                position: int | None = bisect_left(indexes, index)
                if position == len(indexes) or indexes[position] != index:  # type: ignore[index]
                    position = None
            else:
                position = where.get(index)
            if position is not None:
                found.append((position, branch[position].role, call_id, pairs))
    later = (
        range(bisect_left(indexes, known), len(branch))
        if in_order
        else compress(range(len(branch)), map(known.__le__, indexes))
    )
    for position in later:
        entry = branch[position]
        role = entry.role
        if role == "assistant" or role == "toolResult":  # a message entry: its one message holds the facts
            message = entry.raw.get("message")
            if role == "toolResult" and not (isinstance(message, dict) and "nestedCalls" in message):
                continue  # a result's facts are its nested calls
            facts = mutation_facts(message)
            if facts is not None:
                found.append((position, role, *facts))
    found.sort(key=_POSITION)
    resolved: dict[str, str] = {}
    for position, role, call_id, pairs in found:
        if role == "assistant":
            group, kind = position, "call"
        else:
            group, kind = _parent_group(branch, call_id, position), "nested"
        for index, path in pairs:
            key = resolved.get(path)
            if key is None:
                key = resolved[path] = resolve_path(path, cwd)
            evidence.mutation(key, _Mutation(group, (kind, position, index)))


def _positions_of(branch: Sequence[Entry], entries: list[Entry]) -> dict[int, int]:
    """The branch position of each of ``entries`` that lies on it, by ``id(entry)``: looked for from the leaf back,
    where the kept tail lies, so a long branch is not walked whole."""
    wanted = set(map(id, entries))
    positions: dict[int, int] = {}
    for position in range(len(branch) - 1, -1, -1):
        key = id(branch[position])
        if key in wanted and key not in positions:
            positions[key] = position
            if len(positions) == len(wanted):
                break
    return positions


_INDEX = attrgetter("index")
_POSITION = itemgetter(0)


def _visible_call(pe: ProjectedEntry, call_id: str, block: JsonDict) -> bool:
    """The call is in the projected (edited) assistant message, unchanged."""
    for message in pe.messages:
        for _, visible in tool_call_blocks(message):
            if visible.get("id") == call_id:
                return visible.get("name") == block.get("name") and visible.get("arguments") == block.get("arguments")
    return False


def _collect_tail_snapshots(
    tail: Sequence[ProjectedEntry], positions: dict[int, int], cwd: str, evidence: _Evidence
) -> None:
    """Read and write snapshots in the tail, from unambiguous call/result pairs."""
    calls: dict[str, list[tuple[ProjectedEntry, int, JsonDict]]] = {}
    results: dict[str, list[tuple[ProjectedEntry, JsonDict]]] = {}
    for pe in tail:
        for message in entry_messages(pe.entry):
            for index, block in tool_call_blocks(message):
                if isinstance(block.get("id"), str):
                    calls.setdefault(block["id"], []).append((pe, index, block))
            if message.get("role") == "toolResult" and isinstance(message.get("toolCallId"), str):
                results.setdefault(message["toolCallId"], []).append((pe, message))
    for call_id, found in calls.items():
        paired = results.get(call_id, [])
        if len(found) != 1 or len(paired) != 1:
            continue
        (call_pe, index, block), (result_pe, result) = found[0], paired[0]
        name = block.get("name")
        group = positions[id(call_pe.entry)]
        if positions[id(result_pe.entry)] < group or result.get("toolName") not in (None, name):
            continue
        if not _visible_call(call_pe, call_id, block):
            continue
        ident = ("call", group, index)
        if name == "read":
            args = read_args(block.get("arguments"))
            if args is None or result_pe.omitted:
                continue
            output = parse_read_result(args, result)
            if not output.ok:
                continue
            completeness: Completeness = output.completeness
            if result_pe.replaced:
                shown = result_pe.messages[0].get("content") if result_pe.messages else None
                if text_blocks_only(shown) is None:
                    continue
                completeness = "unknown"
            evidence.snapshot(resolve_path(args.path, cwd), _Snapshot("read", completeness, group, index, ident))
        elif name == "write":
            arguments = block.get("arguments")
            path = mutation_path(name, arguments)
            if path is None or not isinstance(arguments, dict) or not isinstance(arguments.get("content"), str):
                continue
            if result.get("isError") is True:
                continue
            evidence.snapshot(resolve_path(path, cwd), _Snapshot("write", "full", group, index, ident))


def _retained_group(branch: Sequence[Entry], read: RetainedRead) -> tuple[int | None, int]:
    """(branch position of the assistant message that issued a retained read, its block index)."""
    result_position = next((i for i, e in enumerate(branch) if e.id == read.entry_id), None)
    if result_position is None:
        return None, 0
    for position in range(result_position, -1, -1):
        for message in entry_messages(branch[position]):
            for index, block in tool_call_blocks(message):
                if block.get("id") == read.tool_call_id:
                    return position, index
    return None, 0


# ---------------------------------------------------------------------------------------------------- labels


def _label(snapshots: list[_Snapshot], mutations: list[_Mutation], modified: bool) -> str | None:
    valid: list[_Snapshot] = []
    uncertain: list[_Snapshot] = []
    invalidated: list[_Snapshot] = []
    for snap in snapshots:
        others = [m for m in mutations if m.ident != snap.ident]
        if snap.group is None:
            (uncertain if others else valid).append(snap)
        elif any(m.group > snap.group for m in others):
            invalidated.append(snap)
        elif any(m.group == snap.group for m in others):
            uncertain.append(snap)
        else:
            valid.append(snap)

    def latest(items: list[_Snapshot]) -> _Snapshot:
        return max(items, key=lambda s: (-1 if s.group is None else s.group, s.order))

    if valid:
        complete = [s for s in valid if s.completeness == "full"]
        if complete:
            best = latest(complete)
        else:
            unknown = [s for s in valid if s.completeness == "unknown"]
            best = latest(unknown or valid)
        return _LABELS[(best.kind, best.completeness)]
    if uncertain:
        return _LABELS[(latest(uncertain).kind, "uncertain")]
    if invalidated:
        return _LABELS[(latest(invalidated).kind, "then")]
    return NO_READ_OUTPUT if modified else None


def annotate_file_lists(
    plan: CompactionPlan,
    read_files: list[str],
    modified_files: list[str],
    cwd: str,
    retained_reads: Sequence[RetainedRead] = (),
) -> FileListAnnotations:
    """Label each path of Pi's read/modified lists with the evidence the tail (and retained reads) hold."""
    branch = plan.projection.branch.entries
    kept = plan.kept_entries()
    positions = _positions_of(branch, [pe.entry for pe in kept])
    tail = [pe for pe in kept if id(pe.entry) in positions]
    tail_start = min((positions[id(pe.entry)] for pe in tail), default=len(branch))
    evidence = _Evidence()
    session = plan.projection.branch.session
    _collect_mutations(branch, cwd, evidence, session.mutations_known, session.mutations)
    _collect_tail_snapshots(tail, positions, cwd, evidence)
    for read in retained_reads:
        group, order = _retained_group(branch, read)
        completeness: Completeness = "full" if read.complete else "partial"
        evidence.snapshot(
            resolve_path(read.path, cwd), _Snapshot("startup", completeness, group, order, ("retained", *read.key))
        )
    modified_keys = {resolve_path(p, cwd) for p in modified_files}

    def annotate(path: str) -> FileAnnotation:
        key = resolve_path(path, cwd)
        mutations = evidence.mutations.get(key, [])
        modified = key in modified_keys or any(m.group >= tail_start for m in mutations)
        label = _label(evidence.snapshots.get(key, []), mutations, modified)
        return FileAnnotation(path, display_path(path, cwd), label)

    # A file read under one spelling and modified under another is shown once, as modified, with both paths.
    read_items = [annotate(p) for p in read_files]
    modified_items = [annotate(p) for p in modified_files]
    shown_modified = {item.display_path for item in modified_items}
    moved = [item for item in read_items if item.display_path in shown_modified]
    return FileListAnnotations(
        read=_merge(item for item in read_items if item.display_path not in shown_modified),
        modified=_merge([*modified_items, *moved]),
    )


def _merge(items: Iterable[FileAnnotation]) -> tuple[FileAnnotation, ...]:
    """One annotation per shown path, sorted by it: Pi may list one file under an absolute and a relative path.
    Every listed path is kept in ``paths``; the label is the first one found (they share their evidence)."""
    merged: dict[str, FileAnnotation] = {}
    for item in items:
        seen = merged.get(item.display_path)
        if seen is None:
            merged[item.display_path] = item._replace(paths=(item.path,))
        elif item.path not in seen.paths:
            merged[item.display_path] = seen._replace(paths=(*seen.paths, item.path), label=seen.label or item.label)
    return tuple(merged[key] for key in sorted(merged))


def evidence_json(annotations: FileListAnnotations, retained: Sequence[RetainedRead]) -> JsonDict:
    """The annotated lists and the retained startup reads as ``check --json`` and ``compact --json`` report them."""
    return {
        **annotations.to_json(),
        "startupReads": [{"entryId": r.entry_id, "path": r.path, "displayPath": r.display_path} for r in retained],
    }
