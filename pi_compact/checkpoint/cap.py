"""The size cap: fit the rendered spans into a character budget, user messages last.

Order (V20): 1) remove non-user content (tool signatures, replies, notes, inherited summaries) line by line,
oldest first; 2) shorten long user messages to marked prefix stubs, oldest first; 3) as a last resort remove the
oldest remaining content, user messages included. Only the rendered text is trimmed: the saved spans in ``details``
stay whole, so every later checkpoint trims again from the originals. A stub is never shortened twice, and a larger
cap (or ``--no-cap``) later brings the content back.

Lengths are JavaScript lengths (UTF-16 units), the unit of Pi's chars/4 estimate.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from pi_compact.checkpoint.spans import Span, TrimState, item_units, render_span
from pi_compact.tokens import js_len

SPAN_SEPARATOR = "\n\n"
LONG_USER_CHARS = 800  # a user message longer than this may be shortened in step 2
STUB_CHARS = 400  # what a shortened user message keeps
MIN_CONVERSATION_CHARS = 500  # the conversation part never gets a smaller budget than this


@dataclass(frozen=True, slots=True)
class CapResult:
    """The rendered spans after the cap; ``trimmed[i]`` says whether span i was changed."""

    text: str
    trimmed: tuple[bool, ...]
    chars: int
    fits: bool


def user_stub(text: str) -> str:
    """A marked prefix of a long user message, cut at whitespace when one is near the limit."""
    prefix = text[:STUB_CHARS]
    space = max(prefix.rfind(" "), prefix.rfind("\n"))
    if space >= STUB_CHARS * 3 // 4:
        prefix = prefix[:space]
    prefix = prefix.rstrip()
    return f"{prefix}… [user message shortened by the size cap: {len(prefix)} of {len(text)} characters shown]"


class _Fitter:
    """Applies removals in a fixed order and re-measures only the spans touched, and only when the cheap running
    estimate says the budget may be reached, so the work stays near-linear on long sessions."""

    def __init__(self, spans: Sequence[Span], budget: int) -> None:
        self.spans = spans
        self.budget = budget
        self.states = [TrimState() for _ in spans]
        self.lengths = [js_len(render_span(span)) for span in spans]
        self.touched: set[int] = set()
        self.pending_gain = 0

    @property
    def total(self) -> int:
        return sum(self.lengths) + js_len(SPAN_SEPARATOR) * max(len(self.spans) - 1, 0)

    def over(self) -> int:
        return self.total - self.budget

    def measure(self) -> None:
        for si in self.touched:
            self.lengths[si] = js_len(render_span(self.spans[si], self.states[si]))
        self.touched.clear()
        self.pending_gain = 0

    def run(self, steps: Iterable[tuple[int, Callable[[TrimState], int]]]) -> bool:
        """Apply ``steps`` (span index, change returning the characters it saves) until the budget is met."""
        if self.over() <= 0:
            return True
        for si, change in steps:
            self.pending_gain += change(self.states[si])
            self.touched.add(si)
            if self.pending_gain >= self.over():
                self.measure()
                if self.over() <= 0:
                    return True
        self.measure()
        return self.over() <= 0


def _remove(unit: tuple[int, int], gain: int) -> Callable[[TrimState], int]:
    def change(state: TrimState) -> int:
        state.removed.add(unit)
        return gain

    return change


def _shorten(index: int, stub: str, gain: int) -> Callable[[TrimState], int]:
    def change(state: TrimState) -> int:
        state.short[index] = stub
        return gain

    return change


def fit_spans(spans: Sequence[Span], budget: int | None) -> CapResult:
    """Render ``spans`` oldest first within ``budget`` characters (None: no cap)."""
    if budget is None:
        text = SPAN_SEPARATOR.join(render_span(span) for span in spans)
        return CapResult(text, tuple(False for _ in spans), js_len(text), True)
    fitter = _Fitter(spans, max(budget, MIN_CONVERSATION_CHARS))

    def non_user() -> Iterable[tuple[int, Callable[[TrimState], int]]]:
        for si, span in enumerate(spans):
            for i, item in enumerate(span.items):
                if item.kind == "user":
                    continue
                for unit, line in zip(item_units(i, item), item.text.split("\n"), strict=True):
                    yield si, _remove(unit, js_len(line) + 1)

    def long_users() -> Iterable[tuple[int, Callable[[TrimState], int]]]:
        for si, span in enumerate(spans):
            for i, item in enumerate(span.items):
                if item.kind == "user" and len(item.text) > LONG_USER_CHARS:
                    stub = user_stub(item.text)
                    yield si, _shorten(i, stub, js_len(item.text) - js_len(stub))

    def remaining() -> Iterable[tuple[int, Callable[[TrimState], int]]]:
        for si, span in enumerate(spans):
            state = fitter.states[si]
            for i, item in enumerate(span.items):
                for unit in item_units(i, item):
                    if unit not in state.removed:
                        text = state.short.get(i, item.text) if unit[1] < 0 else ""
                        yield si, _remove(unit, js_len(text) + 1)

    fits = fitter.run(non_user()) or fitter.run(long_users()) or fitter.run(remaining())
    rendered = [render_span(span, state) for span, state in zip(spans, fitter.states, strict=True)]
    text = SPAN_SEPARATOR.join(rendered)
    return CapResult(text, tuple(state.changed for state in fitter.states), js_len(text), fits)
