"""The timing rule of pruning inside Pi (``ops.prune_policy``): a batch only when it costs no prompt cache, with
Pi's own cache economics (``evaluateCacheWarming`` of pi-ai, asked of Pi itself)."""

from __future__ import annotations

import json
import math
import subprocess

import pytest

from pi_compact.ops.prune_policy import (
    BREAK_MARGIN,
    IDLE_CONTINUATION_PROBABILITY,
    SAVINGS_MARGIN,
    THRESHOLD_MIN_SHARE,
    Prices,
    Situation,
    decide,
    min_batch,
    pi_would_warm_idle,
    return_probability,
)
from tests.oracle import MODULES, NODE22, NOT_INSTALLED, pi_installed

SONNET = Prices(input=3, output=15, cache_read=0.3, cache_write=3.75)  # Anthropic's list prices, $ per M tokens
NOW = 1_800_000_000_000


def situation(**changes: object) -> Situation:
    base = Situation(
        boundary="turn_end",
        now_ms=NOW,
        last_request_ms=NOW - 5_000,
        cache_ttl_ms=300_000,
        warming_mode="idle",
        warming=None,
        prompt_tokens=100_000,
        context_tokens=100_000,
        tokens_after=60_000,
        tokens_freed=40_000,
        threshold=183_616,
        growth_per_turn=2_000,
        prices=SONNET,
        min_batch_tokens=10_000,
    )
    return base._replace(**changes)  # type: ignore[arg-type]


def test_a_warm_cache_mid_run_is_left_alone_unless_the_saving_is_larger_than_the_miss() -> None:
    # 40k tokens freed at $0.30/M over ~124 requests: $1.49; a miss of 60k tokens costs $0.207, three times $0.62.
    worth = decide(situation(context_tokens=60_000, prompt_tokens=60_000, tokens_after=20_000, growth_per_turn=1_000))
    assert worth.prune and worth.reason == "worth-it" and worth.savings is not None and worth.miss_cost is not None
    assert worth.savings > SAVINGS_MARGIN * worth.miss_cost
    # Over ~42 requests the same batch saves $0.50: more than one miss ($0.345), not three.
    assert decide(situation()).reason == "warm"
    # Close to the threshold (few requests left to save on) the same batch does not pay for the miss.
    late = decide(situation(context_tokens=170_000, tokens_after=150_000, tokens_freed=20_000, growth_per_turn=4_000))
    assert not late.prune and late.reason == "warm"


def test_past_the_cache_lifetime_the_batch_goes_in_whatever_it_saves() -> None:
    cold = decide(situation(last_request_ms=NOW - 301_000, tokens_freed=10_000, tokens_after=90_000))
    assert cold.prune and cold.reason == "cold" and cold.warm_probability == 0.0
    # Without prices nothing else can justify a break of a warm cache.
    assert not decide(situation(prices=Prices())).prune
    assert decide(situation(prices=Prices(), last_request_ms=NOW - 301_000)).reason == "cold"


def test_one_batch_at_a_time_never_a_small_edit() -> None:
    small = decide(situation(last_request_ms=NOW - 301_000, tokens_freed=9_999, tokens_after=90_001))
    assert not small.prune and small.reason == "small"
    assert not decide(situation(tokens_freed=0, tokens_after=100_000)).prune
    assert min_batch(200_000) == 10_000 and min_batch(32_000) == 2_000 and min_batch(32_000, 500) == 500


def test_near_the_threshold_pruning_puts_the_compaction_off_or_leaves_it_to_pi() -> None:
    # The next reply would cross 183,616: pruning to 120k buys many replies, so it goes in even with a warm cache.
    near = decide(situation(context_tokens=182_000, tokens_after=120_000, tokens_freed=62_000))
    assert near.prune and near.reason == "threshold"
    # Pruning that cannot get a quarter of the threshold below it is not done: Pi compacts.
    limit = int(183_616 * (1 - THRESHOLD_MIN_SHARE))
    due = decide(situation(context_tokens=190_000, tokens_after=limit + 1, tokens_freed=40_000))
    assert not due.prune and due.reason == "compaction-due"
    assert decide(situation(context_tokens=190_000, tokens_after=limit, tokens_freed=40_000)).reason == "threshold"
    # Pi does not compact: no threshold rule.
    assert decide(situation(threshold=None, context_tokens=182_000, tokens_after=120_000)).reason != "threshold"


def test_before_settling_the_chance_of_a_warm_cache_is_pis_own() -> None:
    # 100k tokens on Sonnet: Pi would not keep the cache warm while idle, so the next prompt finds it warm only with
    # Pi's continuation probability.
    assert not pi_would_warm_idle(SONNET, 100_000)
    settle = decide(situation(boundary="agent_before_settle", tokens_freed=12_000, tokens_after=88_000))
    assert settle.prune and settle.reason == "warming-stopped"
    assert settle.warm_probability == IDLE_CONTINUATION_PROBABILITY
    # 300k tokens: Pi keeps it warm; the same share freed must now beat a whole miss.
    big = situation(boundary="agent_before_settle", prompt_tokens=300_000, context_tokens=300_000, threshold=900_000)
    assert pi_would_warm_idle(SONNET, 300_000)
    assert decide(big._replace(tokens_freed=12_000, tokens_after=288_000)).warm_probability == 1.0
    # ... unless Pi said it stops warming, or warming is off.
    assert decide(big._replace(warming="stop")).warm_probability == IDLE_CONTINUATION_PROBABILITY
    assert decide(big._replace(warming_mode="off")).warm_probability == IDLE_CONTINUATION_PROBABILITY
    # Mid-run the next request follows at once: a warm cache, whatever Pi would do while idle.
    assert decide(big._replace(boundary="turn_end", warming="stop")).warm_probability == 1.0


# A compaction leaves keepRecentTokens (20k) and the checkpoint (10k): 153,616 tokens of room below the threshold.
ROOM = 183_616 - 30_000


def test_a_batch_breaks_the_cache_no_more_often_than_the_compactions_it_puts_off() -> None:
    known = situation(compacted_tokens=30_000, settle_growth_share=0.0)
    # Mid-run a batch breaks the cache for sure; 62k tokens freed put off 0.4 of a compaction: Pi compacts instead.
    near = decide(known._replace(context_tokens=182_000, tokens_after=120_000, tokens_freed=62_000))
    assert not near.prune and near.reason == "breaks"
    # Before the prompt, a user back within the lifetime one time in ten: the same batch goes in...
    settle = known._replace(boundary="agent_before_settle", return_probability=0.1)
    assert decide(settle._replace(context_tokens=182_000, tokens_after=120_000, tokens_freed=62_000)).prune
    # ... and a smaller one only while the breaks it saves cover its chance of one, with the margin.
    enough = math.ceil(0.1 * BREAK_MARGIN * ROOM)
    assert decide(settle._replace(tokens_freed=enough, tokens_after=100_000 - enough)).reason == "warming-stopped"
    refused = decide(settle._replace(tokens_freed=enough - 100, tokens_after=100_100 - enough))
    assert not refused.prune and refused.reason == "breaks" and refused.warm_probability == 0.1
    # A user back in time six times in ten: nothing short of a compaction's room.
    quick = settle._replace(return_probability=0.6)
    assert decide(quick._replace(context_tokens=182_000, tokens_after=120_000, tokens_freed=62_000)).reason == "breaks"
    # Where Pi's compactions come as runs settle (all the growth with a run's last reply), they break the cache only
    # when the user is back in time too: a batch saves fewer breaks and must free more.
    assert decide(settle._replace(tokens_freed=enough, tokens_after=100_000 - enough)).prune
    late = settle._replace(settle_growth_share=1.0, tokens_freed=enough, tokens_after=100_000 - enough)
    assert decide(late).reason == "breaks"
    # A cold cache breaks nothing: the rule does not apply.
    assert decide(known._replace(last_request_ms=NOW - 301_000)).reason == "cold"


def test_the_chance_of_a_quick_return_is_the_sessions_own() -> None:
    ttl = 300_000
    assert return_probability([], ttl) == IDLE_CONTINUATION_PROBABILITY  # nothing seen: Pi's estimate
    assert return_probability([30_000] * 4, ttl) == pytest.approx((4 + 4 * IDLE_CONTINUATION_PROBABILITY) / 8)
    assert return_probability([3_600_000] * 4, ttl) == pytest.approx(4 * IDLE_CONTINUATION_PROBABILITY / 8)
    assert return_probability([ttl, ttl + 1, -5], ttl) == pytest.approx((1 + 0.6) / 6)  # a clock gone back: unused
    assert return_probability([30_000], None) is None  # no lifetime: Pi's estimate stands
    # It is the chance used before the prompt; mid-run the next request follows at once.
    settle = situation(boundary="agent_before_settle", return_probability=0.4)
    assert decide(settle).warm_probability == 0.4
    assert decide(settle._replace(boundary="turn_end")).warm_probability == 1.0


@pytest.mark.skipif(not pi_installed(), reason=NOT_INSTALLED)
def test_the_cache_economics_are_pis() -> None:
    prices = [SONNET, Prices(input=1, output=5, cache_read=0.1, cache_write=1.25), Prices(input=2, cache_read=0.5)]
    sizes = [0, 1_000, 50_000, 150_000, 230_000, 300_000, 1_000_000]
    script = (
        "import { evaluateCacheWarming } from '"
        + (MODULES / "@earendil-works" / "pi-ai" / "dist" / "cache-warming.js").as_uri()
        + "';\n"
        + "const cases = JSON.parse(process.argv[1]); const out = [];\n"
        + "for (const [cost, tokens] of cases) out.push(evaluateCacheWarming({ cost }, tokens, 'idle'));\n"
        + "console.log(JSON.stringify(out));\n"
    )
    cases = [
        [{"input": p.input, "output": p.output, "cacheRead": p.cache_read, "cacheWrite": p.cache_write}, n]
        for p in prices
        for n in sizes
    ]
    proc = subprocess.run(
        [str(NODE22), "--input-type=module", "-e", script, json.dumps(cases)], capture_output=True, check=True
    )
    answers = json.loads(proc.stdout)
    for (cost, tokens), answer in zip(cases, answers, strict=True):
        p = Prices(cost["input"], cost["output"], cost["cacheRead"], cost["cacheWrite"])
        assert p.miss_cost(tokens) == pytest.approx(answer["missCost"], abs=1e-12)
        assert p.warm_cost(tokens) == pytest.approx(answer["warmCost"], abs=1e-12)
        assert pi_would_warm_idle(p, tokens) == (answer["action"] == "warm"), (cost, tokens)
