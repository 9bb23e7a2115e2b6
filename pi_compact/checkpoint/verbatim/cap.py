"""The size cap: fit the rendered spans into a character budget, user messages last.

Non-user content goes first (V20 step 1), in stages that each keep more per character than removing it would,
oldest first within each stage:

1. a run of tool calls and replies (a *segment*, see spans.segments) is condensed into its ledger line: files
   written and edited, commands run and how they ended, errors resolved or not, the lead sentence of the reply;
2. ledger lines are shortened (counts in place of read paths and commands, a shorter lead sentence);
3. facts taken from removed tool outputs are dropped;
4. ledger lines are cut to their terse form (what was decided or found, as its value-bearing clause; files
   changed; commits and unresolved failures);
5. terse lines are cut to their finding form (what was decided or found, and commits: what no other part of the
   checkpoint shows);
6. the facts that are errors are dropped;
7. finding lines are removed (``[…]`` stands for a removed run between two kept items).

Within a stage, what goes first is what is worth least to a resumed agent: finding lines are removed lowest value
per character first (oldest first among equals), and a shortened user message keeps its most valuable sentences (see
``sentence_value``: rulings, values, numbers, paths, identifiers, errors), in their order, the gaps marked.

Then (V20 step 2) long user messages become marked stubs that keep their first sentence (often the ask) and the
sentences of the rest that carry the most, then the paths, identifiers and numbers left; when stubs were needed,
stages 1–7 are run again from the start so that the newest runs come back in whatever form fits. Then every user
message is cut to a short trace (its head, its id), oldest first, then to a bare one (its first 40 characters),
keeping ``FINDING_SHARE`` of the budget for the finding lines worth most (what a turn decided is something of that
turn) unless that would remove a user message; and only as a last resort (V20 step 3), with no such room, are the
oldest user messages removed, the last one reached keeping the longest stub that fits.

Only the rendered text is trimmed: the saved spans in ``details`` stay whole, so every later checkpoint trims again
from the originals. A stub is never shortened twice, and a larger cap (or ``--no-cap``) later brings the content
back. Lengths are JavaScript lengths (UTF-16 units), the unit of Pi's chars/4 estimate.
"""

from __future__ import annotations

import bisect
import itertools
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pi_compact.checkpoint.verbatim.facts import salient_parts
from pi_compact.checkpoint.verbatim.ledger import STATED_VALUE, STATING_WORDS, resolutions
from pi_compact.checkpoint.verbatim.spans import (
    CONDENSED,
    CONDENSED_HEAD,
    EMPTIED_SUFFIX,
    FINDING,
    GONE,
    RECOVER_HINT,
    SHORT,
    TERSE,
    Span,
    SpanLayout,
    TrimState,
    render_span,
    span_layout,
)
from pi_compact.js import js_len

SPAN_SEPARATOR = "\n\n"
LONG_USER_CHARS = 800  # a user message longer than this may be shortened in step 2
STUB_CHARS = 400  # what a shortened user message keeps (head and salient parts together)
TRACE_CHARS = 150  # what a user message keeps when every message is cut to a short stub (its marks are short)
MIN_TRACE_CHARS = 40  # the last trace before any user message is removed: its opening words and its id
MIN_STUB_CHARS = 60  # the shortest stub worth keeping when the last resort reaches a user message
MIN_CONVERSATION_CHARS = 500  # the conversation part never gets a smaller budget than this
MARKER_CHARS = 60  # about what one "[… removed by the size cap: entries a..b …]" line costs
# The blocks the cap does not trim as it trims the spans (standing instructions, unresolved errors) take at most this
# share of what the cap leaves after the introduction, the startup reads, the file lists and the boundary, and at
# least BLOCK_MIN_CHARS: past it they keep their most valuable lines, so the conversation keeps the rest of the
# budget for something of every compacted turn. Measured in bench/RESULTS.md: 0.35 and 0.6 keep more user-message
# traces but lose more rules, values, rulings and sentences than they gain, at every tight cap.
BLOCK_SHARE = 0.85
BLOCK_MIN_CHARS = 400
# When user messages must be shortened, at most this share of the conversation budget is kept for the finding lines
# worth most (so that something of what the replies decided survives), unless keeping it would remove a user message.
FINDING_SHARE = 0.05
TRACE_COST_CHARS = 100  # what the shortest trace of a user message costs: header, opening words, mark, gap marker
GAP = "[…]"  # between two kept sentences of a shortened message
# The mark of a shortened user message (the span's note says the size cap did it and how to recover it): what is
# shown of how many characters, and for a stub what else it keeps of the rest. Short, since every message may carry
# one: ``[92 of 1897 chars; also: …]``.

# What makes a sentence or a line worth keeping for a resumed agent, and how much (see ``sentence_value``).
_PATHLIKE = re.compile(
    r"(?<![\w.])(?:[\w@.+-]+/)+[\w@.+-]+|\b[\w-]+\.(?:py|ts|tsx|js|jsx|go|rs|json|ya?ml|toml|md|sql|sh)\b"
)
_NUMBER = re.compile(
    r"(?<![\w.:-])\d+(?:[.,]\d+)*(?:\s?(?:ms|s|KB|MB|GB|%|px|rows|points|times|seconds|minutes))?(?![\w:-])"
)
_STAMP = re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]?\d{0,2}:?\d{0,2}|\b\d{1,2}:\d{2}(?::\d{2})?\b")
_NAME = re.compile(r"`[^`\n]{2,60}`|\b[A-Za-z_]\w*(?:[._:]\w+)+\b|\b[a-z]+[A-Z]\w*\b|\b[A-Za-z]+_\w+\b|\b[a-z]+-\d+\b")
_RULING = re.compile(
    r"\b(?:never|always|don't|do not|must|mustn't|may|allowed|approved|denied|forbidden|only|no longer|"
    r"instead|from now on|make sure|keep|prefer|rather)\b",
    re.IGNORECASE,
)
_FAILURE = re.compile(r"\b(?:error|exception|failed|fails|failing|traceback|fatal|refused|denied|not found)\b", re.I)
_DECIDED = re.compile(r"\b(?:decided|decision|chose|going with|the plan|found|because|caps|limit|budget)\b", re.I)
_STATED = re.compile(rf"\b(?:{STATING_WORDS}){STATED_VALUE}", re.IGNORECASE)  # a value stated (ledger's words)
_LOGLINE = re.compile(r"^\s*(?:\d{4}-\d{2}-\d{2}|\[\d|[A-Z]{4,5}\s+[\[\w.]+[\]:=]|at\s+\S+\s\(|File \")")
_WORDY = re.compile(r"[A-Za-z]{2,}")  # a piece with no word in it (a ``` fence, a row of dashes) says nothing
_CLAUSE_SPLIT = re.compile(r"(?<=[,;:.!?])\s+(?!\()|\s+(?=—|–)")  # the clauses of one line of a block
LINE_CHARS = 100  # a block line over its share is first cut to its clauses worth most, within this
_SUPERSEDED = re.compile(r' \(supersedes (\[[^\]]+\]) ".*"\)$')  # a standing value's quote of the one it replaced
_ITEM_PREFIX = re.compile(r"^- (?:\[[^\]]*\] )?")  # a block line's "- [entry id] "
_SENTENCE_SPLIT = re.compile(r"(?<=[.!?;])\s+(?=[A-Z`\[(\"'])|\n+")


@dataclass(frozen=True, slots=True)
class CapResult:
    """The rendered spans after the cap; ``trimmed[i]`` says whether span i was changed."""

    text: str
    trimmed: tuple[bool, ...]
    chars: int
    fits: bool
    users_removed: bool = False  # the last resort was reached: some user message is gone


def sentence_value(text: str, whole: bool = True) -> float:
    """What a sentence (or a line) is worth to an agent resuming the task, from what it names: a ruling or a
    constraint ("never", "must", "may", "only"…), paths, numbers that are values (not dates or times), identifiers,
    errors, decisions and findings. A line of a pasted log or stack trace is worth less than a sentence saying the
    same, since the value in it is rarely the one the user meant."""
    value = 0.0
    value += 2.5 * min(len(_PATHLIKE.findall(text)), 2)
    value += 2 * min(len(_NUMBER.findall(_STAMP.sub(" ", text))), 2)
    value += 1.5 * min(len(_NAME.findall(_PATHLIKE.sub(" ", text))), 3)  # a path's file name is no other name
    value += 5 * bool(_RULING.search(text))
    value += 2 * bool(_FAILURE.search(text))
    value += 1.5 * bool(_DECIDED.search(text))
    value += 2 * bool(_STATED.search(text))
    if _LOGLINE.match(text) or _STAMP.search(text):
        value -= 3
    words = len(_ITEM_PREFIX.sub("", text).split())
    if whole and words < 8 and value > 0:  # a fragment ("do not redo it.") means little out of its message
        value *= (words / 8) ** 2
    return value


def _pieces(text: str, splitter: re.Pattern[str] = _SENTENCE_SPLIT) -> list[tuple[int, int]]:
    """(start, end) of each sentence or line of ``text`` (each clause, with another ``splitter``), in order, blank
    ones left out."""
    out = []
    start = 0
    for match in itertools.chain(splitter.finditer(text), [None]):
        end = match.start() if match is not None else len(text)
        piece = text[start:end]
        if piece.strip():
            lead = len(piece) - len(piece.lstrip())
            out.append((start + lead, start + len(piece.rstrip())))
        if match is not None:
            start = match.end()
    return out


def _cut_at_word(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ")
    return (cut[:space] if space >= limit * 2 // 3 else cut).rstrip()


_VALUE_TOKEN = (_PATHLIKE, _NAME, _NUMBER)


def _cut_around_value(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters at words, keeping its first path, identifier or number (what a
    cut sentence is worth keeping for) with the words around it; ``…`` where it was cut."""
    head = _cut_at_word(text, limit)
    plain = _STAMP.sub(lambda x: " " * len(x[0]), text)
    spots = sorted((m.start(), m.end()) for pattern in _VALUE_TOKEN for m in pattern.finditer(plain))
    if not spots:
        return head + "…"
    first, end = spots[0]
    if first < len(head) or end - first > limit - 2:  # the head reaches the first value (or nothing can)
        return head + "…"
    for _, b in spots[1:]:  # as many of the values after the first as fit with it
        if max(end, b) - first <= limit - 2:
            end = max(end, b)
    start = max(0, min(first - (limit - (end - first)) // 2, len(text) - limit))
    if start and text[start - 1] != " ":  # at a word: the next one if that still holds the first value
        after = text.find(" ", start) + 1
        start = after if 0 < after <= first else max(text.rfind(" ", 0, start) + 1, 0)
    piece = _cut_at_word(text[start:], limit - 1)
    return ("…" if start else "") + piece + ("…" if start + len(piece) < len(text) else "")


def flat(text: str) -> str:
    """``text`` as ``seen`` holds it: whitespace collapsed, lower case."""
    return " ".join(text.split()).lower()


ASK_BONUS = 4.0  # what a long stub's first sentence (often the ask) counts more: it then comes first of all
REPEATED = -100.0  # the value of a sentence the checkpoint shows elsewhere already (``seen``)


def best_sentences(
    text: str,
    keep: int,
    first_bonus: float = 4.0,
    gaps: bool = True,
    splitter: re.Pattern[str] = _SENTENCE_SPLIT,
    seen: str = "",
) -> tuple[str, int]:
    """The sentences of ``text`` worth most, within ``keep`` characters, in their order, ``[…]`` where some were
    left out (``gaps`` False: no marks, for a trace that says its own cut); the first sentence (often the ask)
    counts ``first_bonus`` more, and one the checkpoint already shows (in ``seen``, see ``flat``) comes last of
    all. Also returns how many characters of ``text`` are shown. A sentence longer than the room left is cut at a
    word, only when it is the first one kept."""
    pieces = _pieces(text, splitter)
    if not pieces:
        return "", 0
    scored = [
        (
            REPEATED
            if seen and flat(text[a:b]) in seen
            else sentence_value(text[a:b], splitter is _SENTENCE_SPLIT)  # a clause is no fragment of its line
            + (first_bonus if i == 0 else 0)
            + (1 if i == len(pieces) - 1 else 0),
            i,
        )
        for i, (a, b) in enumerate(pieces)
    ]
    # Best value per character first (a short ruling beats a long line holding one number), the earliest on ties;
    # what is worth nothing fills the room left in its own order (the head of a pasted log), what is shown
    # elsewhere last.
    # A full bonus (a long stub) puts the first sentence first of all, whatever the others are worth.
    lead = first_bonus >= ASK_BONUS and scored[0][0] > REPEATED
    order = sorted(
        scored,
        key=lambda x: (
            (False, -math.inf if lead and x[1] == 0 else -(x[0] / (pieces[x[1]][1] - pieces[x[1]][0] + 40)), 0)
            if x[0] > 0
            else (True, float(x[0] <= REPEATED), x[1])
        ),
    )
    chosen: dict[int, str] = {}
    used = 0
    wordy = any(_WORDY.search(text[a:b]) for a, b in pieces)
    for value, i in order:
        a, b = pieces[i]
        room = keep - used - len(GAP) - 1
        piece = text[a:b]
        if wordy and not _WORDY.search(piece):
            continue
        if len(piece) > room:
            if chosen or room < MIN_TRACE_CHARS:
                continue
            piece = _cut_around_value(piece, room) if value > 0 else _cut_at_word(piece, room) + "…"
        chosen[i] = piece
        used += len(piece) + len(GAP) + 1
    out: list[str] = []
    last = -1
    for i in sorted(chosen):
        if not gaps:
            out.append(" " if out else "")
        elif i != last + 1 or (out and out[-1].endswith("…")):
            out.append(f" {GAP} " if out else f"{GAP} ")
        elif out:  # next to the one before: the line break between them, if there was one
            out.append("\n" if "\n" in text[pieces[last][1] : pieces[i][0]] else " ")
        out.append(chosen[i])
        last = i
    if gaps and out and last != len(pieces) - 1 and not out[-1].endswith("…"):
        out.append(f" {GAP}")
    shown = sum(len(piece.rstrip("…")) for piece in chosen.values())
    return "".join(out), shown


def user_stub(text: str, keep: int = STUB_CHARS, seen: str = "") -> str:
    """A marked stub of a user message, within about ``keep`` characters: its most valuable sentences (see
    ``best_sentences``), then the salient parts of the rest (paths, identifiers, numbers, error lines, the last
    line) as room allows. Below ``MIN_STUB_CHARS`` it is a bare trace: the words worth most, and how much was
    cut. Sentences the checkpoint shows elsewhere (``seen``, the standing instructions) come last."""
    if keep < MIN_STUB_CHARS:  # a trace: the sentence worth most, cut at a word
        kept, shown = best_sentences(text, keep + len(GAP) + 1, first_bonus=0.0, gaps=False, seen=seen)
        return f"{kept.rstrip('…')}… [{shown} of {len(text)} chars]"
    # A short stub (every message cut to a trace) keeps the sentences worth most, the first one (the ask of a turn
    # that is over) hardly ahead of them; a long one keeps its first sentence first, and room for the rest's names.
    short = keep <= 2 * TRACE_CHARS
    kept, shown = best_sentences(text, keep if short else int(keep * 0.8), first_bonus=1.0 if short else 4.0, seen=seen)
    left = keep - len(kept)
    rest = "\n".join(text[a:b] for a, b in _pieces(text) if text[a:b] not in kept and sentence_value(text[a:b]) > 0)
    extras = salient_parts(rest, left) if left > 20 and not short else ""
    extra = f"; also: {extras}" if extras else ""
    return f"{kept} [{shown} of {len(text)} chars{extra}]"


Compress = Callable[[Sequence[str], int], list[str]]


def compress_lines(lines: Sequence[str], max_chars: int) -> list[str]:
    """The lines within ``max_chars``: each long one first cut to its clauses worth most (``LINE_CHARS``); then, if
    that is not enough, the lines worth most (``sentence_value`` per character, newer ones first on ties), in their
    order, the first line (the opening request of a standing-instructions block) first of all, and a count of the
    lines left out in place of them."""
    if sum(len(line) + 1 for line in lines) <= max_chars:
        return list(lines)
    # first every long line but the first (the opening request) to its clauses worth most
    lines = [line if i == 0 else _shorten_line(line) for i, line in enumerate(lines)]
    if sum(len(line) + 1 for line in lines) <= max_chars:
        return lines
    n = len(lines)
    order = sorted(
        range(n), key=lambda i: (i != 0, -(sentence_value(lines[i]) + i / max(n, 1)) / (len(lines[i]) + 40), -i)
    )
    note_chars = 90
    chosen: set[int] = set()
    used = note_chars
    for i in order:
        cost = len(lines[i]) + 1
        if used + cost <= max_chars:
            chosen.add(i)
            used += cost
    left_out = n - len(chosen)
    out = [line for i, line in enumerate(lines) if i in chosen]
    note = f"- … {left_out} more left out by the size cap (their entries are in the spans and the session file)"
    first_gap = next((i for i in range(n) if i not in chosen), n)
    at = sum(1 for i in chosen if i < first_gap)
    return [*out[:at], note, *out[at:]] if left_out else out


def _shorten_line(line: str, limit: int = LINE_CHARS) -> str:
    """A block line within ``limit`` characters: its ``- [id] `` prefix, then its clauses worth most (the first
    ahead), in order, ``[…]`` where some were left out."""
    if len(line) <= limit:
        return line
    line = _SUPERSEDED.sub(r" (supersedes \1)", line)  # the new value kept whole before the old one's words
    if len(line) <= limit:
        return line
    match = _ITEM_PREFIX.match(line)
    head = match.group(0) if match else ""
    kept, _ = best_sentences(line[len(head) :], limit - len(head), first_bonus=1.0, splitter=_CLAUSE_SPLIT)
    return head + kept


def fit_block(text: str, max_chars: int, compress: Compress = compress_lines) -> str:
    """A block of the introduction (a heading and lead lines, then one ``- `` line per item) within about
    ``max_chars``: its lines chosen by ``compress`` when it is longer. The heading is kept."""
    if not text or len(text) <= max_chars:
        return text
    lines = text.split("\n")
    head = 0
    while head < len(lines) and not lines[head].startswith("- "):
        head += 1
    heading = [line.replace("(never trimmed)", "(the most telling, within the size cap)") for line in lines[:head]]
    room = max_chars - sum(len(line) + 1 for line in heading)
    return "\n".join([*heading, *compress(lines[head:], max(room, 0))])


def block_budget(room: int, spans: Sequence[Span] = ()) -> int:
    """What the standing instructions and the unresolved errors may take of ``room`` characters (what the cap
    leaves after the introduction, the startup reads, the file lists and the boundary): ``BLOCK_SHARE`` of it, less
    what a trace of every compacted user message in ``spans`` needs (up to a quarter of it), so that the conversation
    keeps something of every turn; never less than ``BLOCK_MIN_CHARS``."""
    users = sum(1 for span in spans for item in span.items if item.kind == "user")
    reserve = min(users * TRACE_COST_CHARS, room // 4)
    return max(min(int(room * BLOCK_SHARE), room - reserve), BLOCK_MIN_CHARS)


# A step: (span index, operation, target, value). Operations: "level" sets segment ``target`` to level ``value``;
# "stub" replaces user item ``target`` by the stub ``value``; "drop" removes user item ``target``; "facts" drops
# the ``target`` oldest fact lines.
Step = tuple[int, str, int, object]


def _apply(state: TrimState, step: Step) -> None:
    _, op, target, value = step
    if op == "level":
        state.levels[target] = int(value)  # type: ignore[call-overload]
    elif op == "stub":
        state.short[target] = str(value)
    elif op == "drop":
        state.removed.add(target)
    elif op == "facts":
        state.facts_dropped = max(state.facts_dropped, target)


@dataclass(frozen=True, slots=True)
class _Trial:
    """Trim states for every span, their rendered texts, and the total length."""

    states: list[TrimState]
    texts: list[str]
    total: int


class _Fitter:
    """Applies a prefix of an ordered list of changes and measures the result.

    The length falls almost monotonically as changes are applied (only a new gap marker adds a few characters), so
    the shortest prefix that fits is found with a handful of renders, even on long sessions.
    """

    def __init__(self, layouts: Sequence[SpanLayout], budget: int, seen: str = "") -> None:
        self.layouts = layouts
        self.budget = budget
        self.seen = seen
        self.current = self._plain()
        self.applied = 0  # how many changes the last successful run applied

    def _plain(self) -> _Trial:
        texts = [render_span(layout) for layout in self.layouts]
        return _Trial([TrimState() for _ in self.layouts], texts, self._total(texts))

    def _total(self, texts: Sequence[str]) -> int:
        return js_len(join_spans(self.layouts, texts))

    @property
    def states(self) -> list[TrimState]:
        return self.current.states

    @property
    def texts(self) -> list[str]:
        return self.current.texts

    def total(self) -> int:
        return self.current.total

    def trial(self, steps: Sequence[Step], base: _Trial | None = None) -> _Trial:
        """The result of applying ``steps`` on top of ``base`` (the current state by default)."""
        base = base or self.current
        states = list(base.states)
        touched: set[int] = set()
        for step in steps:
            si = step[0]
            if si not in touched:
                touched.add(si)
                states[si] = states[si].copy()
            _apply(states[si], step)
        texts = list(base.texts)
        for si in touched:
            texts[si] = render_span(self.layouts[si], states[si])
        return _Trial(states, texts, self._total(texts))

    def restart(self, steps: Sequence[Step]) -> None:
        """Start again from the untrimmed spans with only ``steps`` applied."""
        self.current = self.trial(steps, self._plain())

    def run(self, steps: Sequence[Step], gains: Sequence[int]) -> bool:
        """Apply the shortest prefix of ``steps`` that meets the budget (all of them if none does).

        ``gains`` estimate what each step saves; the search starts where they say the budget is met, corrects itself
        by the measured error, then bisects the small bracket left.
        """
        self.applied = 0
        if self.total() <= self.budget:
            return True
        count = len(steps)
        memo: dict[int, _Trial] = {}

        def fits(k: int) -> bool:
            if k not in memo:
                memo[k] = self.trial(steps[:k])
            return memo[k].total <= self.budget

        if count == 0 or not fits(count):
            if count:
                self.current = memo[count]
            self.applied = count
            return False
        saved = [0, *itertools.accumulate(gains)]  # saved[k]: estimated savings of steps[:k]

        def estimate(target: int) -> int:
            return min(max(bisect.bisect_left(saved, target), 1), count)

        k = estimate(self.total() - self.budget)
        for _ in range(4):  # secant steps: measure, correct the estimate by the error
            fits(k)
            nk = estimate(saved[k] + memo[k].total - self.budget)
            if nk == k:
                break
            k = nk
        high = min(j for j in memo if memo[j].total <= self.budget)
        low = max([j for j in memo if j < high and memo[j].total > self.budget], default=0)
        step = 1
        while low == 0 and high > 1:  # no failing prefix measured below: gallop down to find one
            probe = max(high - step, 1)
            if not fits(probe):
                low = probe
            elif probe == 1:
                high = 1
                break
            else:
                high, step = probe, step * 2
        while high - low > 1:  # steps[:low] does not fit (or low == 0), steps[:high] does
            middle = (low + high) // 2
            if fits(middle):
                high = middle
            else:
                low = middle
        self.current = memo[high]
        self.applied = high
        return True

    def refit_last_user(self, steps: Sequence[Step]) -> None:
        """If the last change removed a user message, keep the longest stub of it that still fits instead."""
        if not self.applied:
            return
        si, op, index, _ = steps[self.applied - 1]
        if op != "drop":
            return
        text = self.layouts[si].span.items[index].text
        without = self.current
        keep = min(len(text), TRACE_CHARS)
        for _ in range(6):  # the stub's length follows ``keep`` almost one to one: correct by the overflow
            if keep < MIN_STUB_CHARS:
                return
            state = without.states[si].copy()
            state.removed.discard(index)
            state.short[index] = user_stub(text, keep, self.seen)
            states = list(without.states)
            states[si] = state
            texts = list(without.texts)
            texts[si] = render_span(self.layouts[si], state)
            total = self._total(texts)
            if total <= self.budget:
                self.current = _Trial(states, texts, total)
                return
            keep -= max(total - self.budget, 1)


def join_spans(layouts: Sequence[SpanLayout], texts: Sequence[str]) -> str:
    """The rendered spans, oldest first; consecutive spans the cap emptied become one tag (``compaction="1-9"``),
    so a long chain of compactions cannot grow the checkpoint past its cap with their markers alone."""
    out: list[str] = []
    run: list[int] = []

    def flush() -> None:
        if len(run) == 1:
            out.append(texts[run[0]])
        elif run:
            first, last = layouts[run[0]].span, layouts[run[-1]].span
            out.append(
                f'<span compaction="{first.number}-{last.number}" entries="{first.first}..{last.last}" '
                f'trimmed="true">[all of them removed by the size cap; {RECOVER_HINT}]</span>'
            )
        run.clear()

    for index, text in enumerate(texts):
        if text.endswith(EMPTIED_SUFFIX):
            run.append(index)
            continue
        flush()
        out.append(text)
    flush()
    return SPAN_SEPARATOR.join(out)


def layouts_of(spans: Sequence[Span]) -> list[SpanLayout]:
    """Every span's layout, its ledger lines knowing which errors a later call resolved (in any later span)."""
    resolved = resolutions([span.items for span in spans])
    return [span_layout(span, si, resolved) for si, span in enumerate(spans)]


def fit_spans(spans: Sequence[Span], budget: int | None, seen: str = "") -> CapResult:
    """Render ``spans`` oldest first within ``budget`` characters (None: no cap); ``seen``: what the checkpoint
    shows besides the spans (the standing instructions), whose sentences a stub keeps last."""
    if budget is None:
        text = SPAN_SEPARATOR.join(render_span(span) for span in spans)
        return CapResult(text, tuple(False for _ in spans), js_len(text), True)
    layouts = layouts_of(spans)
    fitter = _Fitter(layouts, max(budget, MIN_CONVERSATION_CHARS), flat(seen))

    def seg_steps(level: int) -> list[Step]:
        steps: list[Step] = [
            (si, "level", k, level) for si, layout in enumerate(layouts) for k in range(len(layout.segments))
        ]
        if level == GONE:  # the finding lines worth least per character go first (oldest first among equals)
            steps.sort(key=lambda step: _line_value(layouts[step[0]].ledger[step[2]][3]))
        return steps

    def fact_steps(errors: bool) -> list[Step]:
        """Dropping fact lines: first those that are not errors (all spans, oldest first), later the errors."""
        steps: list[Step] = []
        for si, layout in enumerate(layouts):
            low = sum(1 for line in layout.facts if not _is_error_fact(line))
            numbers = range(low + 1, len(layout.facts) + 1) if errors else range(1, low + 1)
            steps.extend((si, "facts", n, None) for n in numbers)
        return steps

    def user_steps(op: str, keep: int, minimum: int) -> list[Step]:
        out: list[Step] = []
        for si, layout in enumerate(layouts):
            for i, item in enumerate(layout.span.items):
                if item.kind != "user" or len(item.text) <= minimum:
                    continue
                if op == "stub":
                    current = fitter.states[si].short.get(i)
                    stub = user_stub(item.text, keep, fitter.seen)
                    if current is not None and len(current) <= len(stub):
                        continue
                    out.append((si, "stub", i, stub))
                elif i not in fitter.states[si].removed:
                    out.append((si, "drop", i, None))
        return out

    def gains(steps: list[Step]) -> list[int]:
        """What each step saves, estimated from the lengths of what it replaces."""
        out = []
        for si, op, target, value in steps:
            layout = layouts[si]
            if op == "level":
                start, end = layout.segments[target]
                body = sum(js_len(item.text) + len(item.head) + 14 for item in layout.span.items[start:end])
                full, short, terse, found = layout.ledger[target]
                out.append(
                    {
                        CONDENSED: body - len(full),
                        SHORT: len(full) - len(short),
                        TERSE: len(short) - len(terse) if terse else len(short) - MARKER_CHARS,
                        FINDING: len(terse) - len(found) if found else max(len(terse) - MARKER_CHARS, 0),
                        GONE: len(found) - MARKER_CHARS if found else 0,
                    }[int(value)]  # type: ignore[call-overload]
                )
            elif op == "facts":
                out.append(js_len(layout.facts[target - 1]) + 1)
            elif op == "stub":
                out.append(js_len(layout.span.items[target].text) - js_len(str(value)))
            else:
                item = layout.span.items[target]
                out.append(js_len(fitter.states[si].short.get(target, item.text)) + len(item.head) + 14)
        return out

    def non_user() -> bool:
        stages = (
            seg_steps(CONDENSED),
            seg_steps(SHORT),
            fact_steps(False),
            seg_steps(TERSE),
            seg_steps(FINDING),
            fact_steps(True),
            seg_steps(GONE),
        )
        return any(fitter.run(steps, gains(steps)) for steps in stages)

    def shorten_users(reserve: int) -> bool:
        """Stubs of the long user messages, then traces of every one, until the spans fit (the traces: the budget
        less ``reserve``); with the ones needed in place, the runs of tool calls and replies come back within the
        whole budget, in whatever form fits (the reserve: for the finding lines worth most)."""
        applied: list[Step] = []
        fits = False
        for keep, longer_than in (
            (STUB_CHARS, LONG_USER_CHARS),
            (TRACE_CHARS, TRACE_CHARS + 80),
            (MIN_TRACE_CHARS, MIN_TRACE_CHARS + 40),
        ):
            fitter.budget = whole - (reserve if keep < STUB_CHARS else 0)
            steps = user_steps("stub", keep, longer_than)
            fits = fitter.run(steps, gains(steps))
            applied += steps[: fitter.applied]
            if fits:
                break
        fitter.budget = whole
        if fits:
            # The stubs were unavoidable (removing every non-user line was not enough); with them in place, give
            # back the newest runs of tool calls and replies in whatever form fits.
            fitter.restart(applied)
            non_user()
        return fits

    whole = fitter.budget
    fits = non_user()
    if not fits:
        # Room kept for what the replies decided or found, as long as no user message must go for it.
        base = fitter.current
        reserve = finding_reserve(layouts, whole)
        fits = bool(reserve) and shorten_users(reserve)
        if not fits:
            fitter.current = base
            fits = shorten_users(0)
    if not fits:
        last_resort = user_steps("drop", 0, -1)
        fits = fitter.run(last_resort, gains(last_resort))
        if fits:
            fitter.refit_last_user(last_resort)
    text = join_spans(layouts, fitter.texts)
    removed = any(state.removed for state in fitter.states)
    return CapResult(text, tuple(state.changed for state in fitter.states), js_len(text), fits, removed)


def finding_reserve(layouts: Sequence[SpanLayout], budget: int) -> int:
    """The room the cap keeps for finding lines (what the replies decided or found, see ledger.segment_lines) when
    user messages must be shortened: what they take, at most ``FINDING_SHARE`` of the budget."""
    each = len(CONDENSED_HEAD) + 1 + len(SPAN_SEPARATOR)  # the head a condensed line is shown under, the gap
    found = sum(len(line[3]) + each for layout in layouts for line in layout.ledger if line[3])
    return min(found, int(budget * FINDING_SHARE))


def _line_value(line: str) -> float:
    """What a terse ledger line is worth per character (an empty one nothing): what the cap removes last."""
    if not line:
        return -1.0
    body = line.partition("] ")[2] if line.startswith("[") else line
    return sentence_value(body, whole=False) / (len(line) + 40)


def _is_error_fact(line: str) -> bool:
    return line.partition("] ")[2].startswith("error:")
