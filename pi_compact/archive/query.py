"""Queries over the cross-session index, and their ranked, paged results.

A query is words, as a search box takes them: ``timeout retry`` (both words, anywhere in the entry), ``"connection
reset"`` (the phrase), ``migrat*`` (a prefix), ``OR``, ``AND``, ``NOT`` (upper case) and parentheses; a word with
punctuation (``TypeError:``, ``foo.bar``) is the phrase of its words. Words match whatever their case and accents;
a word of a script written without spaces (Chinese, Japanese; Korean, whose particles attach to words) matches
wherever its characters stand in a row (``archive.words``). Results are ranked by BM25 (SQLite's ``bm25()``) times
what the entry's role weighs (``archive.document.weight``: what the user said first, then the agent's replies,
then tool output), times ``UNIT_BOOST`` for each identifier or path of the query (a word with punctuation or ``_``
inside, ``foo_bar``, ``src/app.py``) the entry holds as it is written, not only as the phrase of its words; ties
by session path and line.

``--regex`` and ``-F`` search for an exact pattern instead: it is matched on each candidate entry's text (what
``show`` renders), so the index only narrows. The words every match must contain (``search.prefilter``'s required
literals, cut down to the whole words they hold) pick the candidates; a pattern without such words is matched on
every entry in scope: without a filter, on every entry's bytes in one pass (``_screen``), RE2 answering for the
entries it can (``_checked_matcher``), and the entries after the page are counted without being matched again.
The screen skips the entries that lack a string every match holds (``search.required``: ``Error`` for
``\\w+Error\\b``), found with ``bytes.find``, where such strings rule out enough of the text.
"""

from __future__ import annotations

import functools
import re
import shlex
import time
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple, TypedDict

from pi_compact.archive.scope import Scope, ScopeFile
from pi_compact.archive.store import Store
from pi_compact.errors import PatternError, UsageError

HIGHLIGHT_START, HIGHLIGHT_END = "\ue000", "\ue001"  # private-use characters marking FTS5's snippet highlights
_PRIVATE_USE = re.compile("[\ue000-\uf8ff]")
SNIPPET_TOKENS = 24
SNIPPET_CHARS = 200
# FTS5's snippet() takes time quadratic in the hits of a text (a 250 KB entry repeating the word: 23 s): for a text
# longer than this the snippet is a window cut in Python around the first hit (``_window_snippet``), linear.
SNIPPET_FTS_CHARS = 8192
DEFAULT_LIMIT = 20
UNIT_BOOST = 2.0
_SCORE = "bm25(body) * body.weight"
MAX_LIMIT = 1000
REGEX_TIMEOUT = 2.0  # seconds one entry may take to match
# Seconds of CPU time one --regex or -F search may spend matching in all (a pattern slow on every entry, each
# within REGEX_TIMEOUT): past it the search stops, the results found so far stand, and the page says so
# (``SearchPage.stopped``). A pattern RE2 runs (``_Linear``) is linear in the text and seldom comes near it.
SEARCH_BUDGET = 10.0
# Seconds of CPU time a --regex or -F search matched entry by entry may spend, once its page is full, counting the
# matches after it (the total): past it the total is not known (None), the page stands. A screened search
# (``_screen``) knows its total when its page is made.
COUNT_BUDGET = 1.0
_clock: Callable[[], float] = time.process_time  # the clock ``regex`` counts its timeout on


_LITERAL_CHARS = 1000  # a -F string up to this long is matched by ``_Literal`` (far below ``regex``'s size limits)


class _Found:
    """Where ``_Literal`` found its string: the ``start()`` and ``end()`` of a ``regex`` match."""

    __slots__ = ("_end", "_start")

    def __init__(self, start: int, end: int) -> None:
        self._start, self._end = start, end

    def start(self) -> int:
        return self._start

    def end(self) -> int:
        return self._end


class _Literal:
    """A -F string that keeps its case, matched as ``regex`` matches it escaped: the leftmost occurrence, and the
    occurrences that do not overlap (``search``, ``finditer``; the positions in the whole text)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def search(self, string: str, pos: int = 0, endpos: int | None = None, timeout: float | None = None) -> Any:
        at = string.find(self.text, pos, len(string) if endpos is None else endpos)
        return None if at < 0 else _Found(at, at + len(self.text))

    def finditer(
        self, string: str, pos: int = 0, endpos: int | None = None, timeout: float | None = None
    ) -> Iterator[_Found]:
        end = len(string) if endpos is None else endpos
        size = len(self.text)
        at = string.find(self.text, pos, end)
        while at >= 0:
            yield _Found(at, at + size)
            at = string.find(self.text, at + size, end)


class _Linear:
    """A pattern run by RE2 (``google-re2``), in time linear in the text: what ``regex`` would match, for the
    patterns whose meaning the two engines share (``_linear``); ``search`` and ``finditer`` as ``regex``'s (the
    timeout is accepted and needs no enforcing). ``engine_source``: the pattern as RE2 was given it."""

    __slots__ = ("compiled", "engine_source", "ignore_case", "source")

    def __init__(self, source: str, ignore_case: bool, compiled: Any, engine_source: str | None = None) -> None:
        self.source, self.ignore_case, self.compiled = source, ignore_case, compiled
        self.engine_source = source if engine_source is None else engine_source

    def __reduce__(self) -> tuple[Any, ...]:
        return _linear, (self.source, self.ignore_case)

    def search(self, string: str, pos: int = 0, endpos: int | None = None, timeout: float | None = None) -> Any:
        return self.compiled.search(string, pos, len(string) if endpos is None else endpos)

    def finditer(self, string: str, pos: int = 0, endpos: int | None = None, timeout: float | None = None) -> Any:
        return self.compiled.finditer(string, pos, len(string) if endpos is None else endpos)


# What RE2 and ``regex`` (VERSION0, as Python's re) would read differently, or RE2 not at all: the Unicode
# boundaries (ASCII in RE2), inline groups and flags, ``{,n}`` (a literal to RE2), POSIX classes (a set of
# characters to ``regex``), and any escape of a letter or digit but \n \t \r \f \v, \xHH and the classes \d \s
# \w (and \D \S \W), which RE2 is given as the very characters ``regex`` puts in them (``_class_ranges``).
_NOT_LINEAR = r"\\(?:[0-9A-Za-wyz]|x(?![0-9A-Fa-f]{2}))|\(\?(?!:)|\{,|\[:"


CLASS_TABLE = "regex-classes.json"  # in pi_compact/data: ``class_ranges`` for one version of ``regex``


@functools.cache
def _class_table() -> dict[str, Any]:
    from pathlib import Path

    import orjson

    try:
        table: dict[str, Any] = orjson.loads(
            (Path(__file__).resolve().parent.parent / "data" / CLASS_TABLE).read_bytes()
        )
    except (OSError, orjson.JSONDecodeError):  # pragma: no cover - a damaged install: computed instead
        return {}
    return table


@functools.cache
def _class_ranges(name: str) -> str:
    """``class_ranges(name)``, from the table bundled for this version of ``regex`` (computing them costs tens of
    milliseconds), or computed for another version."""
    import regex

    table = _class_table()
    ranges = table.get("classes", {}).get(name) if table.get("regex") == regex.__version__ else None
    return ranges if isinstance(ranges, str) else class_ranges(name)


def class_ranges(name: str) -> str:
    """The characters ``regex`` (this one, with its Unicode tables) puts in ``\\d``, ``\\s`` or ``\\w``, as the
    ranges of an RE2 class (``\\x{30}-\\x{39}...``, without the brackets)."""
    import array
    import sys

    import regex

    codes = array.array("I", range(0xD800))
    codes.extend(range(0xE000, 0x110000))
    every = codes.tobytes().decode(f"utf-32-{sys.byteorder[0]}e")  # every character but surrogates, at C speed
    out = []
    for m in regex.finditer(f"\\{name}+", every):
        lo, hi = m.start(), m.end() - 1
        lo, hi = (c + 0x800 if c >= 0xD800 else c for c in (lo, hi))
        out.append(f"\\x{{{lo:X}}}" if lo == hi else f"\\x{{{lo:X}}}-\\x{{{hi:X}}}")
    return "".join(out)


def _spelled_out(source: str) -> str | None:
    """``source`` with each ``\\d``, ``\\s``, ``\\w`` (and negation) replaced by the class of its characters in
    ``regex`` (inside a set, spliced into it); None where that cannot be said in RE2 (a negation inside a set, or
    a class next to a ``-`` in a set, which would make a range)."""
    out: list[str] = []
    i, n = 0, len(source)
    in_set = False
    while i < n:
        c = source[i]
        if c == "\\" and i + 1 < n:
            e = source[i + 1]
            if e in "dswDSW":
                ranges = _class_ranges(e.lower())
                if in_set:
                    if e.isupper() or source[i - 1] == "-" or source[i + 2 : i + 3] == "-":
                        return None
                    out.append(ranges)
                else:
                    out.append(("[^" if e.isupper() else "[") + ranges + "]")
            else:
                out.append(source[i : i + 2])
            i += 2
            continue
        if not in_set and c == "[":
            in_set = True
            out.append(c)
            i += 1
            if source[i : i + 1] == "^":
                out.append("^")
                i += 1
            if source[i : i + 1] == "]":  # a ']' first in a set is one of its characters
                out.append("]")
                i += 1
            continue
        if in_set and c == "]":
            in_set = False
        out.append(c)
        i += 1
    return "".join(out)


def _linear(source: str, ignore_case: bool, ascii_text: bool = False) -> _Linear | None:
    """``source`` (``regex`` syntax, MULTILINE) compiled by RE2 when both engines give it the same meaning;
    ``ascii_text``: the same meaning on a text of ASCII characters only, where RE2's ``\\b`` and ``\\B`` (ASCII
    word boundaries) are ``regex``'s too."""
    import re

    escapes = r"\\[\\ntrfvdswDSWbB]" if ascii_text else r"\\[\\ntrfvdswDSW]"
    allowed = re.sub(escapes, "", source)  # an escaped backslash, and the escapes both read alike
    if re.search(_NOT_LINEAR, allowed):
        return None
    try:
        import re2
    except ImportError:  # pragma: no cover - a dependency
        return None
    engine = _spelled_out(source) if re.search(r"\\[dswDSW]", source) else source
    if engine is None:
        return None
    options = re2.Options()
    options.case_sensitive = not ignore_case
    options.log_errors = False
    options.max_mem = 64 << 20
    try:
        return _Linear(source, ignore_case, re2.compile("(?m)" + engine, options), engine)
    except re2.error:
        return None


class Query:
    """What to look for: words (``mode`` "words"), or an exact pattern ("regex", "fixed") checked on the text.
    ``fts`` is the MATCH expression (for a pattern: the words that narrow it; None: every entry is a candidate).
    Immutable; equal when all but the compiled ``pattern`` are (a class of its own: no dataclass to compile at
    start-up)."""

    __slots__ = ("fts", "ignore_case", "mode", "pattern", "text")
    text: str
    mode: str
    fts: str | None
    ignore_case: bool
    pattern: Any

    def __init__(
        self, text: str, mode: str = "words", fts: str | None = None, ignore_case: bool = False, pattern: Any = None
    ) -> None:
        for name, value in (("text", text), ("mode", mode), ("fts", fts), ("ignore_case", ignore_case)):
            object.__setattr__(self, name, value)
        object.__setattr__(self, "pattern", pattern)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}")

    def _key(self) -> tuple[Any, ...]:
        return (self.text, self.mode, self.fts, self.ignore_case)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        return self._key() == other._key()  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"Query(text={self.text!r}, mode={self.mode!r}, fts={self.fts!r}, ignore_case={self.ignore_case!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return Query, (self.text, self.mode, self.fts, self.ignore_case, self.pattern)

    @classmethod
    def parse(cls, text: str, *, regex: bool = False, fixed: bool = False, ignore_case: bool = False) -> Query:
        if regex and fixed:
            raise UsageError("--regex and -F clash: -F takes the pattern as a literal string")
        _check_text(text, "pattern" if regex or fixed else "query")
        if not regex and not fixed:
            from pi_compact.archive.words import fts_expression  # its classes cost 6 ms to compile: when used

            if ignore_case:
                raise UsageError("-i applies to --regex and -F: words match whatever their case")
            return cls(text, "words", fts_expression(text))
        if not text:
            raise UsageError("the pattern is empty")
        pattern: Any
        literals: list[str] | None
        if fixed and not ignore_case and len(text) <= _LITERAL_CHARS:
            pattern = _Literal(text)  # what ``regex`` makes of it, without importing it (nor ``search``)
            literals = [text] if "\n" not in text else None  # ``search.prefilter.required_literals``'s for -F
        else:
            from pi_compact.search.patternsize import compile_pattern
            from pi_compact.search.prefilter import required_literals

            pattern = compile_pattern(text, ignore_case=ignore_case, fixed=fixed, multiline=True)
            pattern = _linear(pattern.pattern, ignore_case) or pattern
            literals = required_literals(text, fixed=fixed)
        fts: str | None = None
        if literals:
            from pi_compact.archive.words import literal_words

            parts = [literal_words(lit) for lit in literals]
            if all(parts):
                fts = parts[0] if len(parts) == 1 else " OR ".join(f"({p})" for p in parts)
        return cls(text, "fixed" if fixed else "regex", fts, ignore_case, pattern)

    def digest(self) -> dict[str, Any]:
        return {"text": self.text, "mode": self.mode, "i": self.ignore_case}


def _check_text(text: str, what: str) -> None:
    """UsageError for a query no index holds: bytes that are not UTF-8 (a shell passes them as they are; Python
    keeps each as a lone surrogate), which no session text can contain either."""
    for at, char in enumerate(text):
        if "\ud800" <= char <= "\udfff":
            byte = f" 0x{ord(char) - 0xDC00:02x}" if char >= "\udc80" else ""
            raise UsageError(f"the {what} is not UTF-8 text: byte{byte} at character {at + 1} is not a character")


class Filters(NamedTuple):
    """Which entries count: sessions of ``cwd``; times (epoch ms, inclusive); roles or entry types; a tool's calls
    and results; failed tool results only; ``branch`` "all" (every branch) or "leaf" (the active branch)."""

    cwd: str | None = None
    since_ms: int | None = None
    until_ms: int | None = None
    roles: frozenset[str] | None = None
    tool: str | None = None
    errors: bool = False
    branch: str = "all"

    def digest(self) -> dict[str, Any]:
        return {
            "cwd": self.cwd,
            "since": self.since_ms,
            "until": self.until_ms,
            "roles": sorted(self.roles) if self.roles else None,
            "tool": self.tool,
            "errors": self.errors,
            "branch": self.branch,
        }


# ---------------------------------------------------------------------------------------------------------------
# Results


class HitJSON(TypedDict):
    """``Hit.to_json()``: a ``match`` record of ``search --json-lines``, and an item of ``SearchPageJSON.results``."""

    session: str
    session_id: str | None
    cwd: str | None
    entry_id: str | None
    line: int
    role: str
    timestamp: str | None
    score: float | None
    snippet: str
    highlights: list[dict[str, int]]
    show: str | None


class _SearchQueryJSON(TypedDict):
    query: str
    mode: str


class _SearchEndJSON(TypedDict):
    matches: int
    total: int | None
    total_at_least: int
    sessions_searched: int
    complete: bool
    next_cursor: str | None
    skipped: list[dict[str, str]]
    stopped: str | None
    did_you_mean: list[str]


class SearchSummaryJSON(_SearchQueryJSON, _SearchEndJSON):
    """``SearchPage.summary_json()``: the ``summary`` record of ``search --json-lines``."""


class _SearchResultsJSON(TypedDict):
    results: list[HitJSON]


class SearchPageJSON(_SearchQueryJSON, _SearchResultsJSON, _SearchEndJSON):
    """``SearchPage.to_json()``: the ``search --json`` document, the summary with the hits after the query."""


class Hit(NamedTuple):
    """One entry found: where it is, what it is, and a line of its text with the match highlighted."""

    session: str  # the session file's path
    session_id: str | None
    cwd: str | None
    entry_id: str | None
    line: int
    role: str
    timestamp: str | None
    score: float | None  # BM25 (lower is better, as SQLite gives it); None when unranked
    snippet: str
    highlights: tuple[tuple[int, int], ...]

    @property
    def show_command(self) -> str | None:
        """The command that prints the whole entry."""
        if not self.entry_id:
            return None
        return shlex.join(["picompact", "show", self.entry_id, self.session])

    def to_json(self) -> HitJSON:
        return {
            "session": self.session,
            "session_id": self.session_id,
            "cwd": self.cwd,
            "entry_id": self.entry_id,
            "line": self.line,
            "role": self.role,
            "timestamp": self.timestamp,
            "score": self.score,
            "snippet": self.snippet,
            "highlights": [{"start": a, "end": b} for a, b in self.highlights],
            "show": self.show_command,
        }


class SearchPage(NamedTuple):
    query: Query
    hits: list[Hit]
    sessions: int  # sessions in scope (after --cwd)
    next_cursor: str | None
    skipped: list[tuple[str, str]]
    # Why the search stopped before it had looked at every candidate (``SEARCH_BUDGET``): the hits are those found
    # until then. None: it looked at all it had to.
    stopped: str | None = None
    # How many results there are on all the pages (None: not known, the search or its count having stopped).
    total: int | None = None
    # Words of the index close to the query's words that match nothing (a typo's likely fixes), when nothing matched.
    suggestions: tuple[str, ...] = ()
    # Results on all pages known to be there: ``total`` when it is known, else those counted before the count (or
    # the search) stopped.
    total_at_least: int = 0

    def summary_json(self) -> SearchSummaryJSON:
        return {
            "query": self.query.text,
            "mode": self.query.mode,
            "matches": len(self.hits),
            "total": self.total,
            "total_at_least": self.total_at_least,
            "sessions_searched": self.sessions,
            "complete": self.next_cursor is None and self.stopped is None,
            "next_cursor": self.next_cursor,
            "skipped": [{"path": p, "reason": r} for p, r in self.skipped],
            "stopped": self.stopped,
            "did_you_mean": list(self.suggestions),
        }

    def to_json(self) -> SearchPageJSON:
        summary = self.summary_json()
        return {
            "query": summary["query"],
            "mode": summary["mode"],
            "results": [h.to_json() for h in self.hits],
            "matches": summary["matches"],
            "total": summary["total"],
            "total_at_least": summary["total_at_least"],
            "sessions_searched": summary["sessions_searched"],
            "complete": summary["complete"],
            "next_cursor": summary["next_cursor"],
            "skipped": summary["skipped"],
            "stopped": summary["stopped"],
            "did_you_mean": list(self.suggestions),
        }


# ---------------------------------------------------------------------------------------------------------------
# Searching


def _in_scope(scope: Scope, filters: Filters) -> dict[int, ScopeFile]:
    if filters.cwd is None:
        return scope.files
    from pi_compact.pi.sessions import header_cwd_matches
    from pi_compact.pi.settings import expand_path

    wanted = expand_path(filters.cwd)  # a header's relative cwd ("."): never the project, wherever this runs
    return {i: f for i, f in scope.files.items() if header_cwd_matches(f.cwd, wanted)}


def _conditions(filters: Filters) -> tuple[str, list[Any]]:
    sql: list[str] = []
    args: list[Any] = []
    if filters.since_ms is not None:
        sql.append("e.ts_ms >= ?")
        args.append(filters.since_ms)
    if filters.until_ms is not None:
        sql.append("e.ts_ms <= ?")
        args.append(filters.until_ms)
    if filters.roles:
        roles = sorted(filters.roles)
        sql.append(f"e.kind in ({', '.join('?' * len(roles))})")
        args.extend(roles)
    if filters.tool is not None:
        sql.append("instr(e.tools, ?) > 0")
        args.append("\n" + filters.tool + "\n")
    if filters.errors:
        sql.append("e.error = 1")
    return "".join(f" and {c}" for c in sql), args


def _branch(conn: Any, file_id: int, leaf: str | None) -> set[int]:
    """The entries (row ids) on the path from the session's leaf to its root, as Pi walks it."""
    if leaf is None:
        return set()
    by_id: dict[str, tuple[int, str | None]] = {}
    for rowid, entry_id, parent in conn.execute(
        "select id, entry_id, parent_id from entries where file = ? order by line", (file_id,)
    ):
        if entry_id is not None:
            by_id[entry_id] = (rowid, parent)  # a later duplicate wins, as in Pi
    on: set[int] = set()
    current: str | None = leaf
    while current is not None and current in by_id:
        rowid, parent = by_id[current]
        if rowid in on:
            break  # a cycle: Pi refuses it; the path so far stands
        on.add(rowid)
        current = parent
    return on


_ENDS: Any = None


def units(text: str) -> list[str]:
    """The identifiers and paths of a word query (``foo_bar``, ``src/app.py``, ``--dry-run``), lower case (ASCII
    only, as SQLite's ``lower()``): its words that hold punctuation or ``_`` between two letters or digits, without
    what leads and trails them."""
    global _ENDS
    if _ENDS is None:
        import re

        _ENDS = re.compile(r"^[\W_]+|[\W_]+$")
    out: list[str] = []
    for word in text.split():
        core = _ENDS.sub("", word)
        if len(core) >= 3 and not core.isalnum():
            lowered = core.translate(_ASCII_LOWER)
            if lowered not in out:
                out.append(lowered)
    return out


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def _score(query: Query) -> tuple[str, list[Any]]:
    """The SQL of a word query's score, and its arguments (``UNIT_BOOST`` for each of its ``units``)."""
    found = units(query.text) if query.mode == "words" else []
    boosts = "".join(f" * (case when instr(lower(body.text), ?) > 0 then {UNIT_BOOST} else 1 end)" for _ in found)
    return _SCORE + boosts, found


def _candidates(
    conn: Any, query: Query, filters: Filters, narrow: bool, screened: bool = False
) -> Iterator[tuple[Any, ...]]:
    """The entries that may match, in the order of the results: (rowid, file id, line, entry id, kind, time,
    score). ``narrow``: only the files of ``temp.scope`` (else every file, for the caller to pick from);
    ``screened``: only the entries of ``temp.screened``."""
    where, args = _conditions(filters)
    in_scope = " and e.file in (select file from temp.scope)" if narrow else ""
    if screened:
        in_scope += " and e.id in (select id from temp.screened)"
    if query.fts is not None:
        score, score_args = _score(query)
        if not where and not narrow:
            yield from _ranked(conn, query.fts, score, score_args)
            return
        yield from conn.execute(
            f"select e.id, e.file, e.line, e.entry_id, e.kind, e.ts, {score} as score "
            "from body join entries e on e.id = body.rowid join files f on f.id = e.file "
            f"where body match ?{in_scope}{where} "
            "order by score, f.path, e.line",
            [*score_args, query.fts, *args],
        )
        return
    yield from conn.execute(
        "select e.id, e.file, e.line, e.entry_id, e.kind, e.ts, null from entries e join files f on f.id = e.file "
        f"where true{in_scope}{where} order by e.ts_ms desc nulls last, f.path, e.line",
        args,
    )


def _ranked(
    conn: Any, fts: str, score_sql: str = _SCORE, score_args: list[Any] | None = None
) -> Iterator[tuple[Any, ...]]:
    """The entries matching ``fts`` in the order ``_candidates`` gives (score, session path, line), with nothing
    but the full-text index sorted: each entry's row is read when it is reached, and entries of the same score
    are put in path and line order among themselves."""
    entry = "select e.id, e.file, e.line, e.entry_id, e.kind, e.ts, f.path from entries e join files f on f.id = e.file"
    one = entry + " where e.id = ?"
    tied: list[tuple[Any, ...]] = []
    tied_score = None
    for rowid, score in conn.execute(
        f"select rowid, {score_sql} as score from body where body match ? order by score", [*(score_args or []), fts]
    ):
        if tied and score != tied_score:
            yield from _in_path_order(tied, tied_score)
            tied.clear()
        row = conn.execute(one, (rowid,)).fetchone()
        if row is not None:  # an entry deleted meanwhile is left out, as the join leaves it out
            tied.append(row)
            tied_score = score
    yield from _in_path_order(tied, tied_score)


def _in_path_order(rows: list[tuple[Any, ...]], score: Any) -> Iterator[tuple[Any, ...]]:
    if len(rows) > 1:
        rows.sort(key=lambda row: (row[6], row[2]))  # the path's bytes, as SQLite orders the blob; the line
    for row in rows:
        yield (*row[:6], score)


def _markers(conn: Any, rowid: int) -> tuple[str, str]:
    """Two characters the entry's text does not hold, to mark the snippet's highlights with: a session that holds
    the usual private-use pair cannot fake a highlight (or hide one)."""
    row = conn.execute("select text from body where rowid = ?", (rowid,)).fetchone()
    text = (row[0] if row else "") or ""
    if HIGHLIGHT_START not in text and HIGHLIGHT_END not in text:
        return HIGHLIGHT_START, HIGHLIGHT_END
    held = set(_PRIVATE_USE.findall(text))
    free = (chr(c) for c in range(0xE002, 0xF900) if chr(c) not in held)
    start, end = next(free, None), next(free, None)
    if start is None or end is None:  # every private-use character in one entry: take the snippet unmarked
        return "", ""
    return start, end


def _fts_snippet(conn: Any, query: Query, rowid: int) -> tuple[str, tuple[tuple[int, int], ...]]:
    begin, finish = _markers(conn, rowid)
    row = conn.execute(
        "select snippet(body, 0, ?, ?, '…', ?) from body where body match ? and rowid = ?",
        (begin, finish, SNIPPET_TOKENS, query.fts, rowid),
    ).fetchone()
    marked = (row[0] if row else "") or ""
    out: list[str] = []
    spans: list[tuple[int, int]] = []
    start = -1
    size = 0
    for ch in marked:
        if begin and ch == begin:
            start = size
        elif begin and ch == finish:
            if start >= 0:
                spans.append((start, size))
            start = -1
        else:
            out.append(" " if ch in "\n\r\t" else ch)
            size += 1
    return "".join(out), tuple(spans)


def _snippet(conn: Any, query: Query, rowid: int) -> tuple[str, tuple[tuple[int, int], ...]]:
    """The snippet of a hit of words: FTS5's for a short text, else ``_window_snippet``'s (bounded work); for a
    query with words of a script without spaces (matched in the ``cjk`` column, which FTS5's snippet cannot show),
    ``_substring_snippet``'s."""
    from pi_compact.archive.words import NOSPACE

    if NOSPACE.search(query.text) is not None:
        row = conn.execute("select text from body where rowid = ?", (rowid,)).fetchone()
        return _substring_snippet(query.text, (row[0] if row else "") or "")
    size = conn.execute("select length(text) from body where rowid = ?", (rowid,)).fetchone()
    if size is None or size[0] is None or size[0] <= SNIPPET_FTS_CHARS:
        snippet, spans = _fts_snippet(conn, query, rowid)
        if spans or not size or not size[0]:
            return snippet, spans
        # Nothing highlighted: the words matched in the ``cjk`` column (``Redis`` in ``Redis를``)
        row = conn.execute("select text from body where rowid = ?", (rowid,)).fetchone()
        return _substring_snippet(query.text, (row[0] if row else "") or "")
    text = conn.execute("select text from body where rowid = ?", (rowid,)).fetchone()[0]
    return _window_snippet(query.fts or "", text)


@functools.cache
def _snippet_patterns() -> tuple[Any, Any]:
    import re

    # a quoted term of an FTS5 expression (``words._quote``'s), with its prefix star; unicode61's tokens
    return re.compile(r'"((?:[^"]|"")*)"(\*?)'), re.compile(r"[^\W_]+")


def _fold(word: str) -> str:
    """A token as unicode61 with remove_diacritics compares it: case folded, accents off."""
    import unicodedata

    if word.isascii():
        return word.lower()
    return "".join(c for c in unicodedata.normalize("NFKD", word.casefold()) if not unicodedata.combining(c))


def _window_snippet(fts: str, text: str) -> tuple[str, tuple[tuple[int, int], ...]]:
    """What FTS5's snippet() shows, in time linear in the text: ``SNIPPET_TOKENS`` tokens starting a few before the
    first token a term of ``fts`` matches (case and accents aside; a prefix term by its start), every such token
    in them highlighted, "…" where the text goes on."""
    from collections import deque
    from itertools import islice

    quoted, token = _snippet_patterns()
    exact: set[str] = set()
    prefixes: list[str] = []
    for m in quoted.finditer(fts):
        words = token.findall(m.group(1).replace('""', '"'))
        for n, word in enumerate(words):
            if m.group(2) and n == len(words) - 1:
                prefixes.append(_fold(word))
            else:
                exact.add(_fold(word))
    starts = tuple(prefixes)

    def hit(word: str) -> bool:
        folded = _fold(word)
        return folded in exact or bool(starts and folded.startswith(starts))

    tokens = token.finditer(text)
    before: deque[Any] = deque(maxlen=SNIPPET_TOKENS // 2 - 2)  # about where FTS5 puts its first hit
    window: list[Any] = []
    for m in tokens:
        if hit(m.group()):
            window = [*before, m]
            break
        before.append(m)
    if not window:  # no term found (a NOT-only match cannot be): the text's start
        window = list(islice(token.finditer(text), SNIPPET_TOKENS))
    else:
        window.extend(islice(tokens, SNIPPET_TOKENS - len(window)))
    if not window:
        return text[:SNIPPET_CHARS].translate(_SPACES), ()
    start, end = window[0].start(), window[-1].end()
    lead = "…" if start > 0 else ""
    trail = "…" if end < len(text) else ""
    spans = tuple((m.start() - start + len(lead), m.end() - start + len(lead)) for m in window if hit(m.group()))
    return lead + text[start:end].translate(_SPACES) + trail, spans


_SPACES = str.maketrans("\n\r\t", "   ")


def _substring_snippet(words: str, text: str) -> tuple[str, tuple[tuple[int, int], ...]]:
    """A window of ``SNIPPET_CHARS`` around the first place ``text`` holds a word of the query ``words`` (its
    operators and quotes aside; case aside where folding keeps the text's length), each such place in it
    highlighted."""
    needles = []
    for word in re.split(r'[\s"()]+', words):
        word = word.rstrip("*")
        if word and word not in ("OR", "AND", "NOT") and _WORDS.search(word):
            needles.append(word.lower())
    folded = text.lower()
    if len(folded) != len(text):
        folded = text
    first = min((at for at in (folded.find(n) for n in needles) if at >= 0), default=0)
    start = max(0, first - SNIPPET_CHARS // 3)
    end = min(len(text), start + SNIPPET_CHARS)
    lead = "…" if start > 0 else ""
    trail = "…" if end < len(text) else ""
    spans: list[tuple[int, int]] = []
    for needle in needles:
        at = folded.find(needle, start, end)
        while at >= 0 and at + len(needle) <= end:
            spans.append((at - start + len(lead), at + len(needle) - start + len(lead)))
            at = folded.find(needle, at + len(needle), end)
    spans.sort()
    return lead + text[start:end].translate(_SPACES) + trail, tuple(spans)


_WORDS = re.compile(r"[^\W_]")


class _Budget:
    """What is left of ``SEARCH_BUDGET`` in one search, and how many entries were matched."""

    def __init__(self) -> None:
        self.left = SEARCH_BUDGET
        self.entries = 0

    def notice(self) -> str:
        return (
            f"the pattern took more than {SEARCH_BUDGET:g} s (CPU time) matching in all: the search stopped after "
            f"{self.entries:,} entries, and the results are those found in them (simplify the pattern, or add "
            "words every match holds, which narrow the entries it is matched on)"
        )


_OUT_OF_TIME: Any = object()  # ``_pattern_match``: the search's budget ran out


def _pattern_match(query: Query, text: str, budget: _Budget | None = None) -> Any:
    """The pattern's first match in ``text`` (None: none); ``_OUT_OF_TIME`` when ``budget`` ran out."""
    limit = REGEX_TIMEOUT
    start = 0.0
    if budget is not None:
        if budget.left <= 0:
            return _OUT_OF_TIME
        limit = min(limit, budget.left)
        budget.entries += 1
        start = _clock()
    try:
        return query.pattern.search(text, timeout=limit)
    except TimeoutError:
        if limit < REGEX_TIMEOUT:
            return _OUT_OF_TIME
        raise PatternError(
            f"the pattern {query.text!r} took more than {REGEX_TIMEOUT:g} s on one entry: simplify it"
        ) from None
    finally:
        if budget is not None:
            budget.left -= _clock() - start


def _pattern_snippet(query: Query, text: str, match: Any) -> tuple[str, tuple[tuple[int, int], ...]]:
    line_start = text.rfind("\n", 0, match.start()) + 1
    line_end = text.find("\n", match.end())
    if line_end < 0:
        line_end = len(text)
    start = max(line_start, match.start() - SNIPPET_CHARS // 3)
    end = min(line_end, max(match.end(), start + SNIPPET_CHARS))
    lead = "…" if start > line_start else ""
    trail = "…" if end < line_end else ""
    spans = []
    for m in query.pattern.finditer(text, start, end, timeout=REGEX_TIMEOUT):
        if m.end() > m.start():
            spans.append((m.start() - start + len(lead), m.end() - start + len(lead)))
    if not spans:
        spans.append((match.start() - start + len(lead), min(match.end(), end) - start + len(lead)))
    body = text[start:end].replace("\t", " ").replace("\r", " ").replace("\n", " ")
    return lead + body + trail, tuple(spans)


def search(
    store: Store,
    scope: Scope,
    query: Query,
    filters: Filters,
    *,
    limit: int = DEFAULT_LIMIT,
    cursor: str | None = None,
) -> SearchPage:
    """One page of results, best first (``limit`` of them), continuing after ``cursor``."""
    if not 1 <= limit <= MAX_LIMIT:
        raise UsageError(f"--max-count must be between 1 and {MAX_LIMIT} (got {limit})")
    params = {"q": query.digest(), "f": filters.digest()}  # a cursor's digest, made only when one is read or written
    skip = _decode_cursor(cursor, _digest(params)) if cursor is not None else 0

    def attempt() -> SearchPage:
        current = store.rebuilt_scope or scope  # the index built again by ``store.run``: its own file ids
        return _search(store, _in_scope(current, filters), current, query, filters, limit, skip, params)

    return store.run(attempt)


# Cursors as ``search.cursor`` writes them (format, kind, query digest, position), made here so that a search with
# nothing new to index imports nothing of the single-session search.
_CURSOR_VERSION = 1


def _digest(params: dict[str, Any]) -> str:
    import hashlib

    import orjson

    return hashlib.blake2b(orjson.dumps(params, option=orjson.OPT_SORT_KEYS), digest_size=8).hexdigest()


def _encode_cursor(digest: str, position: int) -> str:
    import base64

    import orjson

    payload = orjson.dumps({"v": _CURSOR_VERSION, "k": "search", "q": digest, "f": "", "p": [position]})
    return base64.urlsafe_b64encode(payload).rstrip(b"=").decode()


def _decode_cursor(text: str, digest: str) -> int:
    import base64
    import binascii

    import orjson

    from pi_compact.errors import CursorError

    try:
        padded = text.strip() + "=" * (-len(text.strip()) % 4)
        data = orjson.loads(base64.urlsafe_b64decode(padded.encode("ascii")))
        version, kind, made_for, position = data["v"], data["k"], data["q"], data["p"]
    except (ValueError, KeyError, TypeError, binascii.Error, orjson.JSONDecodeError):
        raise CursorError(f"malformed cursor {text[:40]!r}: pass a cursor exactly as picompact printed it") from None
    if version != _CURSOR_VERSION or kind != "search":
        raise CursorError("this cursor does not continue a `search` (or comes from another picompact)")
    if made_for != digest:
        raise CursorError("this cursor belongs to a different `search` query: repeat the same arguments with it")
    if not (isinstance(position, list) and len(position) == 1 and isinstance(position[0], int)) or position[0] < 0:
        raise CursorError("malformed cursor: bad position")
    return int(position[0])


def _search(
    store: Store,
    files: dict[int, ScopeFile],
    scope: Scope,
    query: Query,
    filters: Filters,
    limit: int,
    skip: int,
    params: dict[str, Any],
) -> SearchPage:
    hits: list[Hit] = []
    more = False
    stopped: str | None = None
    counting_stopped = False
    # The files in scope are all the sessions the index holds (the usual case): the entries are taken as they come
    # and those of a file added since left out here; else SQL narrows them to the files of ``temp.scope``.
    narrow = not scope.complete or len(files) != len(scope.files)
    with store.sql() as conn:
        if narrow:
            conn.execute("create temp table if not exists scope(file integer primary key)")
        if query.pattern is not None and query.fts is None:
            conn.execute("create temp table if not exists screened(id integer primary key)")
        conn.execute("begin")
        try:
            if narrow:
                conn.execute("delete from temp.scope")
                conn.executemany("insert into temp.scope values (?)", ((i,) for i in sorted(files)))
            branches: dict[int, set[int]] = {}
            seen = 0
            budget = _Budget() if query.pattern is not None else None
            # Words on every branch: the total is counted by SQL; else by going on through the candidates.
            counted = (
                _count(conn, query, filters, narrow) if query.pattern is None and filters.branch == "all" else None
            )
            # The entries the pattern matches, when RE2 can tell them in one pass (``_screen``): only they are
            # candidates, and those after the page are counted without being matched again.
            screened = _screen(conn, query, filters, budget) if budget is not None else None
            if screened is not None:
                if screened[1]:
                    stopped = budget.notice() if budget is not None else None
                conn.execute("delete from temp.screened")
                conn.executemany("insert into temp.screened values (?)", ((i,) for i in sorted(screened[0])))
            candidates = _candidates(conn, query, filters, narrow, screened is not None)
            for rowid, file_id, line, entry_id, kind, ts, score in candidates:
                info = files.get(file_id)
                if info is None:
                    continue
                if filters.branch == "leaf":
                    on = branches.get(file_id)
                    if on is None:
                        on = branches[file_id] = _branch(conn, file_id, info.leaf)
                    if rowid not in on:
                        continue
                match = None
                if screened is not None and (more or seen < skip):
                    seen += 1  # known to match
                    continue
                if query.pattern is not None:
                    text = conn.execute("select text from body where rowid = ?", (rowid,)).fetchone()[0]
                    # an entry screened is known to match: matched again for its snippet, outside the budget
                    match = _pattern_match(query, text, None if screened is not None else budget)
                    if match is _OUT_OF_TIME:
                        assert budget is not None
                        if more:  # the page is whole; only its total is not known
                            counting_stopped = True
                        else:
                            stopped = budget.notice()
                        break
                    if match is None:
                        continue
                seen += 1
                if seen <= skip:
                    continue
                if len(hits) == limit:
                    if counted is not None:
                        more = True
                        break
                    if not more and budget is not None:  # counting the rest may take only so long
                        budget.left = min(budget.left, COUNT_BUDGET)
                    more = True
                    continue  # counted, for the total: no snippet
                if match is not None:
                    snippet, spans = _pattern_snippet(query, text, match)
                else:
                    snippet, spans = _snippet(conn, query, rowid)
                hits.append(
                    Hit(
                        info.path,
                        info.session_id,
                        info.cwd,
                        entry_id,
                        line,
                        kind,
                        ts,
                        round(score, 6) if score is not None else None,
                        snippet,
                        spans,
                    )
                )
        finally:
            conn.execute("commit")
        suggestions = _suggest(conn, query) if not hits and not skip and query.mode == "words" else ()
    next_cursor = _encode_cursor(_digest(params), skip + len(hits)) if more else None
    total = counted if counted is not None else None if stopped or counting_stopped else seen
    at_least = total if total is not None else max(seen, skip + len(hits))
    return SearchPage(query, hits, len(files), next_cursor, list(scope.skipped), stopped, total, suggestions, at_least)


SUGGESTIONS = 3  # words suggested at most for each word that matches nothing
_SCANNED_TERMS = 200_000  # words of the index looked at for each, at most (a bounded cost on a huge index)


def _suggest(conn: Any, query: Query) -> tuple[str, ...]:
    """For a query that matched nothing: the query again with each of its words the index does not hold (of three
    letters or more, in a script with spaces) replaced by the word of the index nearest to it, at most one edit
    away (two for a word of six letters or more: a letter added, dropped, changed, or two swapped), the commonest
    first; up to ``SUGGESTIONS`` such queries, none when every word is in the index."""
    from pi_compact.archive.words import NOSPACE

    conn.execute("create virtual table if not exists temp.body_words using fts5vocab(main, body, 'row')")
    fixes: dict[str, list[str]] = {}
    for word in dict.fromkeys(re.findall(r"[^\W_]+", query.text)):
        if word in ("OR", "AND", "NOT") or len(word) < 3 or NOSPACE.search(word) is not None:
            continue
        folded = _fold(word)
        if conn.execute("select 1 from temp.body_words where term = ?", (folded,)).fetchone() is not None:
            continue
        near = _near_words(conn, folded)
        if near:
            fixes[word] = near
    if not fixes:
        return ()
    out: list[str] = []
    for n in range(SUGGESTIONS):
        text = query.text
        changed = False
        for word, near in fixes.items():
            pick = near[min(n, len(near) - 1)]
            text = re.sub(rf"(?<![^\W_]){re.escape(word)}(?![^\W_])", pick, text)
            changed = changed or n < len(near)
        if changed and text not in out:
            out.append(text)
    return tuple(out)


def _near_words(conn: Any, word: str) -> list[str]:
    """The words of the index within ``_distance``'s reach of ``word``: the nearest, then the commonest, first."""
    most = 1 if len(word) < 6 else 2
    found: dict[str, tuple[int, int]] = {}
    for prefix in dict.fromkeys((word[:2], word[1:3], word[:1])):
        if found and len(prefix) < 2:
            break
        rows = conn.execute(
            "select term, doc from temp.body_words where term >= ? and term < ? "
            "and length(term) between ? and ? limit ?",
            (prefix, prefix + "\U0010ffff", len(word) - most, len(word) + most, _SCANNED_TERMS),
        )
        for term, docs in rows:
            if term not in found:
                d = _distance(word, term, most)
                if d <= most:
                    found[term] = (d, -docs)
    return sorted(found, key=lambda t: (*found[t], t))[:SUGGESTIONS]


def _distance(a: str, b: str, most: int) -> int:
    """The edits (a letter added, dropped or changed, two neighbours swapped) from ``a`` to ``b``; ``most`` + 1
    as soon as it is known to be more than ``most``."""
    if abs(len(a) - len(b)) > most:
        return most + 1
    before: list[int] | None = None
    row = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        current = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            current[j] = min(row[j] + 1, current[j - 1] + 1, row[j - 1] + cost)
            if before is not None and i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                current[j] = min(current[j], before[j - 2] + 1)
        if min(current) > most:
            return most + 1
        before, row = row, current
    return row[len(b)]


class _Screener(NamedTuple):
    """How ``_screen`` asks a pattern of the entries' bytes: ``entry`` answers for one entry (True, False, or
    ``_OUT_OF_TIME``); ``first`` (None: none), given many entries joined with b"\\n", searches them from a position
    for where a match may be, never missing an entry's match: (start, end, exact), start -1 for nowhere; exact: it
    is a match of the pattern itself, so one that lies within an entry is that entry's match; ``timed``: ``entry``
    reads the clock itself (``regex`` matching)."""

    entry: Callable[[bytes], Any]
    first: Callable[[bytes], Callable[[int], tuple[int, int, bool]]] | None
    timed: bool = False
    program: Any = None  # the RE2 program ``entry`` runs, when it is one


def _re2_bytes(source: bytes, ignore_case: bool = False) -> Any:
    """An RE2 program for a UTF-8 bytes pattern, or None when RE2 refuses it."""
    import re2

    options = re2.Options()
    options.case_sensitive = not ignore_case
    options.log_errors = False
    options.max_mem = 64 << 20
    options.never_capture = True
    try:
        return re2.compile(source, options)
    except re2.error:
        return None


def _searching(program: Any, joined: bytes, exact: bool) -> Callable[[int], tuple[int, int, bool]]:
    search = program.search

    def first(pos: int) -> tuple[int, int, bool]:
        found = search(joined, pos)
        return (-1, -1, exact) if found is None else (int(found.start()), int(found.end()), exact)

    return first


def _first_of(program: Any) -> Callable[[bytes], Callable[[int], tuple[int, int, bool]]]:
    return lambda joined: _searching(program, joined, True)


def _literal_first(needle: bytes) -> Callable[[bytes], Callable[[int], tuple[int, int, bool]]]:
    def searching(joined: bytes) -> Callable[[int], tuple[int, int, bool]]:
        def first(pos: int) -> tuple[int, int, bool]:
            at = joined.find(needle, pos)
            return at, at + len(needle), True

        return first

    return searching


def _bytes_matcher(pattern: Any) -> _Screener | None:
    """Whether ``pattern`` (a query's) matches an entry's text, asked of its UTF-8 bytes as SQLite holds them (no
    text decoded nor encoded again): for a -F string that keeps its case, and a pattern RE2 runs (its UTF-8 mode:
    the same answer as on the text); None for any other. Joined entries hold a match of each entry where the entry
    does (MULTILINE: b"\\n" is where a line ends and starts; nothing but ``^``, ``$`` and ``\\b`` looks around)."""
    if isinstance(pattern, _Literal):
        needle = pattern.text.encode("utf-8")
        return _Screener(lambda blob: needle in blob, _literal_first(needle))
    if isinstance(pattern, _Linear):
        program = _re2_bytes(("(?m)" + pattern.engine_source).encode("utf-8"), pattern.ignore_case)
        if program is None:  # pragma: no cover - compiled as text already
            return None
        search = program.search
        return _Screener(lambda blob: search(blob) is not None, _first_of(program), program=program)
    return None


def _checked_matcher(query: Query, budget: _Budget) -> _Screener | None:
    """For a pattern only ``regex`` runs: whether it matches an entry's text, asked of RE2 first where RE2 can
    answer. An entry of ASCII bytes only is answered by the pattern in RE2 when RE2 reads it the same on such a
    text (``_linear``'s ``ascii_text``: word boundaries); any other by a wider pattern in RE2 (what looks around a
    match dropped: ``search.rawregex.text_pattern``), and where that matches, by ``regex`` on the text (within the
    budget: ``_OUT_OF_TIME`` when it ran out). None when RE2 can answer nothing."""
    from pi_compact.search import rawregex

    source = getattr(query.pattern, "pattern", None)
    ascii_linear = _linear(source, query.ignore_case, ascii_text=True) if isinstance(source, str) else None
    ascii_screen = _bytes_matcher(ascii_linear)
    ascii_search = ascii_screen.entry if ascii_screen is not None else None
    tree = rawregex.parse(query.text, fixed=query.mode == "fixed", ignore_case=query.ignore_case)
    program = _re2_bytes(rawregex.text_pattern(tree)) if tree is not None else None
    wider = program.search if program is not None else None
    if ascii_search is None and wider is None:
        return None

    def matches(blob: bytes) -> Any:
        if ascii_search is not None and blob.isascii():
            return ascii_search(blob)
        if wider is not None and wider(blob) is None:
            return False
        found = _pattern_match(query, blob.decode("utf-8"), budget)
        return found if found is _OUT_OF_TIME else found is not None

    ascii_program = ascii_screen.program if ascii_screen is not None else None

    def searching(joined: bytes) -> Callable[[int], tuple[int, int, bool]]:
        # entries of ASCII only: the pattern itself; any other: the wider pattern
        if ascii_program is not None and joined.isascii():
            return _searching(ascii_program, joined, True)
        return _searching(program, joined, False)

    first = searching if program is not None else None
    return _Screener(matches, first, timed=True)


_SCREEN_BATCH = 256  # entries joined for one RE2 search
_NEEDED_TRIAL = 4 << 20  # bytes of text over which the needed strings must rule out half to be asked further


def _screen(conn: Any, query: Query, filters: Filters, budget: _Budget) -> tuple[set[int], bool] | None:
    """For a pattern the words cannot narrow, on every entry (no filter narrows them either): the entries whose
    text it matches, read in one pass over the index in rowid order, and whether the budget ran out on the way;
    None when it is not worth it (a filter, narrowing words) or RE2 can answer nothing of the entries' bytes.
    Entries are searched ``_SCREEN_BATCH`` at a time, joined: one RE2 search finds where the next match may be, and
    only the entry it starts in is asked alone."""
    if query.fts is not None or _conditions(filters)[0]:
        return None
    screener = _bytes_matcher(query.pattern) or _checked_matcher(query, budget)
    if screener is None:
        return None
    entry, first = screener.entry, screener.first
    needed = _needed(query)
    seen = kept = 0  # bytes of the entries asked for the needed strings, and of those that hold them
    found: set[int] = set()
    # The clock is read here for a pattern RE2 answers; ``regex``'s matches read it themselves (``_pattern_match``)
    started = 0.0 if screener.timed else _clock()
    left = budget.left
    looked = budget.entries
    rows = conn.execute("select rowid, cast(text as blob) from body")
    while batch := rows.fetchmany(_SCREEN_BATCH):
        blobs = [blob or b"" for _, blob in batch]
        holding = None if needed is None else _holding(needed, blobs)
        if holding is not None:
            # Where most of the text holds the strings, asking for them only adds to the search: stop asking.
            seen += sum(map(len, blobs))
            kept += sum(len(blobs[i]) for i in holding)
            if seen >= _NEEDED_TRIAL and kept * 2 > seen:
                needed = None
        if holding is None:
            todo: Iterator[int] = iter(range(len(batch))) if first is None else _located(first, blobs)
        elif first is None:
            todo = iter(holding)
        else:  # only the entries that hold the strings every match does are searched, joined as before
            todo = (holding[j] if j >= 0 else ~holding[~j] for j in _located(first, [blobs[i] for i in holding]))
        for located in todo:
            i = located if located >= 0 else ~located
            blob = batch[i][1]
            if blob is None:
                continue
            if located < 0:  # a match of the pattern itself within the entry: no need to ask it alone
                found.add(batch[i][0])
                continue
            hit = entry(blob)
            if hit is _OUT_OF_TIME:
                budget.entries = looked + i
                return found, True
            if hit:
                found.add(batch[i][0])
        looked += len(batch)
        if not screener.timed and _clock() - started > left:
            budget.entries = looked
            budget.left = 0
            return found, True
    budget.entries = looked
    if not screener.timed:
        budget.left = left - (_clock() - started)
    return found, False


def _needed(query: Query) -> Any:
    """The strings every match of the query's pattern holds (``search.required``), or None: none worth it, a -F
    string that keeps its case (searched as it is already), or a pattern whose matches all start with one byte."""
    if isinstance(query.pattern, _Literal):
        return None
    from pi_compact.search import rawregex, required

    tree = rawregex.parse(query.text, fixed=query.mode == "fixed", ignore_case=query.ignore_case)
    if tree is None:
        return None
    first, empty = rawregex.first_chars(tree)
    if not empty and len(first.ascii) == 1 and not first.other:
        return None  # every match starts with one byte: RE2 finds those itself as fast (memchr)
    return required.needed(tree, ignore_case=query.ignore_case)


def _holding(needed: Any, blobs: list[bytes]) -> list[int]:
    """The entries of ``blobs`` that hold a string of every one of ``needed``'s sets, in order: the only ones a
    match can be in. The batch is asked first, joined (most batches of a rare string end there); then the entries
    where the best set's strings occur, each asked for the other sets."""
    from bisect import bisect_right

    joined = b"\n".join(blobs)
    if needed.folded:
        joined = joined.lower()
    if not all(any(s in joined for s in strings) for strings in needed.sets):
        return []
    starts = [0] * len(blobs)
    at = 0
    for i, blob in enumerate(blobs):
        starts[i] = at
        at += len(blob) + 1
    where: set[int] = set()
    for string in needed.sets[0]:
        pos = joined.find(string)
        while pos >= 0:
            i = bisect_right(starts, pos) - 1
            if pos + len(string) <= starts[i] + len(blobs[i]):  # within the entry, not across the b"\n" after it
                where.add(i)
                pos = joined.find(string, starts[i + 1]) if i + 1 < len(blobs) else -1
            else:
                pos = joined.find(string, pos + 1)
    if len(needed.sets) == 1:
        return sorted(where)
    return [i for i in sorted(where) if needed.held(blobs[i])]


def _located(first: Callable[[bytes], Callable[[int], tuple[int, int, bool]]], blobs: list[bytes]) -> Iterator[int]:
    """The entries of ``blobs`` in which ``first``, searching them joined with b"\\n", finds a place a match may
    start, in order (after each, the search goes on at the next entry's start): ``i`` to ask alone, or ``~i`` when
    the match found is the pattern's own and lies within the entry (MULTILINE: the b"\\n" around an entry is where
    its text starts and ends for ``^``, ``$``, ``\\b`` and ``\\B``, so that is the entry's match)."""
    from bisect import bisect_right

    if not blobs:
        return
    joined = b"\n".join(blobs)
    search = first(joined)
    starts = [0] * len(blobs)
    at = 0
    for i, blob in enumerate(blobs):
        starts[i] = at
        at += len(blob) + 1
    pos = 0
    while pos <= len(joined):
        hit, end, exact = search(pos)
        if hit < 0:
            return
        i = bisect_right(starts, hit) - 1
        yield ~i if exact and end <= starts[i] + len(blobs[i]) else i
        if i + 1 >= len(blobs):
            return
        pos = starts[i + 1]


def _count(conn: Any, query: Query, filters: Filters, narrow: bool) -> int:
    """How many entries in scope match the words (every branch)."""
    where, args = _conditions(filters)
    if not where and not narrow:
        return int(conn.execute("select count(*) from body where body match ?", (query.fts,)).fetchone()[0])
    in_scope = " and e.file in (select file from temp.scope)" if narrow else ""
    return int(
        conn.execute(
            f"select count(*) from body join entries e on e.id = body.rowid where body match ?{in_scope}{where}",
            [query.fts, *args],
        ).fetchone()[0]
    )
