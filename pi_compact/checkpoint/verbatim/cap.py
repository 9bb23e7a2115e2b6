"""The size cap: fit the rendered spans into a character budget, user messages last.

Non-user content goes first (V20 step 1), in stages that each keep more per character than removing it would,
oldest first within each stage:

1. a run of tool calls and replies (a *segment*, see spans.segments) is condensed into its ledger line: files
   written and edited, commands run and how they ended, errors resolved or not, the lead sentence of the reply;
2. ledger lines are shortened (counts in place of read paths and commands, a shorter lead sentence);
3. facts taken from removed tool outputs are dropped;
4. ledger lines are removed (``[…]`` stands for a removed run between two kept items);
5. the facts that are errors are dropped last of the non-user content.

Then (V20 step 2) long user messages become marked stubs that keep their head and the paths, identifiers, numbers
and error lines of the rest; when stubs were needed, stages 1–5 are run again from the start so that the newest
runs come back in whatever form fits. Then every user message is cut to a short trace (its head, its id), oldest
first, then to a bare one (its first 40 characters), and only as a last resort (V20 step 3) are the oldest user
messages removed, the last one reached keeping the longest stub that fits.

Only the rendered text is trimmed: the saved spans in ``details`` stay whole, so every later checkpoint trims again
from the originals. A stub is never shortened twice, and a larger cap (or ``--no-cap``) later brings the content
back. Lengths are JavaScript lengths (UTF-16 units), the unit of Pi's chars/4 estimate.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from pi_compact.checkpoint.verbatim.facts import salient_parts
from pi_compact.checkpoint.verbatim.ledger import resolutions
from pi_compact.checkpoint.verbatim.spans import (
    CONDENSED,
    EMPTIED_SUFFIX,
    GONE,
    RECOVER_HINT,
    SHORT,
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
TRACE_CHARS = 120  # what a user message keeps when every message is cut to a trace
MIN_TRACE_CHARS = 40  # the last trace before any user message is removed: its opening words and its id
MIN_STUB_CHARS = 60  # the shortest stub worth keeping when the last resort reaches a user message
MIN_CONVERSATION_CHARS = 500  # the conversation part never gets a smaller budget than this
HEAD_SHARE = 0.6  # of a stub's characters, the share the head of the message gets
MARKER_CHARS = 60  # about what one "[… removed by the size cap: entries a..b …]" line costs


@dataclass(frozen=True, slots=True)
class CapResult:
    """The rendered spans after the cap; ``trimmed[i]`` says whether span i was changed."""

    text: str
    trimmed: tuple[bool, ...]
    chars: int
    fits: bool


def user_stub(text: str, keep: int = STUB_CHARS) -> str:
    """A marked stub of a long user message: its head, cut at whitespace, and the salient parts of the rest
    (paths, identifiers, numbers, error lines, the last line), within about ``keep`` characters. Below
    ``MIN_STUB_CHARS`` it is a bare trace: the opening words and how much was cut."""
    if keep < MIN_STUB_CHARS:
        head = text[:keep].rstrip()
        return f"{head}… [size cap: {len(head)} of {len(text)} characters]"
    head_chars = max(int(keep * HEAD_SHARE), min(keep, MIN_STUB_CHARS))
    prefix = text[:head_chars]
    space = max(prefix.rfind(" "), prefix.rfind("\n"))
    if space >= head_chars * 3 // 4:
        prefix = prefix[:space]
    prefix = prefix.rstrip()
    extras = salient_parts(text[len(prefix) :], keep - len(prefix))
    kept = f"; kept from the rest: {extras}" if extras else ""
    return f"{prefix}… [user message shortened by the size cap: {len(prefix)} of {len(text)} characters shown{kept}]"


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

    def __init__(self, layouts: Sequence[SpanLayout], budget: int) -> None:
        self.layouts = layouts
        self.budget = budget
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
            state.short[index] = user_stub(text, keep)
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


def fit_spans(spans: Sequence[Span], budget: int | None) -> CapResult:
    """Render ``spans`` oldest first within ``budget`` characters (None: no cap)."""
    if budget is None:
        text = SPAN_SEPARATOR.join(render_span(span) for span in spans)
        return CapResult(text, tuple(False for _ in spans), js_len(text), True)
    layouts = layouts_of(spans)
    fitter = _Fitter(layouts, max(budget, MIN_CONVERSATION_CHARS))

    def seg_steps(level: int) -> list[Step]:
        return [(si, "level", k, level) for si, layout in enumerate(layouts) for k in range(len(layout.segments))]

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
                    stub = user_stub(item.text, keep)
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
                full, short = layout.ledger[target]
                out.append(
                    {CONDENSED: body - len(full), SHORT: len(full) - len(short), GONE: len(short) - MARKER_CHARS}[
                        int(value)  # type: ignore[call-overload]
                    ]
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
        stages = (seg_steps(CONDENSED), seg_steps(SHORT), fact_steps(False), seg_steps(GONE), fact_steps(True))
        return any(fitter.run(steps, gains(steps)) for steps in stages)

    fits = non_user()
    applied: list[Step] = []
    for keep, longer_than in (
        (STUB_CHARS, LONG_USER_CHARS),
        (TRACE_CHARS, TRACE_CHARS + 80),
        (MIN_TRACE_CHARS, MIN_TRACE_CHARS + 40),
    ):
        if fits:
            break
        steps = user_steps("stub", keep, longer_than)
        fits = fitter.run(steps, gains(steps))
        applied += steps[: fitter.applied]
        if fits:
            # The stubs were unavoidable (removing every non-user line was not enough); with them in place, give
            # back the newest runs of tool calls and replies in whatever form fits.
            fitter.restart(applied)
            non_user()
    if not fits:
        last_resort = user_steps("drop", 0, -1)
        fits = fitter.run(last_resort, gains(last_resort))
        if fits:
            fitter.refit_last_user(last_resort)
    text = join_spans(layouts, fitter.texts)
    return CapResult(text, tuple(state.changed for state in fitter.states), js_len(text), fits)


def _is_error_fact(line: str) -> bool:
    return line.partition("] ")[2].startswith("error:")
