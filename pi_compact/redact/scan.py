"""Finding the secrets in a text: every rule (``rules.RULES``) and scanner (private-key blocks, secret-named
assignments) run once over the text, and over it decoded when it holds JSON escapes; the matches made
non-overlapping spans, those already masked left out."""

from __future__ import annotations

import base64
import binascii
from bisect import bisect_left, bisect_right
from collections.abc import Callable, Iterator

from pi_compact.redact.assignments import assignments, config_elements
from pi_compact.redact.finding import Finding
from pi_compact.redact.patterns import PLACEHOLDER, compile_pattern
from pi_compact.redact.private_keys import private_key_blocks
from pi_compact.redact.rules import RULES

SCANNERS: tuple[Callable[[str], Iterator[Finding]], ...] = (private_key_blocks, assignments, config_elements)


def _word_char(char: str) -> bool:
    return char.isalnum() or char == "_"


# A colour code whose ESC a display replaced (``?[01;31m?[K``, ``␛[K``) does not glue the key after it to a word.
_CSI_BEFORE = compile_pattern("(?:\x1b|\\?|\u241b)\\[[0-9;?]*[@-~]$")
_WRAP_LINE = 512  # characters of a wrapped key's next line looked at


def _wrapped_end(text: str, end: int, alphabet: str) -> int:
    """Where a key that ends at a line break ends, when a terminal wrapped it: its next line (or two) holds only
    characters of the key (at least 8 of them, or a digit), or starts with at least 16 of them."""
    for _ in range(3):
        if text.startswith("\r\n", end):
            start = end + 2
        elif text.startswith("\n", end):
            start = end + 1
        else:
            break
        stop, limit = start, min(len(text), start + _WRAP_LINE)
        while stop < limit and text[stop] in alphabet:
            stop += 1
        run = text[start:stop]
        at_line_end = stop == len(text) or text[stop] in "\r\n"
        if not run or not ((at_line_end and (len(run) >= 8 or any(c.isdigit() for c in run))) or len(run) >= 16):
            break
        end = stop
        if not at_line_end:
            break
    return end


def _rule_findings(text: str) -> Iterator[Finding]:
    for rule in RULES:
        groups = [i for name, i in rule.pattern.groupindex.items() if name.startswith("secret")]
        for match in rule.pattern.finditer(text):
            if (
                rule.boundary
                and match.start() > 0
                and _word_char(text[match.start() - 1])
                and _CSI_BEFORE.search(text[max(0, match.start() - 24) : match.start()]) is None
            ):
                continue
            if rule.after and match.end() < len(text) and text[match.end()] in rule.after:
                continue
            if rule.accept is not None and not rule.accept(match):
                continue
            start, end = match.span(next((i for i in groups if match.group(i)), 0))
            if rule.wrap:
                end = _wrapped_end(text, end, rule.wrap)
            yield Finding(rule.kind, start, end)


def _scanned(text: str) -> Iterator[Finding]:
    for scanner in SCANNERS:
        yield from scanner(text)
    yield from _encoded(text)


# Keys written in base64 (a Kubernetes secret's data, ``echo … | base64``): a run of base64 that starts as the
# base64 of a key's header or an issuer's prefix is decoded and read; what it holds masks the whole run.
_ENCODED_PREFIXES = (
    "-----BEGIN",
    "---- BEGIN",
    "sk-ant-",
    "sk-proj-",
    "sk-or-v1-",
    "ghp_",
    "gho_",
    "ghu_",
    "ghs_",
    "github_pat_",
    "glpat-",
    "xoxb-",
    "xoxp-",
    "AKIA",
    "AIza",
    "hf_",
    "npm_",
    "sk_live_",
    "AGE-SECRET-KEY-1",
    "PuTTY-User-Key-File",
)
_ENCODED = compile_pattern(
    "(?:"
    + "|".join(sorted({base64.b64encode(p.encode())[: len(p) // 3 * 4].decode() for p in _ENCODED_PREFIXES}))
    + r")[A-Za-z0-9+/]{12,}={0,2}(?:\r?\n[A-Za-z0-9+/]{4,}={0,2})*"
)


def _encoded(text: str) -> Iterator[Finding]:
    for match in _ENCODED.finditer(text):
        start, end = match.span()
        if start > 0 and (_word_char(text[start - 1]) or text[start - 1] in "+/"):
            continue
        data = "".join(match.group().split())
        try:
            decoded = base64.b64decode(data + "=" * (-len(data) % 4)).decode("utf-8", "replace")
        except (binascii.Error, ValueError):
            continue
        inner = next(_rule_findings(decoded), None) or next(private_key_blocks(decoded), None)
        if inner is not None:
            yield Finding(inner.kind, start, end)


_ESCAPE = compile_pattern(r"\\(?:u[0-9a-fA-F]{4}|[\"\\/bfnrt])")
_ESCAPED = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def _decoded(text: str) -> tuple[str, Callable[[int], int]] | None:
    """The text with its JSON escapes decoded, and a map from a position in it to one in the text; None when the
    text has none."""
    if "\\" not in text:
        return None
    parts: list[str] = []
    at = 0
    positions: list[int] = []  # where each decoded escape is in the decoded text
    shifts: list[int] = []  # characters the escapes up to and including it took beyond one
    shift = 0
    for match in _ESCAPE.finditer(text):
        start, end = match.start(), match.end()
        parts.append(text[at:start])
        code = match.group()
        parts.append(chr(int(code[2:], 16)) if code[1] == "u" else _ESCAPED[code[1]])
        positions.append(start - shift)
        shift += end - start - 1
        shifts.append(shift)
        at = end
    if not positions:
        return None
    parts.append(text[at:])

    def to_text(position: int) -> int:
        k = bisect_left(positions, position)  # escapes before this position
        return position + (shifts[k - 1] if k else 0)

    return "".join(parts), to_text


# Characters no one sees: zero-width spaces and joiners, the word joiner, the BOM, the soft hyphen, bidirectional
# marks and overrides, tag characters. Inside a key they hide it from the patterns, not from a reader.
_INVISIBLE = "\u00ad\u061c\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\U000e0000-\U000e007f"
_HIDDEN = compile_pattern(f"[{_INVISIBLE}]")
_ANSI = compile_pattern(
    f"\x1b(?:\\[[0-9;:?<=>]*[ -/]*[@-~]|\\][^\x07\x1b]{{0,512}}(?:\x07|\x1b\\\\)|[@-Z\\\\-_])|[{_INVISIBLE}]+"
)  # CSI (colours, ``\x1b[K``), OSC (titles, ``\x1b]8;;…`` links), two-character escapes, invisible characters


def _without_ansi(text: str) -> tuple[str, Callable[[int], int], Callable[[int], int]] | None:
    """The text with its terminal escape sequences and invisible characters removed, and maps from a start and
    from an end in it to the text (a secret that starts right after a sequence, or ends right before one, leaves
    the sequence out)."""
    positions: list[int] = []  # where each removed sequence was, in the stripped text
    removed: list[int] = []  # characters removed up to and including it
    parts: list[str] = []
    at = 0
    gone = 0
    for match in _ANSI.finditer(text):
        start, end = match.start(), match.end()
        parts.append(text[at:start])
        positions.append(start - gone)
        gone += end - start
        removed.append(gone)
        at = end
    if not positions:
        return None
    parts.append(text[at:])

    def start_in_text(position: int) -> int:
        k = bisect_right(positions, position)
        return position + (removed[k - 1] if k else 0)

    def end_in_text(position: int) -> int:
        k = bisect_left(positions, position)
        return position + (removed[k - 1] if k else 0)

    return "".join(parts), start_in_text, end_in_text


_View = tuple[str, Callable[[int], int], Callable[[int], int]]


def _then(first: Callable[[int], int], second: Callable[[int], int]) -> Callable[[int], int]:
    return lambda position: second(first(position))


def _views(text: str) -> list[_View]:
    """The text, and what else it is read as: its JSON escapes decoded, its terminal escapes removed (or both),
    each with maps from a start and from an end in it to the text."""

    def same(position: int) -> int:
        return position

    views: list[_View] = [(text, same, same)]
    decoded = _decoded(text)
    if decoded is not None:
        views.append((decoded[0], decoded[1], decoded[1]))
    for view, start_map, end_map in list(views):
        if "\x1b" not in view and _HIDDEN.search(view) is None:
            continue
        stripped = _without_ansi(view)
        if stripped is not None:
            views.append((stripped[0], _then(stripped[1], start_map), _then(stripped[2], end_map)))
    return views


def find_secrets(text: str) -> list[Finding]:
    """Every detected secret in text, as non-overlapping spans in order (the earlier, then longer, match wins)."""
    views = _views(text)
    found: list[Finding] = []
    # An issuer's format names the secret better than the assignment it is in: on the same span, it comes first.
    for find in (_rule_findings, _scanned):
        for view, start_map, end_map in views:
            if len(views) == 1:
                found.extend(find(view))
            else:
                found.extend(Finding(f.kind, start_map(f.start), end_map(f.end)) for f in find(view))
    if not found:
        return []
    found.sort(key=lambda f: (f.start, -(f.end - f.start)))
    masked = [(m.start(), m.end()) for m in PLACEHOLDER.finditer(text)] if "[REDACTED:" in text else []
    masked_starts = [start for start, _ in masked]
    out: list[Finding] = []
    for finding in found:
        if out and finding.start < out[-1].end:
            continue
        k = bisect_right(masked_starts, finding.end) - 1
        if k >= 0 and masked[k][1] > finding.start:  # already masked (text masked twice)
            continue
        out.append(finding)
    return out
