"""How many turns remain before Pi's threshold, and how many a compaction buys.

The rule (documented in docs/commands.md):

- Take the last ``GROWTH_WINDOW`` (10) assistant replies on the branch whose usage Pi would trust on its own
  (``projection.assistant_usage``: not aborted, not an error, a non-zero total).
- For each two consecutive ones with no compaction and no context edit between them, the growth per reply is the
  difference of their recorded totals divided by the number of assistant replies from the first (excluded) to the
  second (included).
- The context grows by the median of those values per turn (one turn = one assistant reply). With no such pair, or
  a median that is not positive, there is no forecast.
- Turns left = ``floor((threshold - tokens) / growth)``: the replies that still fit; the one after them crosses the
  threshold and Pi compacts. Zero when the context is already over the threshold.
"""

from __future__ import annotations

import math
from itertools import pairwise
from typing import Any, NamedTuple, TypedDict

from pi_compact.js import js_quotient
from pi_compact.pi.projection import assistant_usage, calculate_usage_tokens
from pi_compact.session.tree import Branch

GROWTH_WINDOW = 10
MIN_TURNS_BOUGHT = 2


def median(values: list[float]) -> float:
    """The middle value (the mean of the two middle ones for an even count); ``statistics`` costs 20 ms to import,
    and ``check`` should start fast."""
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


# ``Growth.to_json()``; in the call form, as check's start-up wants it (see ``ops.check.SpanJSON``).
GrowthJSON = TypedDict(  # noqa: UP013  (the call form, for check's start-up)
    "GrowthJSON",
    {
        "per_turn": float | None,
        "samples": int,
        "replies": int,
        "first_entry_id": str | None,
        "last_entry_id": str | None,
    },
)


# ``Forecast.to_json()``.
ForecastJSON = TypedDict(  # noqa: UP013  (the call form, for check's start-up)
    "ForecastJSON",
    {
        "tokens": int,
        "threshold": int,
        "turns": int | None,
        "growth": GrowthJSON,
    },
)


class Growth(NamedTuple):
    """The context's recent growth per assistant reply."""

    per_turn: float | None  # the median; None when there is nothing to measure it with
    samples: int  # how many growth values the median is of
    replies: int  # how many replies with trusted usage were looked at
    first_entry_id: str | None = None
    last_entry_id: str | None = None

    def to_json(self) -> GrowthJSON:
        return {
            "per_turn": round(self.per_turn, 1) if self.per_turn is not None else None,
            "samples": self.samples,
            "replies": self.replies,
            "first_entry_id": self.first_entry_id,
            "last_entry_id": self.last_entry_id,
        }


def context_growth(branch: Branch, window: int = GROWTH_WINDOW) -> Growth:
    """The median growth per assistant reply over the last ``window`` replies with trusted usage (see module doc).

    Walked from the leaf back, so only the last replies are read: on a long session the older ones are not in
    memory (see ``session.source``) and reading them all would cost more than the rest of ``check``.
    """
    # From the newest back: [reply number (counted back from 0), total, entry id, reset since the previous one].
    found: list[list[Any]] = []
    number = 0
    reset = False  # a compaction or context edit between this point of the walk and the last point found
    for entry in reversed(branch.entries):
        if entry.type in ("compaction", "context_edit"):
            reset = True
            continue
        if entry.role != "assistant":
            continue
        message = entry.message
        usage = assistant_usage(message) if message is not None else None
        if usage is not None:
            if found:
                found[-1][3] = reset  # the later point was reset when something came between it and this one
            if len(found) == window:
                break
            found.append([number, calculate_usage_tokens(usage), entry.id, False])
            reset = False
        number -= 1
    points = found[::-1]
    growths = [
        js_quotient(total - prev_total, number - prev_number)
        for (prev_number, prev_total, _, _), (number, total, _, was_reset) in pairwise(points)
        if not was_reset and number > prev_number
    ]
    return Growth(
        per_turn=median(growths) if growths else None,
        samples=len(growths),
        replies=len(points),
        first_entry_id=points[0][2] if points else None,
        last_entry_id=points[-1][2] if points else None,
    )


def turns_until(tokens: int, threshold: int, growth: Growth) -> int | None:
    """Replies that still fit below the threshold at this growth; None without a positive growth."""
    if tokens > threshold:
        return 0
    if growth.per_turn is None or growth.per_turn <= 0:
        return None
    turns = js_quotient(threshold - tokens, growth.per_turn)
    return math.floor(turns) if math.isfinite(turns) else None


class Forecast(NamedTuple):
    """Turns left from ``tokens`` before the threshold, at the measured growth."""

    growth: Growth
    tokens: int
    threshold: int

    @property
    def turns(self) -> int | None:
        return turns_until(self.tokens, self.threshold, self.growth)

    @property
    def over_threshold(self) -> bool:
        return self.tokens > self.threshold

    def describe(self) -> str:
        growth = self.growth
        if self.over_threshold:
            return "0 turns: already over the threshold"
        if growth.per_turn is None:
            return "no forecast: fewer than two recent replies with usage to measure the growth"
        basis = (
            f"median growth {growth.per_turn:,.0f} tokens per reply over the last {growth.replies} replies with usage"
        )
        if growth.per_turn <= 0:
            return f"no forecast: the context is not growing ({basis})"
        turns = self.turns
        return f"~{turns} turn{'s' if turns != 1 else ''} before the threshold ({basis})"

    def to_json(self) -> ForecastJSON:
        return {
            "tokens": self.tokens,
            "threshold": self.threshold,
            "turns": self.turns,
            "growth": self.growth.to_json(),
        }


def low_turns_warning(turns: int | None, keep_recent_tokens: int, cap: bool = True) -> str | None:
    """The warning for a compaction that buys fewer than ``MIN_TURNS_BOUGHT`` turns (None when it buys enough)."""
    if turns is None or turns >= MIN_TURNS_BOUGHT:
        return None
    return (
        f"this compaction buys only ~{turns} turn{'s' if turns != 1 else ''} before the next one at the recent "
        f"growth; try a lower --keep-recent-tokens (now {keep_recent_tokens:,})"
        + (" or a smaller --cap" if cap else "")
    )


def check_forecast(branch: Branch, tokens: int, threshold: int) -> Forecast:
    """``check``'s forecast: turns left from the current context."""
    return Forecast(context_growth(branch), tokens, threshold)


def compaction_forecast(
    branch: Branch,
    tokens_after: int,
    threshold: int,
    keep_recent_tokens: int,
    *,
    mode: str = "verbatim",
    dry_run: bool = False,
    force: bool = False,
) -> tuple[Forecast, list[str], str | None]:
    """What a compaction buys: the forecast from its result, the warnings to give, and the reason to refuse it
    (None when it may be written): a result already over the threshold would make Pi compact again at once."""
    forecast = Forecast(context_growth(branch), tokens_after, threshold)
    capped = mode == "verbatim"
    change = f"a lower --keep-recent-tokens (now {keep_recent_tokens:,})" + (" or a smaller --cap" if capped else "")
    warnings: list[str] = []
    refusal: str | None = None
    if forecast.over_threshold:
        refusal = (
            f"after this compaction the context ({tokens_after:,} tokens) would still be over the threshold "
            f"({threshold:,}): Pi would compact again at once; try {change}, or --force to write it anyway"
        )
        if dry_run:
            warnings.append("without --dry-run this compaction is refused (exit 2) unless --force is given")
        elif force:
            warnings.append("written anyway (--force), although Pi will compact again at once")
    else:
        low = low_turns_warning(forecast.turns, keep_recent_tokens, capped)
        if low is not None:
            warnings.append(low)
    return forecast, warnings, refusal
