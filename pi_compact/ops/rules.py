"""Standing instructions users repeat across a project's sessions, as suggestions for the project's AGENTS.md.

``find_rules(cwd, all_=False)`` reads every session of a project (Pi's session directory for ``cwd``, or every
project with ``all_``), takes each user sentence that ``checkpoint.standing.classify`` calls a rule, constraint,
preference or value, and groups the sentences that say the same thing in other words: each is reduced to a set of
stemmed content words (``instruction_key``: case, punctuation, leading discourse words such as "btw" or "remember",
reasons after a comma and common words dropped; negations as one token; a few synonyms of coding instructions
folded, "touch / modify / edit", "lives in / goes in / belongs in"), and two sentences are the same instruction when
those sets are near-duplicates (``same_instruction``: a token-set Jaccard of at least ``MATCH_THRESHOLD``, the same
polarity, and one shared word that is not a generic verb or noun). A group said in at least ``min_sessions``
sessions is a suggestion, unless an instruction file Pi loads for the project (``checkpoint.context_files``)
already states it (the same test against its lines and sentences). Suggestions are ranked by the number of
sessions, then by when they were last said. Deterministic; no model.

``write_rules(path, lines)`` appends lines to an instruction file inside a marked block (``BLOCK_BEGIN`` …
``BLOCK_END``), never touching the text around it; the file is replaced atomically and keeps its mode.

A session that cannot be read is listed in ``RulesReport.unreadable`` with its path and reason, and skipped.
Nothing is ever written to a session.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pi_compact.checkpoint.context_files import CONTEXT_FILE_NAMES, ContextFile, context_files_for
from pi_compact.checkpoint.verbatim.standing import classify, split_sentences
from pi_compact.errors import ConcurrentWriteError, PiCompactError, UsageError
from pi_compact.pi.sessions import configured_session_dir, search_locations
from pi_compact.pi.settings import agent_dir as default_agent_dir
from pi_compact.pi.settings import expand_path
from pi_compact.session.jsonline import safe_text

KINDS = ("rule", "constraint", "preference", "value")
DEFAULT_MIN_SESSIONS = 2
# Measured on bench/rules_trees.py (bench/RESULTS.md, "Repeated rules"): from 0.3 to 0.5 precision stays above
# 0.96 (the gates in ``similarity`` keep different instructions apart); above 0.5 paraphrases split into several
# suggestions of the same rule, which costs precision and recall alike. 0.4 was best on both.
MATCH_THRESHOLD = 0.4
# An instruction-file line this close to a statement already states it, or one that covers it (``covers``): when in
# doubt, leave a line out rather than suggest what the file says.
KNOWN_THRESHOLD = 0.4
COVER_SHARE = 0.6
BLOCK_BEGIN = "<!-- picompact rules: begin -->"
BLOCK_END = "<!-- picompact rules: end -->"
RULE_CHARS = 240

# --------------------------------------------------------------------------- the key of an instruction

_LEADING = re.compile(
    r"^(?:(?:ok(?:ay)?|alright|so|now|and|also|oh|wait|btw|by the way|note|nb|ps|p\.s\.|heads[- ]up|reminder|"
    r"remember(?: that| to)?|as always|again|as i said(?: before)?|like i said|as usual|one more thing|one rule|"
    r"rule|fyi|for reference|for the record|before i forget|quick note|important|please|pls|just|"
    r"actually|and again|once more)\b[\s,:;.!-]*)+",
    re.IGNORECASE,
)
# A reason or an aside after the instruction ("…, it holds the live credentials", "… because CI runs it").
_REASON = re.compile(
    r"(?:,|\s[-–—]|\s\()\s*(?:it|that|this|they|those|these|since|because|as|so|which|otherwise|or else|"
    r"the \w+ (?:is|are|has|have|holds?|runs?|breaks?))\b.*$"
    r"|\s+(?:because|since|otherwise|so that|or else)\b.*$",
    re.IGNORECASE,
)
# "X, not Y", "X instead of Y": the contrast is part of the instruction, but not a negation of it.
_CONTRAST = re.compile(r",\s*(?:and\s+)?(?:not|never)\b|\b(?:instead of|rather than|in place of|over)\b", re.IGNORECASE)
# "Never use print, use logging": a negation with the positive alternative after it.
_ALTERNATIVE = re.compile(r"[,;:]\s*(?:but\s+|just\s+|always\s+)?(?:use|prefer|go with|open|do|run|put|ask)\b")
_HANDS_OFF = re.compile(r"\bhands off\b", re.IGNORECASE)
_LEAVE_ALONE = re.compile(r"\bleave\s+(.{1,60}?)\s+alone\b", re.IGNORECASE)
_NEGATION = re.compile(
    r"\b(?:do not|don't|dont|do n't|never|must not|mustn't|must never|should not|shouldn't|should never|"
    r"shall not|cannot|can't|can not|may not|no longer|avoid|not allowed to|not allowed|forbidden|"
    r"under no circumstances|off[- ]limits|hands off|stay away from|refrain from|no|not|nothing|without)\b",
    re.IGNORECASE,
)
NOT = "¬"  # the token every negation becomes
MIXED = "±"  # a negation followed by its positive alternative: compatible with either form
_TOKEN = re.compile(r"[a-z0-9¬]+")
_SYNONYMS = {
    **dict.fromkeys(
        ("touch", "modify", "edit", "change", "alter", "overwrite", "rewrite", "tamper", "mess", "update"), "edit"
    ),
    **dict.fromkeys(("remove", "delete", "drop", "erase", "rm"), "delete"),
    **dict.fromkeys(("add", "create", "introduce", "new"), "add"),
    **dict.fromkeys(("run", "execute", "invoke", "launch"), "run"),
    **dict.fromkeys(("use", "using", "used", "employ", "utilize", "utilise"), "use"),
    **dict.fromkeys(
        (
            "live",
            "lives",
            "go",
            "goes",
            "belong",
            "belongs",
            "put",
            "place",
            "store",
            "stored",
            "located",
            "reside",
            "resides",
            "sit",
            "sits",
            "placed",
        ),
        "loc",
    ),
    **dict.fromkeys(
        ("dependency", "dependencies", "deps", "dep", "package", "packages", "library", "libraries", "lib", "libs"),
        "dep",
    ),
    **dict.fromkeys(("repo", "repository", "codebase"), "repo"),
    **dict.fromkeys(("db", "database"), "db"),
    **dict.fromkeys(("test", "tests", "testing", "tested", "spec", "specs"), "test"),
    **dict.fromkeys(("secret", "secrets", "credential", "credentials", "creds", "password", "passwords"), "secret"),
    **dict.fromkeys(("doc", "docs", "documentation"), "doc"),
    **dict.fromkeys(("config", "configuration", "settings"), "config"),
    **dict.fromkeys(("py", "python"), "python"),
    **dict.fromkeys(("js", "javascript"), "javascript"),
    **dict.fromkeys(("ts", "typescript"), "typescript"),
}
_STOP = frozenset(
    """a an the this that these those it its it's they them their there here we us our you your i me my to of in on
    at by for from with into onto under over about as and or but if then than so is are was were be been being am do
    does did done have has had having will would shall should can could may might must need needs needed ought
    always ever every everything anything any all each whatever whenever wherever also just only still even please
    kindly make sure remember going forward now on from time times moment mind thing things stuff way ways one ones
    file files folder folders directory directories dir dirs path paths code part parts bit bits kind okay ok
    yes yeah really very much more most less least lot lots like want wanted wants let lets let's what which who how
    when where why whether again once twice thanks thank sorry actually basically stay prefer preferred rather
    favor favour keep directly straight right simply through via""".split()  # noqa: SIM905
)
# Tokens too common among coding instructions to make two sentences the same instruction on their own.
_GENERIC = frozenset(
    [
        NOT,
        "edit",
        "delete",
        "add",
        "run",
        "use",
        "loc",
        "test",
        "doc",
        "config",
        "write",
        "read",
        "work",
        "fix",
        "check",
        "get",
        "set",
        "new",
    ]
)
# A request for the work at hand rather than something that holds: "make sure the tests pass", "bump the version to
# 2.3.1". Kept when a word makes it general ("make sure to run ruff before every commit").
_REQUEST = re.compile(
    r"^(?:make sure|ensure|bump|set|change|raise|lower|increase|decrease|switch|update|make|try|now|then|next|"
    r"first|finally)\b",
    re.IGNORECASE,
)
_GENERAL = re.compile(
    r"\b(?:always|never|every|each|whenever|any ?time|all|from now on|going forward|in this (?:repo|project|"
    r"codebase)|at all times|ever|before (?:you|committing|pushing|merging|every|each|any)|after (?:every|each|any)|"
    r"by default|as a rule|in general|generally)\b",
    re.IGNORECASE,
)


def _stem(word: str) -> str:
    """A light suffix stripper: plural, -ing, -ed, -ly, -ion, a final e (``migrations``, ``migrated`` and
    ``migrate`` all give ``migrat``), so that the forms of one word compare equal. Short words are kept."""
    if len(word) <= 3 or not word.isalpha():
        return word
    for suffix, repl, minimum in (
        ("ies", "y", 5),
        ("sses", "ss", 6),
        ("ss", "ss", 0),
        ("us", "us", 0),
        ("is", "is", 0),
        ("s", "", 4),
    ):
        if word.endswith(suffix) and len(word) >= minimum:
            word = word[: len(word) - len(suffix)] + repl
            break
    for suffix, minimum in (
        ("ingly", 7),
        ("ing", 6),
        ("edly", 6),
        ("ed", 5),
        ("ly", 6),
        ("ations", 8),
        ("ation", 7),
        ("ions", 6),
        ("ion", 6),
        ("ment", 7),
    ):
        if word.endswith(suffix) and len(word) >= minimum:
            word = word[: len(word) - len(suffix)]
            if suffix in ("ation", "ations"):
                word += "at"
            if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "lsz":
                word = word[:-1]  # running -> run, committed -> commit
            break
    if word.endswith("e") and len(word) > 4:
        word = word[:-1]
    return word


def is_request(sentence: str) -> bool:
    """Whether a sentence the classifier took for an instruction asks for the work at hand ("make sure the tests
    pass", "bump the version to 2.3.1"): it opens with such a verb and no word makes it general."""
    core = core_text(sentence)
    return bool(_REQUEST.match(core)) and not _GENERAL.search(core)


_STEMMED_SYNONYMS = {_stem(word): canonical for word, canonical in _SYNONYMS.items()}
_STEMMED_STOP = frozenset(_stem(word) for word in _STOP)


def core_text(sentence: str) -> str:
    """The instruction itself: leading discourse words, a trailing reason or aside and end punctuation removed."""
    text = " ".join(sentence.split())
    text = _LEADING.sub("", text)
    text = _REASON.sub("", text)
    return text.strip(" .!;:,-*>#")


def instruction_key(sentence: str) -> frozenset[str]:
    """What a sentence instructs, as a set of normalised tokens (see the module's docstring)."""
    text = core_text(sentence).lower()
    text = _LEAVE_ALONE.sub(r"never touch \1", text)
    text = _HANDS_OFF.sub("never touch", text)
    text = _CONTRAST.sub(" ", text)
    mixed = bool(_NEGATION.search(text)) and bool(_ALTERNATIVE.search(text))
    text = _NEGATION.sub(f" {NOT} ", text)
    tokens = {MIXED} if mixed else set()
    for word in _TOKEN.findall(text.replace("'", "")):
        if word in _STOP:
            continue
        stemmed = _stem(word)
        token = _SYNONYMS.get(word) or _STEMMED_SYNONYMS.get(stemmed) or stemmed
        if token not in _STOP and token not in _STEMMED_STOP:
            tokens.add(token)
    return frozenset(tokens)


def similarity(a: frozenset[str], b: frozenset[str]) -> float:
    """How much two keys say the same thing: their Jaccard index, 0 when only one is negated or when all they
    share is generic words."""
    if not a or not b:
        return 0.0
    if (NOT in a) != (NOT in b) and MIXED not in a and MIXED not in b:
        return 0.0
    shared = a & b
    if not shared - _GENERIC - {MIXED}:
        return 0.0
    marks = {NOT, MIXED}  # the polarity, already compared: not a word the two share
    return len(shared - marks) / len((a | b) - marks)


def same_instruction(a: str, b: str, threshold: float = MATCH_THRESHOLD) -> bool:
    """Whether two sentences state the same instruction in other words."""
    return similarity(instruction_key(a), instruction_key(b)) >= threshold


# --------------------------------------------------------------------------- what the sessions say


@dataclass(frozen=True, slots=True)
class Mention:
    """One statement of an instruction: the session file and id, the user entry, when, and the sentence."""

    path: str
    session_id: str
    entry_id: str
    timestamp: str | None
    text: str

    def to_json(self) -> dict[str, Any]:
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

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
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
            doc["line"] = safe_text(self.known_line or "")
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

    def to_json(self) -> dict[str, Any]:
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
            problems.append((str(directory), _reason(exc)))
            dirs = []
    files: list[Path] = []
    for folder in dirs:
        try:
            names = sorted(e.name for e in os.scandir(folder) if e.name.endswith(".jsonl"))
        except FileNotFoundError:
            continue
        except OSError as exc:
            problems.append((str(folder), _reason(exc)))
            continue
        files.extend(folder / name for name in names)
    return files, filter_cwd, problems


def _reason(exc: OSError) -> str:
    reason = exc.strerror or type(exc).__name__
    return reason[:1].lower() + reason[1:]


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
        for sentence in split_sentences(text):
            kind = classify(sentence)
            if kind not in KINDS:
                continue
            if is_request(sentence):
                continue
            key = instruction_key(sentence)
            if not key - _GENERIC - {MIXED}:
                continue
            yield _Said(Mention(str(path), session_id, entry_id, stamp, sentence), kind, key, 0)


def _read_session(path: Path, filter_cwd: str | None) -> tuple[str, str, list[tuple[str, str | None, str]]] | None:
    """(session id, cwd, user messages) of a session; None when it belongs to another project. Raises
    PiCompactError when the file cannot be read as a session."""
    from pi_compact.session.load import load_session

    session = load_session(path)
    if filter_cwd is not None and (not session.cwd or expand_path(session.cwd) != filter_cwd):
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


def _group(said: Sequence[_Said], threshold: float) -> list[list[_Said]]:
    """Statements grouped by single link: two statements similar enough are in the same group, and so are the
    statements similar to either (groups in the order of their first statement, each oldest first)."""
    parent = list(range(len(said)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    by_token: dict[str, list[int]] = {}  # similar statements share a word that is not generic: compare only those
    for i, item in enumerate(said):
        candidates: set[int] = set()
        for token in item.key - _GENERIC - {MIXED}:
            earlier = by_token.setdefault(token, [])
            candidates.update(earlier)
            earlier.append(i)
        matches = [(similarity(item.key, said[j].key), j) for j in sorted(candidates)]
        matches = [(score, j) for score, j in matches if score >= threshold]
        if len(item.key - {NOT, MIXED}) <= 1 and matches:
            # One word ("hands off .env") matches too much to join two groups: only its closest one.
            matches = [max(matches, key=lambda m: (m[0], -m[1]))]
        for _, j in matches:
            a, b = root(i), root(j)
            if a != b:
                parent[max(a, b)] = min(a, b)
    groups: dict[int, list[_Said]] = {}
    for i, item in enumerate(said):
        groups.setdefault(root(i), []).append(item)
    return list(groups.values())


def _display(text: str) -> str:
    """The line to suggest: the sentence without its leading discourse words, capitalised, ending with a stop."""
    line = _LEADING.sub("", " ".join(text.split())).strip(" -*>#")
    if not line:
        line = text.strip()
    line = line[:1].upper() + line[1:]
    if line and line[-1] not in ".!)`\"'":
        line += "."
    return line if len(line) <= RULE_CHARS else line[: RULE_CHARS - 1].rstrip() + "…"


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
    """The first instruction-file line that states what one of the group's statements says."""
    for item in group:
        for path, line, key in lines:
            if similarity(item.key, key) >= threshold or covers(key, item.key):
                return path, line
    return None


def covers(line: frozenset[str], statement: frozenset[str]) -> bool:
    """Whether an instruction-file line says what a statement says in more words: the same polarity, and at least
    ``COVER_SHARE`` of the smaller key's words, two of them not generic, in both."""
    if similarity(line, statement) == 0.0:
        return False
    marks = {NOT, MIXED}
    shared = (line & statement) - marks
    smaller = min(len(line - marks), len(statement - marks))
    return len(shared - _GENERIC) >= 2 and len(shared) >= COVER_SHARE * smaller


def target_file(cwd: str) -> str:
    """The instruction file of ``cwd`` that Pi loads (the first that exists of Pi's names), else its AGENTS.md."""
    directory = expand_path(cwd)
    for name in CONTEXT_FILE_NAMES:
        path = os.path.join(directory, name)
        if os.path.isfile(path):
            return path
    return os.path.join(directory, "AGENTS.md")


def find_rules(
    cwd: str | os.PathLike[str] | None = None,
    *,
    all_: bool = False,
    min_sessions: int = DEFAULT_MIN_SESSIONS,
    agent_dir: str | os.PathLike[str] | None = None,
    threshold: float = MATCH_THRESHOLD,
    known_threshold: float | None = None,
) -> RulesReport:
    """The standing instructions said in at least ``min_sessions`` sessions of the project at ``cwd`` (default:
    the current directory; ``all_``: every project), ranked, without those its instruction files already state."""
    if min_sessions < 1:
        raise UsageError(f"--min-sessions must be at least 1 (got {min_sessions})")
    where = os.getcwd() if cwd is None else os.fspath(cwd)
    agent = Path(expand_path(os.fspath(agent_dir))) if agent_dir is not None else default_agent_dir()
    files, filter_cwd, unreadable = _session_files(where, all_, agent)
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
    suggestions: list[Suggestion] = []
    known: list[Suggestion] = []
    for group in _group(said, threshold):
        if len({s.mention.path for s in group}) < min_sessions:
            continue
        mentions = tuple(s.mention for s in group)
        suggestion = Suggestion(_display(_representative(group).mention.text), _kind(group), mentions)
        hit = _known(group, lines, KNOWN_THRESHOLD if known_threshold is None else known_threshold)
        if hit is None:
            suggestions.append(suggestion)
        else:
            known.append(Suggestion(suggestion.text, suggestion.kind, mentions, hit[0], hit[1]))
    rank = lambda s: (-s.sessions, _neg(s.last_said), -len(s.mentions), s.text)  # noqa: E731
    suggestions.sort(key=rank)
    known.sort(key=rank)
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


# --------------------------------------------------------------------------- writing the block


@dataclass(frozen=True)
class WriteResult:
    """What ``write_rules`` did: the file, the lines added (those already in the block are not added again),
    whether it made the file or the block."""

    path: str
    added: list[str]
    created_file: bool
    created_block: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "path": safe_text(self.path),
            "added": [safe_text(line) for line in self.added],
            "created_file": self.created_file,
            "created_block": self.created_block,
        }


def with_rules(text: str, lines: Sequence[str]) -> tuple[str, list[str], bool]:
    """``text`` with ``lines`` added as bullets to its rules block (made at the end when there is none); every
    other byte of ``text`` is kept. Returns the new text, the lines added, and whether the block is new."""
    begin = text.find(BLOCK_BEGIN)
    end = text.find(BLOCK_END, begin + len(BLOCK_BEGIN)) if begin >= 0 else -1
    existing = text[begin:end] if begin >= 0 and end >= 0 else ""
    present = {ln.strip().lstrip("-* ").strip() for ln in existing.splitlines()}
    added: list[str] = []
    for line in lines:
        line = " ".join(line.split())
        if line and line not in present and line not in added:
            added.append(line)
    if not added:
        return text, [], False
    bullets = "".join(f"- {line}\n" for line in added)
    if begin >= 0 and end >= 0:
        head = text[:end]
        if head and not head.endswith("\n"):
            head += "\n"
        return head + bullets + text[end:], added, False
    newline = "" if not text or text.endswith("\n") else "\n"
    gap = "\n" if text.strip() else ""
    return f"{text}{newline}{gap}{BLOCK_BEGIN}\n{bullets}{BLOCK_END}\n", added, True


def write_rules(path: str | os.PathLike[str], lines: Sequence[str]) -> WriteResult:
    """Append ``lines`` to the rules block of the instruction file at ``path`` (created when missing). The file is
    written to a temporary file beside it and renamed over it, with its mode; a file changed while this ran is
    left as it is (ConcurrentWriteError)."""
    where = os.path.realpath(os.fspath(path))
    try:
        with open(where, "rb") as handle:
            before = handle.read()
        mode: int | None = os.stat(where).st_mode & 0o7777
    except FileNotFoundError:
        before, mode = b"", None
    except OSError as exc:
        raise PiCompactError(f"cannot read: {_reason(exc)}", path=where) from None
    text = before.decode("utf-8", errors="surrogateescape")
    new, added, created_block = with_rules(text, lines)
    if not added:
        return WriteResult(where, [], False, False)
    existed = mode is not None
    directory = os.path.dirname(where)
    try:
        fd, temp = tempfile.mkstemp(prefix=".picompact-rules-", dir=directory)
    except OSError as exc:
        raise PiCompactError(f"cannot write beside it: {_reason(exc)}", path=where) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(new.encode("utf-8", errors="surrogateescape"))
            handle.flush()
            os.fsync(handle.fileno())
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(temp, mode)
        try:
            with open(where, "rb") as handle:
                now = handle.read()
        except FileNotFoundError:
            now = b""
        if now != before:
            raise ConcurrentWriteError("changed while picompact was writing to it: nothing written", path=where)
        os.replace(temp, where)
    except OSError as exc:
        _unlink(temp)
        raise PiCompactError(f"cannot write: {_reason(exc)}", path=where) from None
    except BaseException:
        _unlink(temp)
        raise
    return WriteResult(where, added, not existed, created_block)


def _unlink(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)
