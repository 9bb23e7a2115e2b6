"""The size cap: fit the rendered spans into a character budget, user messages last.

Order (V20): 1) remove non-user content (tool signatures, replies, notes, inherited summaries) line by line,
oldest first; 2) shorten long user messages to marked prefix stubs, oldest first; 3) as a last resort remove the
oldest remaining content, user messages included (the last message reached keeps the longest stub that fits).
When step 2 was needed, the stubs are unavoidable, so the newest non-user lines that then fit are given back.
Only the rendered text is trimmed: the saved spans in ``details``
stay whole, so every later checkpoint trims again from the originals. A stub is never shortened twice, and a larger
cap (or ``--no-cap``) later brings the content back.

Lengths are JavaScript lengths (UTF-16 units), the unit of Pi's chars/4 estimate.
"""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Sequence
from dataclasses import dataclass

from pi_compact.checkpoint.spans import Span, TrimState, item_units, render_span, unit_text
from pi_compact.tokens import js_len

SPAN_SEPARATOR = "\n\n"
LONG_USER_CHARS = 800  # a user message longer than this may be shortened in step 2
STUB_CHARS = 400  # what a shortened user message keeps
MIN_STUB_CHARS = 60  # the shortest stub worth keeping when the last resort reaches a user message
MIN_CONVERSATION_CHARS = 500  # the conversation part never gets a smaller budget than this
MARKER_CHARS = 60  # about what one "[… removed by the size cap: entries a..b …]" line costs


@dataclass(frozen=True, slots=True)
class CapResult:
    """The rendered spans after the cap; ``trimmed[i]`` says whether span i was changed."""

    text: str
    trimmed: tuple[bool, ...]
    chars: int
    fits: bool


def user_stub(text: str, keep: int = STUB_CHARS) -> str:
    """A marked prefix of a long user message, cut at whitespace when one is near the limit."""
    prefix = text[:keep]
    space = max(prefix.rfind(" "), prefix.rfind("\n"))
    if space >= keep * 3 // 4:
        prefix = prefix[:space]
    prefix = prefix.rstrip()
    return f"{prefix}… [user message shortened by the size cap: {len(prefix)} of {len(text)} characters shown]"


Step = tuple[int, tuple[int, int] | int, str | None]  # (span index, unit to remove | item to shorten, stub)


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

    def __init__(self, spans: Sequence[Span], budget: int) -> None:
        self.spans = spans
        self.budget = budget
        self.separators = js_len(SPAN_SEPARATOR) * max(len(spans) - 1, 0)
        texts = [render_span(span) for span in spans]
        self.current = _Trial([TrimState() for _ in spans], texts, self._total(texts))
        self.applied = 0  # how many changes the last successful run applied

    def _total(self, texts: Sequence[str]) -> int:
        return sum(js_len(text) for text in texts) + self.separators

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
        for si, target, stub in steps:
            if si not in touched:
                touched.add(si)
                states[si] = TrimState(set(states[si].removed), dict(states[si].short))
            if stub is None and isinstance(target, tuple):
                states[si].removed.add(target)
            elif stub is not None and isinstance(target, int):
                states[si].short[target] = stub
        texts = list(base.texts)
        for si in touched:
            texts[si] = render_span(self.spans[si], states[si])
        return _Trial(states, texts, self._total(texts))

    def restart(self, steps: Sequence[Step]) -> None:
        """Start again from the untrimmed spans with only ``steps`` applied."""
        plain = [render_span(span) for span in self.spans]
        self.current = self.trial(steps, _Trial([TrimState() for _ in self.spans], plain, self._total(plain)))

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
        si, target, _ = steps[self.applied - 1]
        if not isinstance(target, tuple) or target[1] >= 0:
            return
        index = target[0]
        text = self.spans[si].items[index].text
        without = self.current
        keep = min(len(text), STUB_CHARS)
        for _ in range(6):  # the stub's length follows ``keep`` almost one to one: correct by the overflow
            if keep < MIN_STUB_CHARS:
                return
            state = TrimState(set(without.states[si].removed) - {target}, {**without.states[si].short})
            state.short[index] = user_stub(text, keep)
            states = list(without.states)
            states[si] = state
            texts = list(without.texts)
            texts[si] = render_span(self.spans[si], state)
            total = self._total(texts)
            if total <= self.budget:
                self.current = _Trial(states, texts, total)
                return
            keep -= max(total - self.budget, 1)


def fit_spans(spans: Sequence[Span], budget: int | None) -> CapResult:
    """Render ``spans`` oldest first within ``budget`` characters (None: no cap)."""
    if budget is None:
        text = SPAN_SEPARATOR.join(render_span(span) for span in spans)
        return CapResult(text, tuple(False for _ in spans), js_len(text), True)
    fitter = _Fitter(spans, max(budget, MIN_CONVERSATION_CHARS))

    def non_user() -> list[Step]:
        return [
            (si, unit, None)
            for si, span in enumerate(spans)
            for i, item in enumerate(span.items)
            if item.kind != "user"
            for unit in item_units(i, item)
        ]

    def long_users() -> list[Step]:
        return [
            (si, i, user_stub(item.text))
            for si, span in enumerate(spans)
            for i, item in enumerate(span.items)
            if item.kind == "user" and len(item.text) > LONG_USER_CHARS
        ]

    def remaining() -> list[Step]:
        return [
            (si, unit, None)
            for si, span in enumerate(spans)
            for i, item in enumerate(span.items)
            for unit in item_units(i, item)
            if unit not in fitter.states[si].removed
        ]

    def gains(steps: list[Step]) -> list[int]:
        """What each step saves, estimated: the line or message it drops, its entry header when it is the item's
        first unit, less a gap marker when it opens a gap after a kept user message."""
        out = []
        for si, target, stub in steps:
            index = target if isinstance(target, int) else target[0]
            items = spans[si].items
            item = items[index]
            if stub is not None:
                out.append(js_len(item.text) - js_len(stub))
                continue
            line = target[1] if isinstance(target, tuple) else -1
            text = unit_text(item, (index, line)) if line >= 0 else fitter.states[si].short.get(index, item.text)
            gain = js_len(text) + 1
            if line <= 0:
                gain += len(item.head) + len(item.entry) + 5
                if index > 0 and items[index - 1].kind == "user" and line == 0:
                    gain -= MARKER_CHARS
            out.append(gain)
        return out

    removals = non_user()
    removal_gains = gains(removals)
    fits = fitter.run(removals, removal_gains)
    if not fits:
        stubs = long_users()
        fits = fitter.run(stubs, gains(stubs))
        if fits:
            # The stubs were unavoidable (removing every non-user line was not enough); with them in place, give
            # back the newest non-user lines that fit.
            fitter.restart(stubs[: fitter.applied])
            fitter.run(removals, removal_gains)
    if not fits:
        last_resort = remaining()
        fits = fitter.run(last_resort, gains(last_resort))
        if fits:
            fitter.refit_last_user(last_resort)
    text = SPAN_SEPARATOR.join(fitter.texts)
    return CapResult(text, tuple(state.changed for state in fitter.states), js_len(text), fits)
