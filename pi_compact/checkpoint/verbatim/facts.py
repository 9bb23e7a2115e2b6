"""Facts that only tool output held, and the salient parts of a text the cap shortens.

Tool outputs are removed from a checkpoint, but some of what they said is what the next step needs: the file a
search found, the test that failed, the error a command printed, the version a tool reported. When a span is built,
``output_facts`` picks those out of the outputs it removes, as a small deduplicated list of ``Fact`` (entry id,
kind, text), stored with the span and carried forward like it. Only lines that match a narrow pattern are taken,
each cut short; nothing is paraphrased.

``salient_parts`` does the same for the part of a long user message a stub leaves out: the paths, identifiers,
numbers and error lines in it, so that a shortened message keeps what identifies it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from pi_compact.checkpoint.verbatim.signatures import relative_path, shorten

FACT_KINDS = ("error", "test", "path", "version")
FACT_CHARS = 160
MAX_PATHS_PER_OUTPUT = 6
MAX_TESTS_PER_OUTPUT = 4
# At most this many facts of each kind per span, the newest kept: what the next step needs is rarely older.
PER_SPAN = {"error": 12, "test": 10, "path": 16, "version": 4}
# The cap drops facts of the first kinds first (a path a search found is easier to find again than an error).
DROP_ORDER = ("path", "version", "test", "error")

# Paths: at least one directory and a name with an extension, or a bare name with a common source extension.
_PATH = re.compile(
    r"(?<![\w/.@:-])(?:\.{0,2}/)?(?:[\w@+-][\w.@+-]*/)+[\w@+-][\w.@+-]*\.[A-Za-z][\w]{0,7}(?::\d+(?::\d+)?)?"
    r"|(?<![\w/.@-])[\w-]+\.(?:py|ts|tsx|js|jsx|mjs|cjs|go|rs|java|kt|rb|php|c|h|cc|cpp|hpp|cs|swift|json|ya?ml|toml"
    r"|md|sql|sh|css|scss|html|vue|svelte|lock|cfg|ini|env|proto|tf)(?::\d+(?::\d+)?)?(?![\w.])"
)
_ERROR_LINE = re.compile(
    r"\b(?:error|exception|traceback|failed|failure|fatal|panic|cannot|can't|denied|not found|no such|undefined"
    r"|invalid|refused|timed? ?out|segmentation fault|E[A-Z]{3,})\b",
    re.IGNORECASE,
)
_TEST_LINE = re.compile(
    r"^\s*(?:FAILED\s+\S+|FAIL\s+\S+|ERROR\s+\S+::\S+|--- FAIL: \S+|not ok \d+ .+|[✗✕×✘]\s+.+"
    r"|\S+::\S+\s+(?:\.\.\.\s+)?(?:FAILED|ERROR)\b.*"  # pytest -v
    r"|test\w*\s+\([\w.]+\)\s+\.\.\.\s+(?:FAIL|ERROR)\b.*"  # unittest -v
    r"|[=\s]*\d+ (?:failed|passed|failing|passing)\b.*)",  # a runner's summary line
)
_TEST_WORDS = ("FAIL", "ERROR", "failed", "passed", "failing", "passing", "not ok", "✗", "✕", "×", "✘")
TEST_TAIL_LINES = 400  # where a runner's outcome lines are: its last lines
_VERSION = re.compile(r"\b([A-Za-z][\w.+-]{1,30})(?:\s+version)?[\s@:/v]+v?(\d+\.\d+(?:\.\d+){0,2}(?:[-+][\w.]+)?)\b")
_SEARCH_TOOLS = frozenset({"grep", "find", "ls", "glob", "rg", "search", "list"})
_SEARCH_COMMAND = re.compile(r"\b(?:grep|rg|find|ls|fd|git (?:status|diff --stat|ls-files|log --stat)|tree)\b")
_VERSION_COMMAND = re.compile(r"--version\b|\s-V\b|\bversion\b")
_VERSION_FIELD = re.compile(r"^Name:\s*(\S+)$.*?^Version:\s*(\S+)$", re.MULTILINE | re.DOTALL)
_IDENTIFIER = re.compile(
    r"https?://\S+"
    r"|`[^`\n]{2,60}`"
    r"|\b[A-Za-z_][\w]*(?:[._:][\w]+)+\(?\)?"  # dotted / namespaced names: pkg.mod.fn, a::b
    r"|\b[a-z]+[A-Z]\w*\b|\b[A-Z][a-z]+[A-Z]\w*\b"  # camelCase, PascalCase with an inner capital
    r"|\b[A-Za-z]+_[\w]+\b"  # snake_case, UPPER_CASE
    r"|\b[0-9a-f]{7,40}\b"  # commit-like hashes
    r"|\b\d[\d.:,-]{2,}\d\b|\b\d{3,}\b"  # numbers, versions, times, ports
)


@dataclass(frozen=True, slots=True)
class Fact:
    """One fact from a removed tool output: the entry holding the output, what kind of fact, the text."""

    entry: str
    kind: str
    text: str
    call: str = ""  # for an error: the failed call's signature (what a later success must repeat)

    @property
    def key(self) -> tuple[str, str]:
        """What makes two facts the same: the kind and text (and, for an error, the call that failed)."""
        return (self.kind, f"{self.call}\n{self.text}" if self.kind == "error" else self.text)

    def to_json(self) -> dict[str, str]:
        data = {"id": self.entry, "kind": self.kind, "text": self.text}
        if self.call:
            data["call"] = self.call
        return data

    @classmethod
    def from_json(cls, data: Any) -> Fact:
        if not isinstance(data, dict):
            raise ValueError("a saved fact is not an object")
        values = [data.get(k) for k in ("id", "kind", "text")]
        if not all(isinstance(v, str) for v in values) or values[1] not in FACT_KINDS:
            raise ValueError("a saved fact lacks id/kind/text strings")
        call = data.get("call", "")
        return cls(str(values[0]), str(values[1]), str(values[2]), call if isinstance(call, str) else "")


def _cut(text: str, limit: int = FACT_CHARS) -> str:
    """One line (runs of whitespace made one space), at most ``limit`` characters."""
    return shorten(" ".join(text.split()), limit)


def output_text(result: dict[str, Any] | None) -> str:
    """The text of a tool result (its text blocks joined); empty for images or no result."""
    if not isinstance(result, dict):
        return ""
    content = result.get("content")
    if isinstance(content, str):
        return content
    blocks = content if isinstance(content, list) else []
    parts = [str(block.get("text", "")) for block in blocks if isinstance(block, dict) and block.get("type") == "text"]
    return "\n".join(parts)


_EXIT_NOTE = re.compile(r"^(?:Command exited with code -?\d+|\(?exit (?:code|status) -?\d+\)?)$", re.IGNORECASE)


_SPECIFIC_ERROR = re.compile(
    r"\b\w*(?:Error|Exception|Exit)\b[:(]|\berror(?:\[\w+\])?:|^E\s+\S|\bFAILED\s|\bpanic:|\bfatal:|\bTS\d{4}\b"
)
_SUMMARY_LINE = re.compile(r"^(?:Found \d+ errors?\b.*|=+ .* =+|\d+ (?:failed|errors?)\b.*|Traceback \(most recent.*)$")


def error_line(text: str) -> str:
    """The most telling line of a failed output: a line that names a specific error (``KeyError: …``,
    ``error[E0308]: …``, ``FAILED test``), else one that names an error at all, counts and banners last, else the
    first line; the exit notice Pi's bash tool appends is never it. In a traceback the last such line (the
    exception), elsewhere the first (a compiler's or linter's first error is the one the rest follow from)."""
    lines = [line.strip() for line in text.split("\n") if line.strip() and not _EXIT_NOTE.match(line.strip())]
    named = [line for line in lines if _ERROR_LINE.search(line) or _SPECIFIC_ERROR.search(line)]
    last = any(line.startswith("Traceback (most recent call last)") for line in lines)
    for pool in (
        [line for line in named if _SPECIFIC_ERROR.search(line) and not _SUMMARY_LINE.match(line)],
        [line for line in named if not _SUMMARY_LINE.match(line)],
        named,
    ):
        if pool:
            return pool[-1] if last else pool[0]
    return lines[0] if lines else ""


_TEST_LINE_AT = re.compile(_TEST_LINE.pattern.removeprefix("^"))  # the same, matched at a line's start in a text
_ASCII_TEST_WORDS = tuple(word for word in _TEST_WORDS if word.isascii())


def _tail_start(text: str) -> int:
    """Where the last ``TEST_TAIL_LINES`` lines of ``text`` begin."""
    if text.count("\n") < TEST_TAIL_LINES:
        return 0
    at = len(text)
    for _ in range(TEST_TAIL_LINES):
        at = text.rfind("\n", 0, at)
    return at + 1


def outcome_lines(text: str) -> list[str]:
    """The lines among the last ``TEST_TAIL_LINES`` of ``text`` that a test runner's outcome line matches (shorter
    than 400 characters), stripped, in order. Every such line names a test word, so only the lines a search for
    each word finds are matched, in place (this runs for every output a prune stub describes)."""
    start = _tail_start(text)
    find, rfind, match = text.find, text.rfind, _TEST_LINE_AT.match
    tried: set[int] = set()  # where each line tried begins
    found: list[tuple[int, int]] = []
    for word in _ASCII_TEST_WORDS if text.isascii() else _TEST_WORDS:
        at = find(word, start)
        while at >= 0:
            begin = max(start, rfind("\n", start, at) + 1)
            end = find("\n", at)
            if end < 0:
                end = len(text)
            if begin not in tried:
                tried.add(begin)
                if end - begin < 400 and match(text, begin, end):
                    found.append((begin, end))
            at = find(word, end)  # the next line naming it (no word holds a newline)
    return [text[begin:end].strip() for begin, end in sorted(found)]


def facts_of_output(
    entry: str, tool: str, arguments: Any, result: dict[str, Any] | None, outcome: str, cwd: str, call: str = ""
) -> list[Fact]:
    """What one removed output says that the next step may need (deduplicated later, per span)."""
    text = output_text(result)
    if not text or text.isspace():
        return []
    facts: list[Fact] = []
    command = arguments.get("command") if isinstance(arguments, dict) else None
    command = command if isinstance(command, str) else ""
    if outcome == "error":
        line = error_line(text)
        if line:
            facts.append(Fact(entry, "error", _cut(line), call))
    tests = outcome_lines(text)
    said = {fact.text for fact in facts}
    for line in tests[:MAX_TESTS_PER_OUTPUT]:
        if _cut(line) not in said:
            facts.append(Fact(entry, "test", _cut(line)))
    if tool in _SEARCH_TOOLS or _SEARCH_COMMAND.search(command):
        paths = [relative_path(found, cwd) for found in _PATH.findall(text[:200_000])]
        for path in list(dict.fromkeys(paths))[:MAX_PATHS_PER_OUTPUT]:
            facts.append(Fact(entry, "path", path))
    if _VERSION_COMMAND.search(command) or tool == "version":
        for match in list(_VERSION.finditer(text[:4000]))[:3]:
            facts.append(Fact(entry, "version", _cut(f"{match[1]} {match[2]}")))
    fields = _VERSION_FIELD.finditer(text[:20000]) if text.find("Name:", 0, 20000) >= 0 else ()
    for match in list(fields)[:3]:  # pip show, npm view, …
        facts.append(Fact(entry, "version", _cut(f"{match[1]} {match[2]}")))
    return facts


def dedupe(facts: Iterable[Fact], seen: set[tuple[str, str]], visible: str) -> list[Fact]:
    """Facts not seen before (by kind and text) and not already in the span's visible text, at most
    ``MAX_FACTS_PER_SPAN``, the later of two equal ones dropped. ``seen`` is updated."""
    out: list[Fact] = []
    for fact in facts:
        key = fact.key
        if key in seen or (fact.kind == "path" and fact.text.split(":", 1)[0] in visible):
            continue
        seen.add(key)
        out.append(fact)
    kept: list[Fact] = []
    for kind, limit in PER_SPAN.items():
        kept.extend([fact for fact in out if fact.kind == kind][-limit:])
    order = {id(fact): i for i, fact in enumerate(out)}
    return sorted(kept, key=lambda fact: order[id(fact)])


def render_facts(facts: Iterable[Fact]) -> list[str]:
    """One line per entry and kind, ``- [id] kind: a · b · c``, in the order the cap drops them (``DROP_ORDER``,
    oldest first within a kind)."""
    grouped: dict[tuple[str, str], list[str]] = {}
    for fact in facts:
        grouped.setdefault((fact.entry, fact.kind), []).append(fact.text)
    rank = {kind: i for i, kind in enumerate(DROP_ORDER)}
    ordered = sorted(grouped.items(), key=lambda pair: rank.get(pair[0][1], 0))  # stable: oldest first in a kind
    return [f"- [{entry}] {kind}: {' · '.join(texts)}" for (entry, kind), texts in ordered]


_TIMESTAMP = re.compile(r"^\d{1,4}[-:/]\d{1,2}(?:[-:/T ]\d{1,2})*(?:[.,]\d+)?Z?$")
MAX_NUMBERS = 3


def salient_parts(text: str, limit: int) -> str:
    """What identifies the part of a message a stub leaves out, within ``limit`` characters (joined with `` · ``),
    in order of use: its last line when short (often the actual ask), its error lines, paths, URLs and `code`,
    names (dotted, snake_case, camelCase), then at most a few numbers (dates and times left out)."""
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    tiers: list[list[str]] = [[], [], [], [], []]
    if lines and len(lines[-1]) <= 120:
        tiers[0].append(lines[-1])
    for line in lines:
        if _SPECIFIC_ERROR.search(line) and not _SUMMARY_LINE.match(line) and len(line) <= 200:
            tiers[1].append(_cut(line, 90))
    tiers[2].extend(match[0] for match in _PATH.finditer(text))
    numbers = 0
    for match in _IDENTIFIER.finditer(text):
        token = match[0]
        if token[0].isdigit():
            if _TIMESTAMP.match(token) or numbers >= MAX_NUMBERS:
                continue
            numbers += 1
            tiers[4].append(token)
        else:
            tiers[3].append(token)
    out: list[str] = []
    used = 0
    for tier in tiers:
        for part in tier:
            if any(part in earlier for earlier in out):
                continue
            cost = len(part) + 3
            if used + cost > limit:
                continue
            out.append(part)
            used += cost
    return " · ".join(out)
