"""Where Pi would cut: the threshold decision, the cut point, what gets summarised, and the file lists.

Mirrors Pi 1.6's findProjectedCutPoint and prepareCompaction on the projected context.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import NamedTuple, overload

from pi_compact.pi.messages import entry_messages
from pi_compact.pi.projection import ContextTokens, ProjectedEntry, Projection, build_projection, context_tokens
from pi_compact.session.entries import Entry, JsonDict
from pi_compact.session.tree import Branch, no_leaf_reason

CUT_ROLES = frozenset({"user", "assistant", "bashExecution", "custom", "branchSummary", "compactionSummary"})
TURN_START_ROLES = frozenset({"user", "bashExecution", "custom", "branchSummary", "compactionSummary"})


class CutPoint(NamedTuple):
    first_kept_index: int  # index into the projected entries
    turn_start_index: int  # -1 unless the cut splits a turn
    is_split_turn: bool


def _is_cut_point(pe: ProjectedEntry) -> bool:
    if pe.entry.type == "compaction":
        return False
    if pe.facts is not None:  # one message, of the entry's role
        return pe.entry.role in CUT_ROLES
    for m in pe.messages:  # noqa: SIM110  (a loop, not a generator: this runs for every entry of the context)
        if m.get("role") in CUT_ROLES:
            return True
    return False


def _is_turn_start(pe: ProjectedEntry) -> bool:
    if pe.facts is not None:
        return pe.entry.role in TURN_START_ROLES
    return pe.entry.type != "compaction" and any(m.get("role") in TURN_START_ROLES for m in pe.messages)


def find_cut_point(entries: list[ProjectedEntry], start: int, end: int, keep_recent_tokens: int) -> CutPoint:
    """Walk back from the newest entry until ``keep_recent_tokens`` are kept; never cut at a tool result."""
    cuts = [i for i in range(start, end) if _is_cut_point(entries[i])]
    if not cuts:
        return CutPoint(start, -1, False)
    acc = 0
    exceeded = False
    cut = cuts[0]
    for i in range(end - 1, start - 1, -1):
        tokens = entries[i].tokens
        if tokens == 0:
            continue
        acc += tokens
        if acc >= keep_recent_tokens:
            exceeded = True
            cut = next((c for c in cuts if c >= i), cuts[-1])
            break
    # An omitted assistant attempt (overflow recovery) after the cut: keep the cut after it.
    suffix = entries[cut + 1 : end]

    def visible(pe: ProjectedEntry) -> bool:  # (one held without its body is one message: visible, not omitted)
        return pe.facts is not None or (pe.entry.type != "context_edit" and len(entry_messages(pe.entry)) > 0)

    def omitted(pe: ProjectedEntry) -> bool:
        return pe.facts is None and visible(pe) and not pe.messages

    omitted_ids = {pe.entry.id for pe in suffix if omitted(pe)}
    external_replacement = any(
        pe.entry.type == "context_edit"
        and pe.entry.raw.get("replacement") is not None
        and pe.entry.raw.get("targetId") not in omitted_ids
        for pe in suffix
    )
    if (
        exceeded
        and not external_replacement
        and any(pe.entry.type == "message" and pe.entry.role == "assistant" and omitted(pe) for pe in suffix)
        and all(pe.entry.type != "compaction" and (not visible(pe) or omitted(pe)) for pe in suffix)
    ):
        cut += 1
    while cut > start:
        prev = entries[cut - 1]
        if prev.entry.type == "compaction" or prev.facts is not None or prev.messages:
            break
        cut -= 1
    if _is_turn_start(entries[cut]):
        return CutPoint(cut, -1, False)
    turn_start = -1
    for i in range(cut, start - 1, -1):
        if _is_turn_start(entries[i]):
            turn_start = i
            break
    return CutPoint(cut, turn_start, turn_start != -1)


class FileOps:
    """The paths that messages read, wrote and edited, collected as Pi collects them."""

    __slots__ = ("edited", "read", "written")

    def __init__(
        self, read: set[str] | None = None, written: set[str] | None = None, edited: set[str] | None = None
    ) -> None:
        self.read: set[str] = set() if read is None else read
        self.written: set[str] = set() if written is None else written
        self.edited: set[str] = set() if edited is None else edited

    def add(self, tool: object, args: object) -> None:
        path = args.get("path") if isinstance(args, dict) else None
        if not isinstance(path, str) or not path:
            return
        if tool == "read":
            self.read.add(path)
        elif tool == "write":
            self.written.add(path)
        elif tool == "edit":
            self.edited.add(path)

    def add_message(self, message: JsonDict) -> None:
        """File operations of one message: tool calls of an assistant, nested calls of a tool result."""
        role = message.get("role")
        if role == "toolResult":
            nested = message.get("nestedCalls")
            calls = nested.get("calls") if isinstance(nested, dict) else None
            for call in calls or []:
                if isinstance(call, dict):
                    self.add(call.get("name"), call.get("arguments"))
            return
        if role != "assistant" or not isinstance(message.get("content"), list):
            return
        for block in message["content"]:
            if isinstance(block, dict) and block.get("type") == "toolCall" and "arguments" in block and "name" in block:
                self.add(block.get("name"), block.get("arguments"))

    def add_entry(self, pe: ProjectedEntry) -> None:
        """File operations of one projected entry's messages (a compaction's none), from its facts when it has
        them."""
        if pe.facts is not None:
            for tool, path in pe.facts.file_ops:
                self.add(tool, {"path": path})
        elif pe.entry.type != "compaction":
            for m in pe.messages:
                if m.get("role") != "system":
                    self.add_message(m)

    def lists(self) -> tuple[list[str], list[str]]:
        """(readFiles, modifiedFiles) as Pi computes them: modified = written ∪ edited, read = read − modified."""
        modified = self.edited | self.written
        return sorted(p for p in self.read if p not in modified), sorted(modified)


def format_file_operations(read_files: list[str], modified_files: list[str]) -> str:
    """The ``<read-files>`` / ``<modified-files>`` blocks Pi appends to a summary."""
    sections = []
    if read_files:
        sections.append("<read-files>\n" + "\n".join(read_files) + "\n</read-files>")
    if modified_files:
        sections.append("<modified-files>\n" + "\n".join(modified_files) + "\n</modified-files>")
    return "\n\n" + "\n\n".join(sections) if sections else ""


def _span(entries: list[ProjectedEntry]) -> list[JsonDict]:
    """The messages of ``entries`` that a compaction summarizes: none of a compaction, no system message."""
    return [m for pe in entries if pe.entry.type != "compaction" for m in pe.messages if m.get("role") != "system"]


class SpanMessages(Sequence[JsonDict]):
    """``_span`` of entries some of which hold no body (``projection.HeldProjectedEntry``): counted from their
    roles, and read from the file as they are iterated, so that holding the plan does not hold every body."""

    __slots__ = ("_count", "_entries")

    def __init__(self, entries: list[ProjectedEntry]) -> None:
        self._entries = entries
        count = 0
        for pe in entries:
            if pe.facts is not None:
                count += 1  # one message, never a system one
            elif pe.entry.type != "compaction":
                count += sum(1 for m in pe.messages if m.get("role") != "system")
        self._count = count

    def __len__(self) -> int:
        return self._count

    def __iter__(self) -> Iterator[JsonDict]:
        for pe in self._entries:
            if pe.facts is not None:
                yield pe.messages[0]
            elif pe.entry.type != "compaction":
                for m in pe.messages:
                    if m.get("role") != "system":
                        yield m

    @overload
    def __getitem__(self, index: int) -> JsonDict: ...
    @overload
    def __getitem__(self, index: slice) -> list[JsonDict]: ...
    def __getitem__(self, index: int | slice) -> JsonDict | list[JsonDict]:
        return list(self)[index]


class CompactionPlan(NamedTuple):
    """Everything Pi's prepareCompaction decides, plus the positions picompact reports."""

    projection: Projection
    context: ContextTokens
    boundary_start: int  # projected index where compactable entries start
    cut: CutPoint
    first_kept: Entry | None
    previous_compaction: Entry | None  # the compaction whose summary is updated (projected first)
    previous_summary: str | None
    messages_to_summarize: Sequence[JsonDict]  # a list, or ``SpanMessages`` where some bodies are not held
    turn_prefix_messages: Sequence[JsonDict]
    file_ops: FileOps
    read_files: list[str]
    modified_files: list[str]
    nothing_reason: str | None = None  # set when Pi would not compact (prepareCompaction returns undefined)

    @property
    def tokens_before(self) -> int:
        return self.context.tokens

    @property
    def entries(self) -> list[ProjectedEntry]:
        return self.projection.entries

    @property
    def history_end(self) -> int:
        return self.cut.turn_start_index if self.cut.is_split_turn else self.cut.first_kept_index

    def summarized_entries(self) -> list[ProjectedEntry]:
        return self.entries[self.boundary_start : self.history_end]

    def prefix_entries(self) -> list[ProjectedEntry]:
        if not self.cut.is_split_turn:
            return []
        return self.entries[self.cut.turn_start_index : self.cut.first_kept_index]

    def kept_entries(self) -> list[ProjectedEntry]:
        return self.entries[self.cut.first_kept_index :]

    @property
    def can_compact(self) -> bool:
        return self.nothing_reason is None


def plan_compaction(branch: Branch, keep_recent_tokens: int, projection: Projection | None = None) -> CompactionPlan:
    """Pi's prepareCompaction for the branch. ``nothing_reason`` says why Pi would not compact."""
    if projection is None:
        projection = build_projection(branch)
    entries = projection.entries
    ctx = context_tokens(projection)
    # ``build_projection`` gives the messages of the latest compaction alone, and puts it first
    prev_index = 0 if entries and entries[0].entry.type == "compaction" and entries[0].messages else -1
    previous = entries[prev_index].entry if prev_index >= 0 else None
    previous_summary = previous.raw.get("summary") if previous is not None else None
    start = prev_index + 1 if prev_index >= 0 else 0
    cut = find_cut_point(entries, start, len(entries), keep_recent_tokens)
    first_kept = entries[cut.first_kept_index].entry if cut.first_kept_index < len(entries) else None
    history_end = cut.turn_start_index if cut.is_split_turn else cut.first_kept_index
    summarized = entries[start:history_end]
    to_summarize = SpanMessages(summarized) if any(pe.facts is not None for pe in summarized) else _span(summarized)
    prefix_entries = entries[cut.turn_start_index : cut.first_kept_index] if cut.is_split_turn else []
    prefix = (
        SpanMessages(prefix_entries) if any(pe.facts is not None for pe in prefix_entries) else _span(prefix_entries)
    )
    ops = FileOps()
    details = previous.raw.get("details") if previous is not None else None
    if previous is not None and not previous.raw.get("fromHook") and isinstance(details, dict):
        # Pi carries the file lists of its own (not an extension's) previous compaction forward.
        for key, target in (("readFiles", ops.read), ("modifiedFiles", ops.edited)):
            if isinstance(details.get(key), list):
                target.update(details[key])
    if isinstance(to_summarize, SpanMessages) or isinstance(prefix, SpanMessages):
        for pe in summarized:
            ops.add_entry(pe)
        for pe in prefix_entries:
            ops.add_entry(pe)
    else:
        for m in to_summarize:
            ops.add_message(m)
        for m in prefix:
            ops.add_message(m)
    read_files, modified_files = ops.lists()
    reason: str | None = None
    leaf = branch.leaf
    if leaf is None:
        reason = "the branch is empty"
        if branch.session.no_leaf:
            reason = no_leaf_reason(branch.session)
    elif leaf.type == "compaction":
        reason = f"the leaf {leaf.id} is already a compaction"
    elif first_kept is None or not first_kept.id:
        reason = "there is no entry to keep (nothing in context)"
    elif not to_summarize and not prefix:
        reason = "the cut falls at the start: everything fits in keepRecentTokens, so nothing would be summarised"
    return CompactionPlan(
        projection=projection,
        context=ctx,
        boundary_start=start,
        cut=cut,
        first_kept=first_kept,
        previous_compaction=previous,
        previous_summary=previous_summary if isinstance(previous_summary, str) else None,
        messages_to_summarize=to_summarize,
        turn_prefix_messages=prefix,
        file_ops=ops,
        read_files=read_files,
        modified_files=modified_files,
        nothing_reason=reason,
    )


def should_compact(tokens: int, context_window: int, reserve_tokens: int, enabled: bool = True) -> bool:
    """Pi's threshold rule (strict): contextTokens > contextWindow − reserveTokens."""
    return enabled and tokens > context_window - reserve_tokens
