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

from collections.abc import Sequence
from dataclasses import dataclass

from pi_compact.checkpoint.spans import Span, TrimState, item_units, render_span
from pi_compact.tokens import js_len

SPAN_SEPARATOR = "\n\n"
LONG_USER_CHARS = 800  # a user message longer than this may be shortened in step 2
STUB_CHARS = 400  # what a shortened user message keeps
MIN_STUB_CHARS = 60  # the shortest stub worth keeping when the last resort reaches a user message
MIN_CONVERSATION_CHARS = 500  # the conversation part never gets a smaller budget than this


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


class _Fitter:
    """Applies a prefix of an ordered list of changes and measures the result.

    The shortest prefix that fits is found by bisection (the length falls almost monotonically as changes are
    applied; only a new gap marker adds a few characters), so a handful of renders suffice on long sessions.
    """

    def __init__(self, spans: Sequence[Span], budget: int) -> None:
        self.spans = spans
        self.budget = budget
        self.states = [TrimState() for _ in spans]
        self.lengths = [js_len(render_span(span)) for span in spans]
        self.separators = js_len(SPAN_SEPARATOR) * max(len(spans) - 1, 0)
        self.applied = 0  # how many changes the last successful run applied

    def _apply(self, steps: Sequence[Step]) -> tuple[list[TrimState], int]:
        states = list(self.states)
        touched: set[int] = set()
        for si, target, stub in steps:
            if si not in touched:
                touched.add(si)
                states[si] = TrimState(set(states[si].removed), dict(states[si].short))
            if stub is None and isinstance(target, tuple):
                states[si].removed.add(target)
            elif stub is not None and isinstance(target, int):
                states[si].short[target] = stub
        lengths = list(self.lengths)
        for si in touched:
            lengths[si] = js_len(render_span(self.spans[si], states[si]))
        return states, sum(lengths) + self.separators

    def total(self) -> int:
        return sum(self.lengths) + self.separators

    def restart(self, steps: Sequence[Step]) -> None:
        """Start again from the untrimmed spans with only ``steps`` applied."""
        self.states = [TrimState() for _ in self.spans]
        self._commit(self._apply(steps)[0])

    def _commit(self, states: list[TrimState]) -> None:
        self.states = states
        self.lengths = [js_len(render_span(span, state)) for span, state in zip(self.spans, states, strict=True)]

    def run(self, steps: Sequence[Step]) -> bool:
        """Apply the shortest prefix of ``steps`` that meets the budget (all of them if none does)."""
        self.applied = 0
        if self.total() <= self.budget:
            return True
        states, total = self._apply(steps)
        if total > self.budget:
            self._commit(states)
            self.applied = len(steps)
            return False
        low, high = 0, len(steps)  # steps[:high] fits, steps[:low] does not
        while high - low > 1:
            middle = (low + high) // 2
            if self._apply(steps[:middle])[1] <= self.budget:
                high = middle
            else:
                low = middle
        self._commit(self._apply(steps[:high])[0])
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

        def attempt(keep: int) -> list[TrimState] | None:
            states = list(self.states)
            state = TrimState(set(states[si].removed) - {target}, {**states[si].short, index: user_stub(text, keep)})
            states[si] = state
            total = self.total() - self.lengths[si] + js_len(render_span(self.spans[si], state))
            return states if total <= self.budget else None

        best: list[TrimState] | None = None
        low, high = MIN_STUB_CHARS - 1, min(len(text), STUB_CHARS)
        while high > low:
            middle = (low + high + 1) // 2
            found = attempt(middle)
            if found is not None:
                best, low = found, middle
            else:
                high = middle - 1
        if best is not None:
            self._commit(best)


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

    removals = non_user()
    fits = fitter.run(removals)
    if not fits:
        stubs = long_users()
        fits = fitter.run(stubs)
        if fits:
            # The stubs were unavoidable (removing every non-user line was not enough); with them in place, give
            # back the newest non-user lines that fit.
            fitter.restart(stubs[: fitter.applied])
            fitter.run(removals)
    if not fits:
        last_resort = remaining()
        fits = fitter.run(last_resort)
        if fits:
            fitter.refit_last_user(last_resort)
    rendered = [render_span(span, state) for span, state in zip(spans, fitter.states, strict=True)]
    text = SPAN_SEPARATOR.join(rendered)
    return CapResult(text, tuple(state.changed for state in fitter.states), js_len(text), fits)
