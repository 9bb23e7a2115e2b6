"""Checking a lookup answer against the history: are its quotes really there, do its cited entries exist?

A model can misremember or invent text, so every quoted span of an answer is searched for in the rendered raw
branch, and every cited id is looked up. The rules (also in docs/commands.md):

Quoted spans (delimiters inside a code span or block do not start another span):
- fenced code blocks (```` ``` ```` or ``~~~``) and ``>`` block quotes are checked line by line: every line
  of at least 3 characters must appear in the history. Lines may keep the ``<id>:<section>:<line>:`` prefix the
  search tools print (it is removed before checking); a line that is only ``...``, ``…`` or ``--`` is skipped;
- inline code (`` `…` ``, any number of backticks) and text in double quotes (``"…"`` or ``“…”``, within one
  paragraph) are checked as a whole;
- a span is checked only when it holds at least ``MIN_QUOTE_CHARS`` characters (after normalising), so short
  terms like `` `npm test` `` are not treated as quotations.

"Appears in the history" means: inside the rendering of one entry of the branch (what ``show`` prints, header
line included), with runs of whitespace (line breaks included) compared as one space, typographic quotes and
apostrophes as plain ones, and case kept. An elision (``...``, ``…``, ``[...]``, ``[…]``) splits a quote into
parts that must appear in that order within one entry. A double-quoted span that contains backticks is also
accepted with the backticks removed.

Citations: ``ENTRY <id>`` (any case, also ``ENTRIES <id>, <id> and <id>``) names an entry; the id must be an
entry of the branch (a unique prefix of 4+ characters counts). A word after ENTRY that cannot be an id (no digit
and not 6+ hex digits, or shorter than 4 characters) is ignored. Bare ids written without ENTRY count as
citations when they are ids of the branch.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TypedDict

from pi_compact.search.render import entry_label
from pi_compact.search.transcript import Transcript

MIN_QUOTE_CHARS = 10
MIN_LINE_CHARS = 3
MAX_WHERE = 3  # entries named per verified quote

_FENCE = re.compile(r"(?ms)^[ \t]*(`{3,}|~{3,})[^\n]*\n(.*?)^[ \t]*\1[ \t]*$")
_BLOCK_LINE = re.compile(r"(?m)^[ \t]{0,3}>[^\n]*(?:\n[ \t]{0,3}>[^\n]*)*")
_INLINE_CODE = re.compile(r"(`+)(?!`)((?:(?!\1).)+?)(?<!`)\1(?!`)", re.S)
_DOUBLE = re.compile(r"\"((?:[^\"\n]|\n(?![ \t]*\n))+?)\"|“((?:[^”\n]|\n(?![ \t]*\n))+?)”")
_ELISION = re.compile(r"\[\s*(?:\.\.\.|…)\s*\]|\(\s*(?:\.\.\.|…)\s*\)|\.\.\.+|…")
_TOOL_PREFIX = re.compile(r"^\s*(?:[A-Za-z0-9_]+[:-][A-Za-z]+[:-]\d+[:-]|\d+:[A-Za-z]+:) ?")
_TYPOGRAPHIC = str.maketrans({"“": '"', "”": '"', "„": '"', "‘": "'", "’": "'", "‚": "'"})

_ID = r"(?!entr(?:y|ies)\b)[A-Za-z0-9][A-Za-z0-9_-]*"
_CITE = re.compile(
    r"\bENTR(?:Y|IES)\b[\s:#`*\[(]*(" + _ID + r"(?:[`*\])]*\s*(?:,|/|&|\band\b|\bor\b)\s*[`*\[(]*" + _ID + r")*)",
    re.I,
)
_CITE_SPLIT = re.compile(r"[\s,/&`*\[\]()]+|\band\b|\bor\b", re.I)
_BARE = re.compile(r"(?<![A-Za-z0-9_-])[A-Za-z0-9_-]{4,}(?![A-Za-z0-9_-])")
_HEX6 = re.compile(r"[0-9a-fA-F]{6,}\Z")


def normalize(text: str) -> str:
    """Whitespace runs as one space, typographic quotes as plain ones, trimmed: how quotes are compared."""
    return " ".join(text.translate(_TYPOGRAPHIC).split())


# ---------------------------------------------------------------------------------------------------------------
# Finding quoted spans


@dataclass(frozen=True, slots=True)
class QuoteSpan:
    """A quoted span of the answer before checking: where it is, what kind, and the parts to look for."""

    kind: str  # "code_block", "block_quote", "code", "double_quote"
    start: int  # in the answer, delimiters included
    end: int
    text: str  # the quoted text without delimiters
    needles: tuple[tuple[tuple[str, ...], ...], ...]  # alternatives; each: lines, each line: ordered parts


def _parts(text: str) -> tuple[str, ...]:
    """The parts of one quoted line or phrase between elisions, normalised; empty ones dropped."""
    return tuple(p for p in (normalize(x) for x in _ELISION.split(text)) if p)


def _inside(pos: int, ranges: Sequence[tuple[int, int]]) -> bool:
    return any(a <= pos < b for a, b in ranges)


def _block_needles(lines: Iterable[str]) -> tuple[tuple[str, ...], ...]:
    out: list[tuple[str, ...]] = []
    for line in lines:
        line = _TOOL_PREFIX.sub("", line, count=1)
        parts = _parts(line)
        if sum(len(p) for p in parts) < MIN_LINE_CHARS or normalize(line) == "--":
            continue
        out.append(parts)
    return tuple(out)


def _size(needle: tuple[tuple[str, ...], ...]) -> int:
    return sum(len(p) for line in needle for p in line)


def find_quotes(answer: str) -> list[QuoteSpan]:
    """Every quoted span long enough to check, in the order they appear."""
    spans: list[QuoteSpan] = []
    taken: list[tuple[int, int]] = []
    for m in _FENCE.finditer(answer):
        body = m.group(2).removesuffix("\n")
        needle = _block_needles(body.split("\n"))
        taken.append((m.start(), m.end()))
        if _size(needle) >= MIN_QUOTE_CHARS:
            spans.append(QuoteSpan("code_block", m.start(), m.end(), body, (needle,)))
    for m in _BLOCK_LINE.finditer(answer):
        if _inside(m.start(), taken):
            continue
        lines = [re.sub(r"^[ \t]{0,3}(?:>[ \t]?)+", "", line) for line in m.group(0).split("\n")]
        needle = _block_needles(lines)
        taken.append((m.start(), m.end()))
        if _size(needle) >= MIN_QUOTE_CHARS:
            spans.append(QuoteSpan("block_quote", m.start(), m.end(), "\n".join(lines), (needle,)))
    code: list[tuple[int, int]] = []
    for m in _INLINE_CODE.finditer(answer):
        if _inside(m.start(), taken):
            continue
        code.append((m.start(), m.end()))
        body = m.group(2)
        parts = _parts(body)
        if sum(len(p) for p in parts) >= MIN_QUOTE_CHARS:
            spans.append(QuoteSpan("code", m.start(), m.end(), body, (((parts),),)))
    blocked = taken + code
    for m in _DOUBLE.finditer(answer):
        if _inside(m.start(), blocked) or _inside(m.end() - 1, blocked):
            continue
        body = m.group(1) if m.group(1) is not None else m.group(2)
        parts = _parts(body)
        if sum(len(p) for p in parts) < MIN_QUOTE_CHARS:
            continue
        alternatives: list[tuple[tuple[str, ...], ...]] = [(parts,)]
        if "`" in body:
            alternatives.append((_parts(body.replace("`", "")),))
        spans.append(QuoteSpan("double_quote", m.start(), m.end(), body, tuple(alternatives)))
    spans.sort(key=lambda s: s.start)
    return spans


# ---------------------------------------------------------------------------------------------------------------
# Checking them against the history


class QuoteJSON(TypedDict):
    text: str
    kind: str
    verified: bool
    entries: list[str]
    missing: list[str]
    start: int
    end: int


@dataclass(frozen=True, slots=True)
class Quote:
    """A quoted span and whether the history holds it."""

    kind: str
    start: int
    end: int
    text: str
    verified: bool
    entries: tuple[str, ...]  # entries it was found in (at most MAX_WHERE; for blocks, those of its lines)
    missing: tuple[str, ...]  # block lines (or the phrase) not found

    def to_json(self) -> QuoteJSON:
        return {
            "text": self.text,
            "kind": self.kind,
            "verified": self.verified,
            "entries": list(self.entries),
            "missing": list(self.missing),
            "start": self.start,
            "end": self.end,
        }


def _in_order(text: str, parts: tuple[str, ...]) -> bool:
    at = 0
    for part in parts:
        found = text.find(part, at)
        if found < 0:
            return False
        at = found + len(part)
    return True


def _entry_texts(transcript: Transcript) -> Iterable[tuple[str, str]]:
    for entry in transcript.entries:
        yield entry_label(entry), normalize(transcript.render(entry).text())


def verify_quotes(transcript: Transcript, answer: str) -> tuple[Quote, ...]:
    """Each quoted span of the answer, checked against the rendered branch (one pass over the entries)."""
    spans = find_quotes(answer)
    if not spans:
        return ()
    # Every distinct line (a tuple of ordered parts) to look for, and where each was found.
    wanted = {line for span in spans for alt in span.needles for line in alt}
    where: dict[tuple[str, ...], list[str]] = {line: [] for line in wanted}
    pending = set(wanted)
    for label, text in _entry_texts(transcript):
        if not pending:
            break
        for line in list(pending):
            if _in_order(text, line):
                where[line].append(label)
                if len(where[line]) >= MAX_WHERE:
                    pending.discard(line)
    out: list[Quote] = []
    for span in spans:
        best: tuple[tuple[str, ...], ...] = span.needles[0]
        for alt in span.needles:
            if all(where[line] for line in alt):
                best = alt
                break
        missing = tuple(" ... ".join(line) for line in best if not where[line])
        entries: list[str] = []
        for line in best:
            for label in where[line]:
                if label not in entries:
                    entries.append(label)
        out.append(Quote(span.kind, span.start, span.end, span.text, not missing, tuple(entries[:MAX_WHERE]), missing))
    return tuple(out)


# ---------------------------------------------------------------------------------------------------------------
# Citations


class CitationJSON(TypedDict):
    id: str
    entry_id: str | None
    exists: bool
    explicit: bool


@dataclass(frozen=True, slots=True)
class Citation:
    """An entry id the answer names, and whether it is an entry of the branch."""

    id: str  # as written
    entry_id: str | None  # the full id it resolves to
    exists: bool
    explicit: bool  # written as ENTRY <id>
    spans: tuple[tuple[int, int], ...]  # where the answer writes it

    def to_json(self) -> CitationJSON:
        return {"id": self.id, "entry_id": self.entry_id, "exists": self.exists, "explicit": self.explicit}


def _looks_like_id(token: str) -> bool:
    return len(token) >= 4 and (any(c.isdigit() for c in token) or _HEX6.match(token) is not None)


def find_citations(transcript: Transcript, answer: str) -> tuple[Citation, ...]:
    """Entry ids named in the answer, in order of first mention, each checked against the branch."""
    found: dict[str, tuple[str | None, bool, list[tuple[int, int]]]] = {}
    order: list[str] = []

    def note(token: str, start: int, explicit: bool) -> None:
        entry = transcript.find(token)
        if entry is None and not (explicit and _looks_like_id(token)):
            return
        if token not in found:
            order.append(token)
            found[token] = (entry_label(entry) if entry is not None else None, explicit, [])
        resolved, was_explicit, spans = found[token]
        found[token] = (resolved, was_explicit or explicit, spans)
        spans.append((start, start + len(token)))

    explicit_at: set[int] = set()
    for m in _CITE.finditer(answer):
        group_start = m.start(1)
        for t in re.finditer(r"[^\s,/&`*\[\]()]+", m.group(1)):
            token = t.group(0)
            if _CITE_SPLIT.fullmatch(token):
                continue
            start = group_start + t.start()
            explicit_at.add(start)
            note(token, start, True)
    labels = {entry_label(e) for e in transcript.entries}
    for m in _BARE.finditer(answer):
        if m.start() not in explicit_at and m.group(0) in labels:
            note(m.group(0), m.start(), False)
    order.sort(key=lambda token: found[token][2][0][0])
    return tuple(
        Citation(token, found[token][0], found[token][0] is not None, found[token][1], tuple(found[token][2]))
        for token in order
    )
