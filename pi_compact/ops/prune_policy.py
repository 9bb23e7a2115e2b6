"""When pruning costs no prompt cache: the timing rule the Pi extension follows before it hands Pi a batch of
``context_edit`` drafts (``picompact pi prune-drafts``). Pure arithmetic on figures the caller gathers.

A batch of edits changes an early part of the prompt, so the request after it is a cache miss from the first edited
message on: Pi's ``missCost`` (the model's price of writing the whole prompt to the cache, minus reading it). What
the batch saves is the freed tokens on every later request until the compaction that would have dropped them anyway.
So a batch goes in only at a boundary (Pi's ``turn_end`` or ``agent_before_settle``) where one of these holds, in
this order:

1. **threshold**: the next reply would take the context over Pi's compaction threshold (or it is over it already),
   and the batch alone brings it back a quarter of the threshold below it (``THRESHOLD_MIN_SHARE``, and at least
   ``MIN_TURNS_BOUGHT`` replies), and the break rule below lets it: the compaction it puts off would have broken
   the cache too. When the batch cannot do that, nothing is pruned and Pi compacts: a batch that buys a few replies
   only would be followed by another, each a cache break, where one compaction would have done.
2. **cold**: the cache entry of the last request (or of Pi's last refresh of it) is older than the model's
   prompt-cache lifetime (``promptCache`` of the retention tier in use): the next request misses anyway.
3. **warming-stopped** / **worth-it**: the break rule lets it, and the chance that the cache is still warm at the
   next request, times ``missCost``, times ``SAVINGS_MARGIN`` (3), is less than what the batch saves (freed tokens
   at the cached-read price on every remaining request, plus one cache write of them when the cache is cold by
   then).

The chance that the cache is warm at the next request: at ``turn_end`` the next request follows at once, so the
cache is warm unless rule 2 holds. At ``agent_before_settle`` the next request waits for the user: Pi keeps the cache
warm while idle only when its own rule says a refresh pays (``cacheWarming`` "idle", the model has a lifetime,
``evaluateCacheWarming``'s expected savings of at least $0.05) and no ``cache_warming_decision`` said "stop";
otherwise the chance is the session's own (``return_probability``: how often its user came back within the cache
lifetime after a run, with Pi's estimate of 0.15 as the prior), or Pi's 0.15 when the caller gives none.

**The break rule** keeps batches from breaking the cache more often than the compactions they put off would have:
a batch breaks it with the chance above; the tokens it frees put off ``tokens_freed / room`` of a compaction
(``room``: the threshold less the context right after a compaction, keepRecentTokens and the checkpoint), and a
compaction breaks a warm cache when it comes inside a run (Pi compacts before the next reply, which follows at once)
but, when it comes as a run settles, only if the user is back in time (``settle_growth_share``: how much of the
context's growth comes with a run's last reply). A batch goes in only when its chance of a break, times
``BREAK_MARGIN`` (1.5), is at most the breaks it saves. Inside a run (chance 1) that takes a batch larger than the
room a compaction makes, so there Pi compacts; before the user's prompt it lets batches through when the user seldom
comes back within the lifetime, and few when the user often does. Both extension boundaries are drafts Pi appends at
once; there is no boundary between a user's prompt and the request it starts, so a batch can never be put where the
cache is known to have lapsed except by rule 2.

The savings margin is there because a batch has a cost the savings leave out: it puts the next compaction off, and
the requests after the one it would have been carry the larger pruned context instead of a fresh checkpoint; the
break margin because the rule is right on average and a session's breaks come one by one. Their values and the
threshold's share are those with which bench/prune.py's replays (bench/RESULTS.md) have no more cache breaks than
compaction alone on every shape and both user timings of the tuning seeds, at the least cost.

A batch must free at least ``min_batch_tokens``: one batch now and then, never an edit a turn.

Two figures of the batch: ``tokens_freed``, what it takes out of every later prompt (the outputs' estimated tokens
less their stubs'), which the savings and the minimum batch are reckoned on; and ``tokens_after``, Pi's own figure
for the threshold once the edits are in. After a ``context_edit`` Pi no longer trusts the last reply's usage and
estimates every message (chars / 4, ``estimateProjectedContextTokens``), so ``tokens_after`` can differ from
``context_tokens - tokens_freed`` either way; the threshold rule uses it, since it is what Pi's compaction check
will see.
"""

from __future__ import annotations

import math
from typing import Literal, NamedTuple, TypedDict

# Pi 1.6's constants (pi-ai cache-warming.js).
IDLE_CONTINUATION_PROBABILITY = 0.15  # CACHE_WARMING_IDLE_CONTINUATION_PROBABILITY
MINIMUM_EXPECTED_SAVINGS = 0.05  # CACHE_WARMING_MINIMUM_EXPECTED_SAVINGS, dollars
IDLE_MAX_AGE_MS = 30 * 60_000  # CACHE_WARMING_MAX_IDLE_AGE_MS
# A batch has to buy this many replies below the threshold to put a compaction off (as ``forecast``'s turns bought).
MIN_TURNS_BOUGHT = 2
THRESHOLD_MIN_SHARE = 0.25
SAVINGS_MARGIN = 3.0
BREAK_MARGIN = 1.5
# Pi's continuation probability as a prior, counted as this many of the session's own gaps.
RETURN_PRIOR_WEIGHT = 4
# Remaining requests counted when the context's growth is unknown, and the most ever counted.
DEFAULT_REMAINING = 10
MAX_REMAINING = 200
MIN_BATCH_TOKENS = 2_000
MIN_BATCH_WINDOW_SHARE = 0.05  # of the context window

Boundary = Literal["turn_end", "agent_before_settle"]
WarmingMode = Literal["off", "streaming", "idle"]
Warming = Literal["warm", "stop"]


class Prices(NamedTuple):
    """A model's prices in dollars per million tokens, as Pi's ``model.cost`` gives them."""

    input: float = 0.0
    output: float = 0.0
    cache_read: float = 0.0
    cache_write: float = 0.0

    @property
    def available(self) -> bool:
        """Whether cache economics can be computed (Pi's ``economicsAvailable`` without the prompt size)."""
        return self.cache_read > 0 or self.cache_write > 0 or self.input > 0

    def miss_price(self) -> float:
        """The price a token costs on a cache miss: a cache write where the model charges one, else input."""
        return self.cache_write if self.cache_write > 0 else self.input

    def miss_cost(self, prompt_tokens: int) -> float:
        """Pi's ``missCost``: the extra price of the next request if the cache entry is lost."""
        return max(0.0, prompt_tokens * (self.miss_price() - self.cache_read) / 1e6)

    def warm_cost(self, prompt_tokens: int) -> float:
        """Pi's ``warmCost``: one refresh, the prompt read from the cache and one output token."""
        return (prompt_tokens * self.cache_read + self.output) / 1e6


def pi_would_warm_idle(prices: Prices, prompt_tokens: int) -> bool:
    """Pi's ``evaluateCacheWarming(model, promptTokens, "idle").action == "warm"``."""
    if prompt_tokens <= 0 or not prices.available:
        return False
    expected = IDLE_CONTINUATION_PROBABILITY * prices.miss_cost(prompt_tokens) - prices.warm_cost(prompt_tokens)
    return expected >= MINIMUM_EXPECTED_SAVINGS


def min_batch(context_window: int, configured: int | None = None) -> int:
    """The fewest tokens a batch must free: ``configured``, else 2,000 or 5% of the window, whichever is more."""
    if configured is not None:
        return configured
    return max(MIN_BATCH_TOKENS, math.ceil(context_window * MIN_BATCH_WINDOW_SHARE))


class Situation(NamedTuple):
    """What the decision is made on. Times in milliseconds since the epoch; tokens by Pi's own count."""

    boundary: Boundary
    now_ms: int
    last_request_ms: int | None  # the last request, or Pi's last refresh of its cache entry
    cache_ttl_ms: int | None  # the model's promptCache lifetime for the tier in use; None: not declared
    warming_mode: WarmingMode  # Pi's cacheWarming setting
    warming: Warming | None  # Pi's last cache_warming_decision since the last request (None: none seen)
    prompt_tokens: int  # the last request's prompt (usage input + cacheRead + cacheWrite), as Pi's missCost takes
    context_tokens: int  # Pi's figure for the threshold now
    tokens_after: int  # Pi's figure after the batch (an estimate of every message: the usage is stale after an edit)
    tokens_freed: int  # what the batch takes out of the prompt: the pruned outputs' tokens less their stubs'
    threshold: int | None  # contextWindow - reserveTokens; None when Pi does not compact
    growth_per_turn: float | None  # the context's growth per reply (``forecast``)
    prices: Prices
    min_batch_tokens: int
    # The session's own chance that a prompt comes within the cache lifetime after a run settles
    # (``return_probability``); None: Pi's estimate, 0.15.
    return_probability: float | None = None
    # The context right after a compaction (keepRecentTokens and the checkpoint); None: not known.
    compacted_tokens: int | None = None
    # The share of the context's growth that comes with a run's last reply (after which Pi compacts when the run
    # settles, before the user's next prompt) rather than inside a run (Pi compacts before the next reply, into a
    # warm cache); None: not known, every compaction counted as a break.
    settle_growth_share: float | None = None


class DecisionJSON(TypedDict):
    prune: bool
    reason: str
    detail: str
    warmProbability: float | None
    missCost: float | None
    savings: float | None
    remainingTurns: int | None
    coldAtMs: int | None


class Decision(NamedTuple):
    prune: bool
    reason: str  # threshold | cold | warming-stopped | worth-it when prune; else why not
    detail: str
    warm_probability: float | None = None  # the chance the cache is warm at the next request
    miss_cost: float | None = None
    savings: float | None = None
    remaining_turns: int | None = None
    cold_at_ms: int | None = None  # when the cache entry lapses, if known

    def to_json(self) -> DecisionJSON:
        return {
            "prune": self.prune,
            "reason": self.reason,
            "detail": self.detail,
            "warmProbability": self.warm_probability,
            "missCost": None if self.miss_cost is None else round(self.miss_cost, 6),
            "savings": None if self.savings is None else round(self.savings, 6),
            "remainingTurns": self.remaining_turns,
            "coldAtMs": self.cold_at_ms,
        }


def remaining_turns(s: Situation) -> int:
    """The requests still to come before the compaction that would drop the freed tokens anyway."""
    if s.threshold is None or s.growth_per_turn is None or s.growth_per_turn <= 0:
        return DEFAULT_REMAINING
    left = (s.threshold - s.context_tokens) / s.growth_per_turn
    return max(1, min(MAX_REMAINING, math.floor(left) + 1)) if math.isfinite(left) else DEFAULT_REMAINING


def cold_at(s: Situation) -> int | None:
    """When the last request's cache entry lapses: its lifetime after it, or (idle warming) Pi's 30-minute limit."""
    if s.cache_ttl_ms is None or s.last_request_ms is None:
        return None
    return s.last_request_ms + s.cache_ttl_ms


def warm_probability(s: Situation) -> float:
    """The chance that the cache entry is still there when the next request is sent."""
    lapse = cold_at(s)
    if lapse is not None and s.now_ms > lapse:
        return 0.0
    if s.boundary == "turn_end":
        return 1.0  # the next request follows now
    idle_warming = (
        s.warming_mode == "idle"
        and s.cache_ttl_ms is not None
        and s.warming != "stop"
        and pi_would_warm_idle(s.prices, s.prompt_tokens)
    )
    if idle_warming:
        return 1.0
    return IDLE_CONTINUATION_PROBABILITY if s.return_probability is None else s.return_probability


def return_probability(gaps_ms: list[int], cache_ttl_ms: int | None) -> float | None:
    """The chance that a prompt comes back within the cache lifetime after a run settles, from the session's own
    gaps between a run's last reply and the next prompt: Pi's 0.15 counted as ``RETURN_PRIOR_WEIGHT`` gaps, and the
    session's gaps on top (a user who comes back quickly has a cache that is warm more often than Pi's estimate)."""
    if cache_ttl_ms is None:
        return None
    quick = sum(1 for gap in gaps_ms if 0 <= gap <= cache_ttl_ms)
    counted = sum(1 for gap in gaps_ms if gap >= 0)
    return (quick + IDLE_CONTINUATION_PROBABILITY * RETURN_PRIOR_WEIGHT) / (counted + RETURN_PRIOR_WEIGHT)


def compaction_room(s: Situation) -> int | None:
    """The growth a compaction makes room for: the threshold less the compacted context."""
    if s.threshold is None or s.compacted_tokens is None:
        return None
    return max(1, s.threshold - s.compacted_tokens)


def settle_probability(s: Situation) -> float:
    """The chance that the cache is warm at the first request after the run settles (``warm_probability`` as at
    ``agent_before_settle``, whatever the boundary now)."""
    return warm_probability(s._replace(boundary="agent_before_settle"))


def compaction_break_probability(s: Situation) -> float:
    """The chance that a compaction breaks a warm cache: one inside a run always does (Pi compacts before the next
    reply); one when the run settles only if the user is back before the cache lapses."""
    share = 0.0 if s.settle_growth_share is None else min(1.0, max(0.0, s.settle_growth_share))
    return (1.0 - share) + share * settle_probability(s)


def break_check(s: Situation, p: float) -> Decision | None:
    """The break rule: a refusal when the batch is expected to break the cache more often than the compactions it
    puts off would. The batch breaks it with chance ``p``; the tokens it frees put off ``tokens_freed / room`` of a
    compaction (``room``: the growth a compaction makes room for), each a break with
    ``compaction_break_probability``. None: no refusal (also when nothing is known of compaction)."""
    room = compaction_room(s)
    if p <= 0.0 or room is None:
        return None
    saved = s.tokens_freed / room * compaction_break_probability(s)
    if p * BREAK_MARGIN <= saved:
        return None
    return Decision(
        False,
        "breaks",
        f"the cache is warm at the next request with chance {p:.2f}; {s.tokens_freed} tokens freed put off "
        f"{s.tokens_freed / room:.2f} of a compaction ({room} tokens of room), {saved:.2f} of a cache break: "
        f"Pi's compactions break the cache less often",
        p,
    )


def decide(s: Situation) -> Decision:
    """Whether to hand Pi the batch now, and why (see the module doc)."""
    if s.tokens_freed <= 0:
        return Decision(False, "nothing", "nothing to prune")
    if s.tokens_freed < s.min_batch_tokens:
        return Decision(
            False, "small", f"the batch frees {s.tokens_freed} tokens, under the {s.min_batch_tokens} a batch must"
        )
    growth = max(0.0, s.growth_per_turn or 0.0)
    lapse = cold_at(s)
    p = warm_probability(s)
    if s.threshold is not None and s.context_tokens + growth > s.threshold:
        room = max(MIN_TURNS_BOUGHT * growth, THRESHOLD_MIN_SHARE * s.threshold)
        if s.tokens_after + room > s.threshold:
            return Decision(
                False,
                "compaction-due",
                f"pruning would leave {s.tokens_after} tokens, too close to the threshold ({s.threshold}): Pi compacts",
                p,
            )
        refused = break_check(s, p)
        if refused is not None:
            return refused
        return Decision(
            True,
            "threshold",
            f"the context ({s.context_tokens}) nears the compaction threshold ({s.threshold}); pruning alone "
            f"brings it to {s.tokens_after}, so the compaction is put off",
            p,
            cold_at_ms=lapse,
        )
    if p == 0.0:
        last = s.last_request_ms or 0
        return Decision(
            True,
            "cold",
            f"the last request was {(s.now_ms - last) / 1000:.0f} s ago, past the cache lifetime "
            f"({(s.cache_ttl_ms or 0) / 1000:.0f} s): the next request misses the cache anyway",
            p,
            cold_at_ms=lapse,
        )
    refused = break_check(s, p)
    if refused is not None:
        return refused
    if not s.prices.available:
        return Decision(False, "warm", "the cache may be warm and the model has no prices to weigh it", p)
    turns = remaining_turns(s)
    miss = s.prices.miss_cost(s.prompt_tokens)
    freed = s.tokens_freed / 1e6
    savings = freed * s.prices.cache_read * turns + (1 - p) * freed * (s.prices.miss_price() - s.prices.cache_read)
    expected = p * miss
    if savings > SAVINGS_MARGIN * expected:
        reason = "worth-it" if p == 1.0 else "warming-stopped"
        return Decision(
            True,
            reason,
            f"{s.tokens_freed} tokens freed over about {turns} requests save ${savings:.4f}, more than "
            f"{SAVINGS_MARGIN:g} times the ${expected:.4f} a cache miss is expected to cost",
            p,
            miss,
            savings,
            turns,
            lapse,
        )
    return Decision(
        False,
        "warm",
        f"the cache is warm: a miss is expected to cost ${expected:.4f}, the batch saves ${savings:.4f} "
        f"(it must save {SAVINGS_MARGIN:g} times that)",
        p,
        miss,
        savings,
        turns,
        lapse,
    )
