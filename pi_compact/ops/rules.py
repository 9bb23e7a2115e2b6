"""Standing instructions users repeat across a project's sessions, as suggestions for the project's AGENTS.md.

``find_rules(cwd, all_=False)`` reads every session of a project (Pi's session directory for ``cwd``, or every
project with ``all_``), takes each user sentence that ``checkpoint.standing.classify`` calls a rule, constraint,
preference or value (and not a request for the work at hand), and groups the sentences that say the same thing in
other words: each is reduced to a set of stemmed content words (``instruction_text.instruction_key``), and two
sentences join a group when those sets are near-duplicates (``instruction_text.similarity`` at least the
threshold, ``MATCH_THRESHOLD`` by default). A group said in at least ``min_sessions`` sessions is a suggestion,
unless an instruction file Pi loads for the project (``checkpoint.context_files``) already states it (the same
test against its lines and sentences, or ``instruction_text.covers``). Suggestions are ranked by the number of
sessions, then by when they were last said. Deterministic; no model.

Only sessions whose header ``cwd`` is the project directory count (``pi.sessions.header_cwd_matches``: absolute,
never ``"."``), and a session directory from the project's own settings only in a project Pi trusts
(``pi.sessions.configured_session_dir``): a cloned repository cannot plant the sessions its rules come from.

``rules_block.write_rules(path, lines)`` appends the chosen lines to the instruction file (``target_file``).

A session that cannot be read is listed in ``RulesReport.unreadable`` with its path and reason, and skipped.
Nothing is ever written to a session.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, NotRequired, TypedDict

from pi_compact.checkpoint.context_files import ContextFile, context_files_for
from pi_compact.checkpoint.verbatim.standing import split_sentences
from pi_compact.errors import PiCompactError, UsageError
from pi_compact.ops.instruction_cues import instructions, normalise
from pi_compact.ops.instruction_text import (
    GENERIC,
    LEADING,
    MATCH_THRESHOLD,
    MIXED,
    NOT,
    covers,
    instruction_key,
    similarity,
)
from pi_compact.ops.rules_block import target_file
from pi_compact.pi.sessions import configured_session_dir, header_cwd_matches, os_reason, search_locations
from pi_compact.pi.settings import agent_dir as default_agent_dir
from pi_compact.pi.settings import expand_path
from pi_compact.session.jsonline import safe_text

KINDS = ("rule", "constraint", "preference", "value")
DEFAULT_MIN_SESSIONS = 2
# An instruction-file line this close to a statement already states it, or one that covers it (``covers``): when in
# doubt, leave a line out rather than suggest what the file says.
KNOWN_THRESHOLD = 0.4
RULE_CHARS = 240


class MentionJSON(TypedDict):
    """``Mention.to_json()``: one statement of an instruction, where and when."""

    session: str
    session_id: str
    entry_id: str
    timestamp: str | None
    text: str


class SuggestionJSON(TypedDict):
    """``Suggestion.to_json()``; ``file`` and ``line`` only for one an instruction file already states."""

    text: str
    kind: str
    sessions: int
    mentions: int
    first_said: str | None
    last_said: str | None
    said: list[MentionJSON]
    file: NotRequired[str]
    line: NotRequired[str]
    why: NotRequired[str]


class UnreadableJSON(TypedDict):
    path: str
    reason: str


class RulesReportJSON(TypedDict):
    """``RulesReport.to_json()``: what ``rules --json`` prints of the report."""

    cwd: str | None
    all: bool
    min_sessions: int
    sessions_read: int
    unreadable: list[UnreadableJSON]
    context_files: list[str]
    target: str | None
    suggestions: list[SuggestionJSON]
    known: list[SuggestionJSON]
    dismissed: list[SuggestionJSON]


@dataclass(frozen=True, slots=True)
class Mention:
    """One statement of an instruction: the session file and id, the user entry, when, and the sentence."""

    path: str
    session_id: str
    entry_id: str
    timestamp: str | None
    text: str

    def to_json(self) -> MentionJSON:
        return {
            "session": safe_text(self.path),
            "session_id": safe_text(self.session_id),
            "entry_id": safe_text(self.entry_id),
            "timestamp": self.timestamp,
            "text": safe_text(self.text),
        }


@dataclass(frozen=True, slots=True)
class Suggestion:
    """An instruction said in several sessions: the line to suggest, its kind, every statement, oldest first;
    ``known_in``: the instruction file that already states it (then it is left out of the suggestions)."""

    text: str
    kind: str
    mentions: tuple[Mention, ...]
    known_in: str | None = None
    known_line: str | None = None
    dismissed: str | None = None  # why it is not suggested again: "refused", "deleted from the block"

    @property
    def sessions(self) -> int:
        return len({m.path for m in self.mentions})

    @property
    def last_said(self) -> str | None:
        stamps = [m.timestamp for m in self.mentions if m.timestamp]
        return max(stamps) if stamps else None

    @property
    def first_said(self) -> str | None:
        stamps = [m.timestamp for m in self.mentions if m.timestamp]
        return min(stamps) if stamps else None

    def to_json(self) -> SuggestionJSON:
        doc: SuggestionJSON = {
            "text": safe_text(self.text),
            "kind": self.kind,
            "sessions": self.sessions,
            "mentions": len(self.mentions),
            "first_said": self.first_said,
            "last_said": self.last_said,
            "said": [m.to_json() for m in self.mentions],
        }
        if self.known_in is not None:
            doc["file"] = safe_text(self.known_in)
        if self.known_line is not None:
            doc["line"] = safe_text(self.known_line)
        if self.dismissed is not None:
            doc["why"] = self.dismissed
        return doc


@dataclass(frozen=True)
class RulesReport:
    """What ``picompact rules`` shows: the suggestions ranked, those left out because an instruction file Pi loads
    already states them, the sessions read and those that could not be (path, reason)."""

    cwd: str | None
    all_projects: bool
    min_sessions: int
    sessions_read: int
    suggestions: list[Suggestion]
    known: list[Suggestion]
    context_files: list[str]
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    target: str | None = None  # the instruction file --write appends to (None with --all)
    dismissed: list[Suggestion] = field(default_factory=list)  # refused before, or deleted from the block

    def to_json(self) -> RulesReportJSON:
        return {
            "cwd": safe_text(self.cwd) if self.cwd is not None else None,
            "all": self.all_projects,
            "min_sessions": self.min_sessions,
            "sessions_read": self.sessions_read,
            "unreadable": [{"path": safe_text(p), "reason": r} for p, r in self.unreadable],
            "context_files": [safe_text(p) for p in self.context_files],
            "target": safe_text(self.target) if self.target is not None else None,
            "suggestions": [s.to_json() for s in self.suggestions],
            "known": [s.to_json() for s in self.known],
            "dismissed": [s.to_json() for s in self.dismissed],
        }


@dataclass(frozen=True, slots=True)
class _Said:
    mention: Mention
    kind: str
    key: frozenset[str]
    order: int


def _session_files(cwd: str, all_: bool, agent: Path) -> tuple[list[Path], str | None, list[tuple[str, str]]]:
    """The ``*.jsonl`` files to read, the header cwd they must have (None: any), and directories not listed."""
    directory, filter_cwd = search_locations(cwd, all_, agent)
    problems: list[tuple[str, str]] = []
    dirs = [directory]
    if all_ and configured_session_dir(cwd, agent_dir=agent) is None:
        try:
            dirs = sorted(Path(e.path) for e in os.scandir(directory) if e.is_dir())
        except FileNotFoundError:
            dirs = []
        except OSError as exc:
            problems.append((str(directory), os_reason(exc)))
            dirs = []
    files: list[Path] = []
    for folder in dirs:
        try:
            names = sorted(e.name for e in os.scandir(folder) if e.name.endswith(".jsonl"))
        except FileNotFoundError:
            continue
        except OSError as exc:
            problems.append((str(folder), os_reason(exc)))
            continue
        files.extend(folder / name for name in names)
    return files, filter_cwd, problems


def _user_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")


def _timestamp(entry_raw: dict[str, Any], message: dict[str, Any]) -> str | None:
    stamp = entry_raw.get("timestamp")
    if isinstance(stamp, str) and stamp:
        return stamp
    ms = message.get("timestamp")
    if isinstance(ms, (int, float)) and not isinstance(ms, bool):
        try:
            return datetime.fromtimestamp(ms / 1000, tz=UTC).isoformat().replace("+00:00", "Z")
        except (OverflowError, OSError, ValueError):
            return None
    return None


def statements(path: Path, session_id: str, user_messages: Iterable[tuple[str, str | None, str]]) -> Iterator[_Said]:
    """The standing instructions of one session's user messages ((entry id, timestamp, text), in file order)."""
    for entry_id, stamp, text in user_messages:
        for sentence, kind in instructions(text):
            key = instruction_key(sentence)
            if not key - GENERIC - {MIXED}:
                continue
            yield _Said(Mention(str(path), session_id, entry_id, stamp, sentence), kind, key, 0)


def _read_session(path: Path, filter_cwd: str | None) -> tuple[str, str, list[tuple[str, str | None, str]]] | None:
    """(session id, cwd, user messages) of a session; None when it belongs to another project. Raises
    PiCompactError when the file cannot be read as a session."""
    from pi_compact.session.load import load_session

    session = load_session(path)
    if filter_cwd is not None and not header_cwd_matches(session.cwd, filter_cwd):
        return None
    messages = []
    for entry in session.entries:
        if entry.role != "user" or not entry.id:
            continue
        message = entry.message
        if message is None:
            continue
        text = _user_text(message)
        if text.strip():
            messages.append((entry.id, _timestamp(entry.raw, message), text))
        entry.forget()
    return session.session_id, session.cwd, messages


# How many statements of one group a bucket keeps to compare a new statement with (``_group``): enough that a
# statement similar to a group is similar to one of them, few enough that a group of thousands costs no more.
_GROUP_SAMPLE = 32
_EPSILON = 1e-9


def _group(said: Sequence[_Said], threshold: float) -> list[list[_Said]]:
    """Statements grouped by single link: two statements similar enough are in the same group, and so are the
    statements similar to either (groups in the order of their first statement, each oldest first).

    Near-linear work, not all pairs (the similarity is the Jaccard index of the words, ``similarity``):
    statements with the same key are one group at once; two keys similar enough share a word among the rarest
    ``len - ceil(threshold * len) + 1`` of each (prefix filtering), where the words after it leave room for
    enough shared ones (positional filtering), so only those are compared; never with a group the statement is
    already in; and with at most ``_GROUP_SAMPLE`` keys of a group (thousands of variations of one sentence cost
    a new one a comparison or two). A one-word statement joins only its closest match, as before."""
    from collections import Counter

    parent = list(range(len(said)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    def join(i: int, j: int) -> None:
        a, b = root(i), root(j)
        if a != b:
            parent[max(a, b)] = min(a, b)

    marks = {NOT, MIXED}
    first: dict[frozenset[str], int] = {}
    for i, item in enumerate(said):
        first.setdefault(item.key, i)
    frequency = Counter(token for key in first for token in key - marks)
    # token -> (its place among the key's words, the key's length) -> group (when added) -> some of its keys
    buckets: dict[str, dict[tuple[int, int], dict[int, list[int]]]] = {}
    small = math.floor(1 / threshold + _EPSILON) if threshold > 0 else len(said) + 1
    containing: dict[str, list[int]] = {}  # token -> the keys of at most ``small`` words holding it (one-word rule)
    for i, item in enumerate(said):
        words = sorted(item.key - marks, key=lambda t: (frequency[t], t))
        size = len(words)
        if size <= 1:
            _one_word(i, item.key, said, first, containing, threshold, join)
        elif first[item.key] != i:
            join(i, first[item.key])
            continue
        else:
            prefix = max(1, size - math.ceil(threshold * size - _EPSILON) + 1)
            for place, token in enumerate(words[:prefix]):
                for (other_place, other_size), groups in buckets.get(token, {}).items():
                    if not _may_reach(threshold, size, place, other_size, other_place):
                        continue
                    for group, members in list(groups.items()):
                        now = root(group)
                        if now != group:  # groups joined since: one list, still a sample
                            del groups[group]
                            kept = groups.setdefault(now, [])
                            kept.extend(members[: max(0, _GROUP_SAMPLE - len(kept))])
                    for group, members in list(groups.items()):
                        if root(group) == root(i):
                            continue
                        for j in members:
                            if similarity(item.key, said[j].key) >= threshold:
                                join(i, j)
                                break
        if first[item.key] != i:
            continue
        prefix = max(1, size - math.ceil(threshold * size - _EPSILON) + 1)
        for place, token in enumerate(words[:prefix]):
            members = buckets.setdefault(token, {}).setdefault((place, size), {}).setdefault(root(i), [])
            if len(members) < _GROUP_SAMPLE:
                members.append(i)
        if size <= small:
            for token in words:
                containing.setdefault(token, []).append(i)
    groups_of: dict[int, list[_Said]] = {}
    for i, item in enumerate(said):
        groups_of.setdefault(root(i), []).append(item)
    return list(groups_of.values())


def _may_reach(threshold: float, size: int, place: int, other_size: int, other_place: int) -> bool:
    """Whether two keys of these lengths, whose first shared word (in the words' order) is at these places, can
    share enough words to be ``threshold`` similar: the length filter and the positional filter of PPJoin."""
    if other_size < threshold * size - _EPSILON or other_size * threshold > size + _EPSILON:
        return False
    need = math.ceil(threshold / (1 + threshold) * (size + other_size) - _EPSILON)
    return 1 + min(size - place - 1, other_size - other_place - 1) >= need


def _one_word(
    i: int,
    key: frozenset[str],
    said: Sequence[_Said],
    first: dict[frozenset[str], int],
    containing: dict[str, list[int]],
    threshold: float,
    join: Callable[[int, int], None],
) -> None:
    """A statement of one word ("hands off .env") matches too much to join two groups: it joins only its closest
    earlier statement (the highest similarity, then the oldest). Every key it can reach holds its word and has at
    most ``1 / threshold`` words (``containing``); a key said before needs only the keys of that one word (with
    or without a negation: similarity 1), which its own first statement is one of."""
    word = next(iter(key - {NOT, MIXED}))
    if first[key] != i and similarity(key, key) >= 1.0 - _EPSILON:
        variants = (frozenset({word, *marks}) for marks in ((), (NOT,), (MIXED,), (NOT, MIXED)))
        exact = [first[v] for v in variants if first.get(v, i) < i and similarity(key, v) >= 1.0 - _EPSILON]
        join(i, min(exact))
        return
    best: tuple[float, int] | None = None
    for j in containing.get(word, ()):
        score = similarity(key, said[j].key)
        if score >= threshold and (best is None or (score, -j) > (best[0], -best[1])):
            best = (score, j)
    if best is not None:
        join(i, best[1])


def _display(text: str) -> str:
    """The line to suggest: the sentence without its leading discourse words, capitalised, ending with a stop."""
    line = LEADING.sub("", " ".join(text.split()))
    line = _ASIDE.sub("", line).strip(" -*>#")
    if not line:
        line = text.strip()
    line = line[:1].upper() + line[1:]
    if line and line[-1] not in ".!)`\"'":
        line += "."
    return line if len(line) <= RULE_CHARS else line[: RULE_CHARS - 1].rstrip() + "…"


_ASIDE = re.compile(r"\s+\b(?:btw|fyi|pls|plz|please|lol)\b(?=[\s,.!;:]|$)", re.IGNORECASE)


def _representative(group: Sequence[_Said]) -> _Said:
    """The statement said most often in the same words (then the latest): the wording the user settled on."""
    counts: dict[frozenset[str], int] = {}
    for item in group:
        counts[item.key] = counts.get(item.key, 0) + 1
    return max(group, key=lambda s: (counts[s.key], s.mention.timestamp or "", s.order))


def _kind(group: Sequence[_Said]) -> str:
    counts: dict[str, int] = {}
    for item in group:
        counts[item.kind] = counts.get(item.kind, 0) + 1
    return max(KINDS, key=lambda k: (counts.get(k, 0), -KINDS.index(k)))


def normal_text(text: str) -> str:
    """A sentence as compared word for word: misspellings written out, case, punctuation, markup and leading
    discourse words dropped."""
    words = _NORMAL_WORD.findall(LEADING.sub("", normalise(" ".join(text.split()))).casefold())
    return " ".join(words)


_NORMAL_WORD = re.compile(r"[^\W_]+")


def context_lines(files: Sequence[ContextFile]) -> list[tuple[str, str, frozenset[str]]]:
    """(file, line or sentence, key) of everything the instruction files say, bullets and sentences alike."""
    out = []
    for item in files:
        for raw in item.content.splitlines():
            line = raw.strip().lstrip("-*+>#0123456789.) ").strip()
            if not line or line.startswith("<!--"):
                continue
            pieces = {line, *split_sentences(line)}
            for piece in sorted(pieces):
                key = instruction_key(piece)
                if key:
                    out.append((item.path, piece, key))
    return out


def _known(
    group: Sequence[_Said], lines: Sequence[tuple[str, str, frozenset[str]]], threshold: float
) -> tuple[str, str] | None:
    """The first instruction-file line that states what one of the group's statements says: the same words once
    normalised (``normal_text``), a near-duplicate key or one it covers (each key once: a group of thousands of
    repetitions costs what one does)."""
    by_text = {normal_text(line): (path, line) for path, line, _ in lines}
    for text in dict.fromkeys(normal_text(item.mention.text) for item in group):
        if text in by_text:
            return by_text[text]
    for item_key in dict.fromkeys(item.key for item in group):
        for path, line, key in lines:
            if similarity(item_key, key) >= threshold or covers(key, item_key):
                return path, line
    return None


def find_rules(
    cwd: str | os.PathLike[str] | None = None,
    *,
    all_: bool = False,
    min_sessions: int = DEFAULT_MIN_SESSIONS,
    agent_dir: str | os.PathLike[str] | None = None,
    threshold: float = MATCH_THRESHOLD,
    known_threshold: float | None = None,
    refused: Sequence[str] = (),
    written: Sequence[str] = (),
) -> RulesReport:
    """The standing instructions said in at least ``min_sessions`` sessions of the project at ``cwd`` (default:
    the current directory; ``all_``: every project), ranked, without those its instruction files already state,
    and without those that state a line the user ``refused`` or one ``written`` before that is no longer in the
    file (``rules_memory``: the user deleted it from the block), listed in ``RulesReport.dismissed``."""
    if min_sessions < 1:
        raise UsageError(f"--min-sessions must be at least 1 (got {min_sessions})")
    where = os.getcwd() if cwd is None else os.fspath(cwd)
    agent = Path(expand_path(os.fspath(agent_dir))) if agent_dir is not None else default_agent_dir()
    files, filter_cwd, unreadable = _session_files(where, all_, agent)
    if not all_:
        # Only the project's own sessions, in Pi's default folder too (its name is shared by /a-b and /a/b): what
        # they say is written into the project's instruction file.
        filter_cwd = expand_path(where)
    said: list[_Said] = []
    cwds: set[str] = set()
    read = 0
    for path in files:
        try:
            found = _read_session(path, filter_cwd)
        except PiCompactError as exc:
            unreadable.append((str(path), exc.message))
            continue
        if found is None:
            continue
        session_id, session_cwd, messages = found
        read += 1
        if session_cwd:
            cwds.add(session_cwd)
        said.extend(statements(path, session_id, messages))
    said.sort(key=lambda s: (s.mention.timestamp or "", s.mention.path, s.mention.entry_id))
    said = [_Said(s.mention, s.kind, s.key, n) for n, s in enumerate(said)]
    context = context_files_for(where, agent) if not all_ else _context_for_all(sorted(cwds), agent)
    lines = context_lines(context)
    decided = [("", line, instruction_key(line)) for line in (*refused, *written)]
    why = {line: "refused" for line in refused}
    suggestions: list[Suggestion] = []
    known: list[Suggestion] = []
    dismissed: list[Suggestion] = []
    for group in _group(said, threshold):
        if len({s.mention.path for s in group}) < min_sessions:
            continue
        mentions = tuple(s.mention for s in group)
        suggestion = Suggestion(_display(_representative(group).mention.text), _kind(group), mentions)
        limit = KNOWN_THRESHOLD if known_threshold is None else known_threshold
        hit = _known(group, lines, limit)
        if hit is not None:
            known.append(Suggestion(suggestion.text, suggestion.kind, mentions, hit[0], hit[1]))
            continue
        decision = _known(group, decided, limit) if decided else None
        if decision is not None:
            reason = why.get(decision[1], "deleted from the block")
            dismissed.append(Suggestion(suggestion.text, suggestion.kind, mentions, None, decision[1], reason))
            continue
        suggestions.append(suggestion)
    rank = lambda s: (-s.sessions, _neg(s.last_said), -len(s.mentions), s.text)  # noqa: E731
    suggestions.sort(key=rank)
    known.sort(key=rank)
    dismissed.sort(key=rank)
    return RulesReport(
        cwd=None if all_ else where,
        all_projects=all_,
        min_sessions=min_sessions,
        sessions_read=read,
        suggestions=suggestions,
        known=known,
        context_files=[c.path for c in context],
        unreadable=unreadable,
        target=None if all_ else target_file(where),
        dismissed=dismissed,
    )


def _neg(stamp: str | None) -> tuple[int, ...]:
    """A sort key that puts later timestamps first (ISO 8601 strings compare in time order)."""
    return tuple(-ord(c) for c in stamp or "")


def _context_for_all(cwds: Sequence[str], agent: Path) -> list[ContextFile]:
    """The instruction files Pi loads for any of these directories, each once."""
    seen: dict[str, ContextFile] = {}
    for cwd in cwds:
        for item in context_files_for(cwd, agent):
            seen.setdefault(item.path, item)
    return list(seen.values())
