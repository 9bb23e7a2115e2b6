"""The redaction corpus by shape (``tests/redact/corpus/*.txt``, one file a shape), read as cases, and scored.

A file holds one case a line: ``+ KIND | TEXT`` is a text whose secrets, each written between ``⟦`` and ``⟧``, must
be masked as KIND; ``- TEXT`` is a look-alike that must come through unchanged; ``#`` starts a comment. In TEXT,
``\\n`` is a line break, ``\\r`` a carriage return, ``\\t`` a tab, ``\\e`` ESC, ``\\a`` BEL, ``\\\\`` one backslash
and ``\\xHH``, ``\\uHHHH``, ``\\UHHHHHHHH`` any character (so a case may hold JSON escapes: ``\\\\u0041`` is the six
characters ``\\u0041``).

Scoring, over the spans: a secret is *found* when the findings cover every character of it; a finding that
overlaps no secret (in a look-alike, or beside the secret of a case) is a false positive. Precision: findings that
overlap a secret / all findings; recall: secrets found / all secrets.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

CORPUS = Path(__file__).parent / "corpus"
OPEN, CLOSE = "⟦", "⟧"
_HEX = {"x": 2, "u": 4, "U": 8}  # \xHH, \uHHHH, \UHHHHHHHH
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "e": "\x1b", "a": "\x07", "\\": "\\"}


@dataclass(frozen=True)
class CorpusCase:
    shape: str  # the file's name without .txt
    line: int
    kind: str | None  # None: a look-alike
    text: str
    secrets: tuple[tuple[int, int], ...]  # spans in text

    @property
    def name(self) -> str:
        return f"{self.shape}:{self.line}"


def unescape(text: str, where: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(text):
        char = text[i]
        if char != "\\":
            out.append(char)
            i += 1
            continue
        code = text[i + 1 : i + 2]
        if code in _ESCAPES:
            out.append(_ESCAPES[code])
            i += 2
        elif code in _HEX and len(text) >= i + 2 + _HEX[code]:
            out.append(chr(int(text[i + 2 : i + 2 + _HEX[code]], 16)))
            i += 2 + _HEX[code]
        else:
            raise ValueError(f"{where}: unknown escape \\{code}")
    return "".join(out)


def parse_case(shape: str, number: int, line: str) -> CorpusCase:
    where = f"{shape}.txt:{number}"
    if line.startswith("- "):
        kind, body = None, line[2:]
    elif line.startswith("+ ") and " | " in line:
        kind, body = line[2:].split(" | ", 1)
        kind = kind.strip()
    else:
        raise ValueError(f"{where}: a case starts with '+ KIND | ' or '- '")
    text = unescape(body, where)
    plain: list[str] = []
    secrets: list[tuple[int, int]] = []
    at, size, start = 0, 0, -1
    for i, char in enumerate(text):
        if char not in (OPEN, CLOSE):
            continue
        plain.append(text[at:i])
        size += i - at
        at = i + 1
        if char == OPEN and start < 0:
            start = size
        elif char == CLOSE and start >= 0:
            secrets.append((start, size))
            start = -1
        else:
            raise ValueError(f"{where}: unbalanced {OPEN} {CLOSE}")
    plain.append(text[at:])
    if start >= 0 or (kind is None) != (not secrets):
        raise ValueError(f"{where}: a '+' case marks its secrets, a '-' case none")
    return CorpusCase(shape, number, kind, "".join(plain), tuple(secrets))


def load_corpus(folder: Path = CORPUS) -> list[CorpusCase]:
    cases: list[CorpusCase] = []
    for path in sorted(folder.glob("*.txt")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip() and not line.startswith("#"):
                cases.append(parse_case(path.stem, number, line))
    return cases


@dataclass
class Tally:
    secrets: int = 0
    found: int = 0  # secrets whose every character is covered
    findings: int = 0
    false: int = 0  # findings that overlap no secret
    wrong_kind: int = 0  # secrets found, but masked as another kind
    misses: list[str] = field(default_factory=list)
    false_positives: list[str] = field(default_factory=list)

    @property
    def precision(self) -> float:
        return 1.0 if not self.findings else (self.findings - self.false) / self.findings

    @property
    def recall(self) -> float:
        return 1.0 if not self.secrets else self.found / self.secrets


Finder = Callable[[str], Sequence[tuple[str, int, int]]]  # text -> (kind, start, end) of each finding


def score(cases: Iterable[CorpusCase], find: Finder) -> dict[str, Tally]:
    """The tally of each shape, and of them all under ``"all"``."""
    tallies: dict[str, Tally] = {}
    for case in cases:
        findings = list(find(case.text))
        for tally in (tallies.setdefault(case.shape, Tally()), tallies.setdefault("all", Tally())):
            tally.findings += len(findings)
            for kind, start, end in findings:
                if not any(start < s_end and s_start < end for s_start, s_end in case.secrets):
                    tally.false += 1
                    tally.false_positives.append(f"{case.name}: {kind} {case.text[start:end]!r}")
            for s_start, s_end in case.secrets:
                tally.secrets += 1
                covering = [(k, a, b) for k, a, b in findings if a < s_end and s_start < b]
                covered = sorted((max(a, s_start), min(b, s_end)) for _, a, b in covering)
                at = s_start
                for a, b in covered:
                    if a > at:
                        break
                    at = max(at, b)
                if at >= s_end:
                    tally.found += 1
                    if any(k != case.kind for k, _, _ in covering):
                        tally.wrong_kind += 1
                        tally.misses.append(f"{case.name}: found as {[k for k, _, _ in covering]}, not {case.kind}")
                else:
                    tally.misses.append(f"{case.name}: {case.kind} {case.text[s_start:s_end]!r}")
    return tallies
