"""Retained startup reads: instruction-named read outputs a checkpoint keeps verbatim.

``select_startup_reads(plan, previous_state, context_files, cwd)`` returns ``(reads, state)``:

- Candidates are the successful, text-only ``read`` call/result pairs on the raw branch between the first and the
  second user message (custom messages, shell runs and summaries do not close that interval; later reads are
  ignored). Nested calls and shell reads never qualify.
- A candidate qualifies when its path or bare file name occurs literally in an instruction source: the given
  ``context_files`` (when there are none, the project-instruction blocks of the session's recorded system prompt),
  or an AGENTS/CLAUDE file read successfully during the interval. A reference may be absolute, relative to cwd,
  relative to the instruction file, or a bare basename (which can select several files); a name that is only part
  of a longer one (``a.md`` inside ``data.md`` or ``docs/a.md``) does not count.
- Failed, ambiguous (call id not unique) and non-text (image) results are excluded. Context edits on the branch are
  respected: an omitted result or call is not selectable, and neither is a replaced one, since its text is no longer
  the tool's output and keeping the original would undo the edit.
- A read still in the kept tail (``plan.kept_entries()``) is not taken yet: the model still sees it there. It
  enters once the cut has passed it, and only once.

The state is a JSON-serialisable dict for the compaction entry's ``details``. While any part of the startup
interval is uncompacted (no second user message yet, or it is still in the tail) the state is ``open`` and the next
compaction rescans and adds; once closed it is carried forward unchanged. Without a previous state (first
checkpoint, or an older one without it) the selection starts from the raw branch.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from itertools import compress, islice, repeat
from operator import attrgetter, eq
from typing import Any, NamedTuple

from pi_compact.checkpoint.context_files import (
    CONTEXT_FILE_NAMES,
    ContextFile,
    context_files_from_session,
    load_context_file,
)
from pi_compact.checkpoint.readtool import (
    ReadArgs,
    is_windows_key,
    key_basename,
    key_dirname,
    parse_read_result,
    read_args,
    resolve_path,
    tool_call_blocks,
)
from pi_compact.checkpoint.readtool import (
    display_path as make_display_path,
)
from pi_compact.pi.messages import entry_messages
from pi_compact.pi.plan import CompactionPlan
from pi_compact.session.entries import Entry, JsonDict

STATE_VERSION = 1
_TYPE = attrgetter("type")

# Characters that cannot be part of a path mention: whitespace, quotes, brackets, markup and list punctuation.
PATH_TOKEN = re.compile(r"[^\s\"'`()\[\]{}<>,;|*=\u201c\u201d\u2018\u2019\u00ab\u00bb]+")
TRAILING_PUNCTUATION = ".:,;!?"
INSTRUCTION_NAMES_FOLDED = frozenset(n.lower() for n in CONTEXT_FILE_NAMES)
LINE_SUFFIX = re.compile(r":\d+(?::\d+)?\Z")


class RetainedRead(NamedTuple):
    """One startup read kept verbatim. ``entry_id`` is the tool result entry (for ``show``); ``text`` is the output
    exactly as recorded, its pagination notice (also in ``notice``) included; ``complete`` says the read showed
    the whole file by Pi's read contract."""

    entry_id: str
    tool_call_id: str
    path: str
    display_path: str
    offset: Any
    limit: Any
    text: str
    notice: str | None = None
    complete: bool = False

    def to_json(self) -> JsonDict:
        return {
            "entryId": self.entry_id,
            "toolCallId": self.tool_call_id,
            "path": self.path,
            "displayPath": self.display_path,
            "offset": self.offset,
            "limit": self.limit,
            "text": self.text,
            "notice": self.notice,
            "complete": self.complete,
        }

    @classmethod
    def from_json(cls, data: JsonDict) -> RetainedRead:
        return cls(
            entry_id=str(data["entryId"]),
            tool_call_id=str(data["toolCallId"]),
            path=str(data["path"]),
            display_path=str(data.get("displayPath") or data["path"]),
            offset=data.get("offset"),
            limit=data.get("limit"),
            text=str(data.get("text", "")),
            notice=data.get("notice") if isinstance(data.get("notice"), str) else None,
            complete=data.get("complete") is True,
        )

    @property
    def key(self) -> tuple[str, str]:
        return self.entry_id, self.tool_call_id


def make_state(reads: Sequence[RetainedRead], open_: bool) -> JsonDict:
    """The selection as stored in a compaction entry's ``details``."""
    return {"version": STATE_VERSION, "open": open_, "reads": [r.to_json() for r in reads]}


def parse_state(state: Any) -> tuple[list[RetainedRead], bool] | None:
    """(reads, open) from a stored state, or None when there is none usable."""
    if not isinstance(state, dict) or state.get("version") != STATE_VERSION or not isinstance(state.get("reads"), list):
        return None
    try:
        reads = [RetainedRead.from_json(r) for r in state["reads"] if isinstance(r, dict)]
    except (KeyError, TypeError):
        return None
    return reads, state.get("open") is not False


# ---------------------------------------------------------------------------------------------------- matching


def _variants(token: str) -> Iterable[str]:
    """The spellings a path mention may stand for: as written, without ``@``/``file://``/anchor/line/punctuation."""
    seen: set[str] = set()
    text = token
    for prefix in ("file://", "@"):
        text = text.removeprefix(prefix)
    candidates = [text]
    if "#" in text:
        candidates.append(text.split("#", 1)[0])
    for base in list(candidates):
        stripped = base.rstrip(TRAILING_PUNCTUATION)
        stripped = LINE_SUFFIX.sub("", stripped).rstrip(TRAILING_PUNCTUATION)
        candidates.append(stripped)
        for word in (base, stripped):  # _emphasis_ in Markdown
            if len(word) > 2 and word[0] == word[-1] == "_" and word[1] != "_":
                candidates.append(word[1:-1])
    for candidate in candidates:
        if candidate and candidate not in seen and not candidate.endswith("/"):
            seen.add(candidate)
            yield candidate


class _Mention(NamedTuple):
    """One path-like token of an instruction text: where it is, and the files it can name."""

    start: int
    bare: frozenset[str]  # spellings without a slash: compared with basenames
    resolved: frozenset[str]  # spellings with a slash, resolved against cwd and the instruction file's directory

    def names(self, key: str, name: str, fold: bool) -> bool:
        if key in self.resolved:
            return True
        return name in ({b.lower() for b in self.bare} if fold else self.bare)


class _Source(NamedTuple):
    """One instruction text (a context file, or an AGENTS/CLAUDE file read in the interval) and its mentions."""

    text: str
    directory: str | None
    mentions: list[_Mention]

    @classmethod
    def build(cls, path: str | None, text: str, cwd: str) -> _Source:
        directory = key_dirname(resolve_path(path, cwd)) if path else None
        mentions: list[_Mention] = []
        for match in PATH_TOKEN.finditer(text):
            bare: set[str] = set()
            resolved: set[str] = set()
            for variant in _variants(match.group()):
                if "/" not in variant and "\\" not in variant:
                    bare.add(variant)
                    continue
                resolved.add(resolve_path(variant, cwd))
                if directory is not None and not variant.startswith(("/", "~")):
                    resolved.add(resolve_path(variant, directory))
            if bare or resolved:
                mentions.append(_Mention(match.start(), frozenset(bare), frozenset(resolved)))
        return cls(text, directory, mentions)

    def names(self, key: str, cwd: str, longer: Sequence[str] = ()) -> bool:
        """Whether the text names the file ``key``. ``longer``: names with spaces of other files, whose last word
        is not a mention of its own (``Notes.md`` inside ``Design Notes.md``)."""
        name = key_basename(key)
        fold = is_windows_key(key)
        for mention in self.mentions:
            if not mention.names(key, name, fold):
                continue
            if not any(self._inside(mention.start, other) for other in longer):
                return True
        if any(ch.isspace() for ch in key):  # a name with spaces is never one token: look for it literally
            forms = {key, name, make_display_path(key, cwd)}
            if self.directory is not None:
                forms.add(make_display_path(key, self.directory))
            return any(_literal_mention(self.text, form, fold) for form in forms)
        return False

    def _inside(self, start: int, longer: str) -> bool:
        """The token at ``start`` is the end of ``longer`` as written in the text."""
        for split in range(1, len(longer)):
            if longer[split - 1].isspace() and self.text.startswith(longer[split:], start):
                prefix = longer[:split]
                return self.text[max(0, start - len(prefix)) : start] == prefix
        return False


def _literal_mention(text: str, form: str, fold: bool = False) -> bool:
    """``form`` occurs in ``text`` not as part of a longer name or path (``./form`` is fine)."""
    for match in re.finditer(re.escape(form), text, re.IGNORECASE if fold else 0):
        start = match.start()
        if start >= 2 and text[start - 2 : start] == "./":
            start -= 2
        before = text[start - 1] if start > 0 else " "
        after = text[match.end()] if match.end() < len(text) else " "
        after_next = text[match.end() + 1] if match.end() + 1 < len(text) else " "
        if before.isalnum() or before in "_-.~/":
            continue
        if after.isalnum() or after in "_-/" or (after == "." and (after_next.isalnum() or after_next in "_-")):
            continue
        return True
    return False


# ---------------------------------------------------------------------------------------------------- branch scan


def startup_interval(entries: Sequence[Entry]) -> tuple[int, int, bool] | None:
    """(first user position, end position, closed) on the branch; None before any user message."""
    users = list(islice((i for i, e in enumerate(entries) if e.role == "user"), 2))  # the first two are enough
    if not users:
        return None
    if len(users) == 1:
        return users[0], len(entries), False
    return users[0], users[1], True


def _latest_edits(entries: Sequence[Entry]) -> dict[str, Entry]:
    edits: dict[str, Entry] = {}
    # the type alone first, compared in C: the branch is long
    for entry in compress(entries, map(eq, map(_TYPE, entries), repeat("context_edit"))):
        if isinstance(entry.raw.get("targetId"), str):
            edits[entry.raw["targetId"]] = entry
    return edits


class _Candidate(NamedTuple):
    position: int  # of the result entry on the branch
    result: Entry
    call: JsonDict
    args: ReadArgs
    key: str  # resolved path


def _interval_reads(entries: Sequence[Entry], start: int, end: int, cwd: str) -> list[tuple[_Candidate, Any]]:
    """Unambiguous, unedited read pairs in the interval with their judged output (failed ones included)."""
    edits = _latest_edits(entries)
    calls: dict[str, list[tuple[int, JsonDict]]] = {}
    results: dict[str, list[tuple[int, Entry, JsonDict]]] = {}
    for position in range(start, end):
        entry = entries[position]
        for message in entry_messages(entry):
            for _, block in tool_call_blocks(message):
                if isinstance(block.get("id"), str):
                    calls.setdefault(block["id"], []).append((position, block))
            if message.get("role") == "toolResult" and isinstance(message.get("toolCallId"), str):
                results.setdefault(message["toolCallId"], []).append((position, entry, message))
    out: list[tuple[_Candidate, Any]] = []
    for call_id, found in calls.items():
        paired = results.get(call_id, [])
        if len(found) != 1 or len(paired) != 1:
            continue
        (call_position, block), (result_position, result_entry, message) = found[0], paired[0]
        if block.get("name") != "read" or result_position < call_position:
            continue
        if message.get("toolName") not in (None, "read"):
            continue
        args = read_args(block.get("arguments"))
        if args is None or entries[call_position].id in edits or result_entry.id in edits:
            continue
        candidate = _Candidate(result_position, result_entry, block, args, resolve_path(args.path, cwd))
        out.append((candidate, parse_read_result(args, message)))
    out.sort(key=lambda item: (item[0].position, str(item[0].call.get("id"))))
    return out


def _sources(
    entries: Sequence[Entry],
    end: int,
    context_files: Sequence[ContextFile | str | os.PathLike[str]],
    reads: list[tuple[_Candidate, Any]],
    cwd: str,
    session_fallback: bool,
) -> list[_Source]:
    """Instruction texts: the context files (or the recorded system prompt's), then AGENTS/CLAUDE files read."""
    files: list[ContextFile] = []
    for item in context_files:
        loaded = item if isinstance(item, ContextFile) else load_context_file(item)
        if loaded is not None:
            files.append(loaded)
    if not files and session_fallback:
        files = context_files_from_session(entries[:end])
    sources = [_Source.build(f.path, f.content, cwd) for f in files]
    for candidate, output in reads:
        name = key_basename(candidate.key)
        names = INSTRUCTION_NAMES_FOLDED if is_windows_key(candidate.key) else CONTEXT_FILE_NAMES
        if output.ok and name in names:
            sources.append(_Source.build(candidate.key, output.body, cwd))
    return sources


def _qualifying(
    entries: Sequence[Entry],
    interval: tuple[int, int, bool],
    context_files: Sequence[ContextFile | str | os.PathLike[str]],
    cwd: str,
    session_fallback: bool,
) -> list[tuple[_Candidate, Any]]:
    """The successful reads of the startup interval that an instruction source names, in branch order."""
    first_user, end, _ = interval
    reads = _interval_reads(entries, first_user + 1, end, cwd)
    sources = _sources(entries, end, context_files, reads, cwd, session_fallback)
    spaced = {
        form
        for candidate, output in reads
        if output.ok
        for form in (key_basename(candidate.key), make_display_path(candidate.key, cwd))
        if any(ch.isspace() for ch in form)
    }
    out: list[tuple[_Candidate, Any]] = []
    for candidate, output in reads:
        if not output.ok:
            continue
        own = {key_basename(candidate.key), make_display_path(candidate.key, cwd)}
        longer = sorted(spaced - own)
        if any(source.names(candidate.key, cwd, longer) for source in sources):
            out.append((candidate, output))
    return out


def startup_read_ids(
    entries: Sequence[Entry],
    context_files: Sequence[ContextFile | str | os.PathLike[str]],
    cwd: str,
    *,
    session_fallback: bool = True,
) -> set[str]:
    """The ids of the tool results a checkpoint would retain as startup reads on this branch, wherever the cut
    falls (what ``select_startup_reads`` takes once the cut has passed them); empty before any user message."""
    interval = startup_interval(entries)
    if interval is None:
        return set()
    return {
        candidate.result.id for candidate, _ in _qualifying(entries, interval, context_files, cwd, session_fallback)
    }


def select_startup_reads(
    plan: CompactionPlan,
    previous_state: JsonDict | None,
    context_files: Sequence[ContextFile | str | os.PathLike[str]],
    cwd: str,
    *,
    session_fallback: bool = True,
) -> tuple[list[RetainedRead], JsonDict]:
    """The startup reads this checkpoint retains, and the state to store with it (see the module docstring).

    ``context_files`` normally comes from ``context_files_for``; a plain path in it is read as a user-given file.
    ``session_fallback=False`` turns off the recorded system prompt as a source when ``context_files`` is empty.
    """
    previous = parse_state(previous_state)
    kept: list[RetainedRead] = previous[0] if previous is not None else []
    if previous is not None and not previous[1]:
        return list(kept), make_state(kept, False)
    entries = plan.projection.branch.entries
    interval = startup_interval(entries)
    if interval is None:
        return list(kept), make_state(kept, True)
    first_user, end, second_user_exists = interval
    tail = {id(pe.entry) for pe in plan.kept_entries()}
    have = {r.key for r in kept}
    added: list[RetainedRead] = []
    for candidate, output in _qualifying(entries, interval, context_files, cwd, session_fallback):
        call_id = str(candidate.call.get("id"))
        if (candidate.result.id, call_id) in have or id(candidate.result) in tail:
            continue
        added.append(
            RetainedRead(
                entry_id=candidate.result.id,
                tool_call_id=call_id,
                path=candidate.args.path,
                display_path=make_display_path(candidate.args.path, cwd),
                offset=candidate.args.offset,
                limit=candidate.args.limit,
                text=output.text,
                notice=output.notice,
                complete=output.completeness == "full",
            )
        )
        have.add((candidate.result.id, call_id))
    interval_in_tail = any(id(entries[i]) in tail for i in range(first_user + 1, end))
    closed = second_user_exists and not interval_in_tail
    selected = kept + added
    return selected, make_state(selected, not closed)
