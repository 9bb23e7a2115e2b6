#!/usr/bin/env python3
"""Replay long sessions' growth with and without pruning between compactions, and price them.

    PYTHONPATH=. python bench/prune.py [--seed N] [--sessions FILE ...] [--json OUT]

Each session is a stream of messages in the order Pi produced them (a session file's branch, its own compactions and
context edits left out, or a synthetic shape). The replay sends one request per assistant message, with Pi's rules:

- **compaction**: when the context is over ``contextWindow - reserveTokens`` after a turn, Pi compacts before the
  next request: the context becomes the checkpoint (picompact's default cap, keepRecentTokens / 2, as its size) and
  the messages of the last keepRecentTokens;
- **prompt cache** (Anthropic's rules as Pi uses them): a request reads from the cache the previous request's prompt
  if that entry is alive (5 minutes since it was last written, read or refreshed) and nothing before its end changed;
  the rest of the prompt is written to the cache. A compaction or a batch of edits changes an early message: the next
  request writes its whole prompt (the system prompt is not modelled, which counts a break slightly high);
- **cache warming** (Pi's ``cacheWarming: "idle"``, its default): before the entry expires Pi refreshes it when
  ``evaluateCacheWarming`` says so (continuation probability 1 during a run, 0.15 while idle, for up to 30
  minutes), each refresh priced as Pi prices it (the prompt read from the cache, one output token);
- **timing**: a tool call takes 1-20 s, one in eight 1-8 minutes (tests, builds); between two user prompts the user
  is away 10 s-2 min (half), 2-15 min (a third) or 15-90 min (the rest); seeded, the same for every arm.

Arms: ``none`` (compaction only), ``every-turn`` (at every turn_end, whatever prune would replace), ``policy``
(``ops.prune_policy.decide`` at each turn_end and agent_before_settle, on the figures the extension passes it: the
return probability measured on the gaps so far, the compacted size, the share of growth with a run's last reply),
``policy-pi-p`` (the same with Pi's 0.15 for every user), ``before`` (the rule without the break rule, as it was),
``policy-strict`` (its threshold and cold rules only), and ``none-settle`` (no pruning; a compaction when a run settles
if the next run, at the third quartile of the last ten, would cross the threshold: what Pi's extension API would
need to do it, a compaction that print mode does not wait for, is not there yet).
A "break" is a request that found the cache warm but an earlier message changed (by a compaction or a batch); a
request that found it expired is "cold", whatever changed.
What is pruned is a model of ``ops.prune.plan_prune``: tool results outside the newest keepRecentTokens, of at least
500 tokens, not the latest read of a file edited later, not already pruned, each replaced by a stub of the size the
real planner's stubs have on the session files (measured here, ``stub_tokens``).

Prices: Anthropic's published rates for Claude Sonnet 4.5 (dollars per million tokens): input 3, 5-minute cache
write 3.75 (1.25 x input), cache read 0.30 (0.1 x input), output 15.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pi_compact.ops.prune_policy import Prices, Situation, decide, min_batch, return_probability

SONNET = Prices(input=3.0, output=15.0, cache_read=0.30, cache_write=3.75)
TTL_S = 300.0
MIN_TOKENS = 500  # ops.prune.DEFAULT_MIN_TOKENS
IDLE_P = 0.15


@dataclass
class Msg:
    role: str  # user | assistant | toolResult | other
    tokens: int
    tool: str | None = None
    path: str | None = None  # read/edit/write path
    edits: tuple[str, ...] = ()  # paths an assistant message's calls edit or write
    output: int = 0  # an assistant message's output tokens


# --------------------------------------------------------------------------------------------------- shapes


def from_file(path: Path) -> list[Msg]:
    """The branch's messages in order, as Pi produced them (compactions and edits left out)."""
    from pi_compact.pi.tokens import estimate_tokens
    from pi_compact.session.load import load_session
    from pi_compact.session.tree import get_branch

    branch = get_branch(load_session(path))
    calls: dict[str, tuple[str, str | None]] = {}
    out: list[Msg] = []
    for entry in branch.entries:
        if entry.type == "custom_message":
            out.append(Msg("other", estimate_tokens({"role": "user", "content": entry.raw.get("content", "")})))
            continue
        message = entry.message
        if entry.type != "message" or message is None:
            continue
        role = message.get("role")
        tokens = estimate_tokens(message)
        if role == "assistant":
            edits = []
            for block in message.get("content") or []:
                if isinstance(block, dict) and block.get("type") == "toolCall":
                    args = block.get("arguments") if isinstance(block.get("arguments"), dict) else {}
                    target = args.get("path") or args.get("file_path")
                    calls[str(block.get("id"))] = (str(block.get("name")), target if isinstance(target, str) else None)
                    if block.get("name") in ("edit", "write") and isinstance(target, str):
                        edits.append(target)
            usage = message.get("usage") if isinstance(message.get("usage"), dict) else {}
            output = usage.get("output") if isinstance(usage.get("output"), int) else tokens
            out.append(Msg("assistant", tokens, edits=tuple(edits), output=output))
        elif role == "toolResult":
            name, target = calls.get(str(message.get("toolCallId")), (str(message.get("toolName")), None))
            out.append(Msg("toolResult", tokens, tool=name, path=target))
        elif role == "user":
            out.append(Msg("user", tokens))
        elif role in ("bashExecution", "custom", "branchSummary", "compactionSummary"):
            out.append(Msg("other", tokens))
    return out


def synthetic(kind: str, seed: int, turns: int) -> list[Msg]:
    """A stream of one shape: ``tool-heavy`` (big reads, test logs, searches), ``edit-heavy`` (read, edit, re-read the
    same few files), ``chat-heavy`` (long answers, few small tools)."""
    rng = random.Random(f"{kind}-{seed}")
    out: list[Msg] = []
    files = [f"src/mod{i}.py" for i in range(12 if kind == "edit-heavy" else 80)]
    while len([m for m in out if m.role == "assistant"]) < turns:
        out.append(Msg("user", rng.randint(30, 400)))
        steps = rng.randint(1, 3) if kind == "chat-heavy" else rng.randint(3, 9)
        for _ in range(steps):
            if kind == "chat-heavy" and rng.random() < 0.6:
                break
            path = rng.choice(files)
            pick = rng.random()
            if kind == "edit-heavy" and pick < 0.45:
                out.append(Msg("assistant", rng.randint(150, 900), edits=(path,), output=rng.randint(150, 900)))
                out.append(Msg("toolResult", rng.randint(20, 80), tool="edit", path=path))
                continue
            if pick < 0.55:
                size = rng.randint(800, 6000) if kind != "chat-heavy" else rng.randint(200, 1500)
                tool = "read"
            elif pick < 0.8:
                size, tool, path = rng.randint(400, 9000), "bash", None
            else:
                size, tool, path = rng.randint(100, 2500), "grep", None
            out.append(Msg("assistant", rng.randint(40, 300), output=rng.randint(40, 300)))
            out.append(Msg("toolResult", size, tool=tool, path=path))
        answer = rng.randint(1500, 5000) if kind == "chat-heavy" else rng.randint(100, 900)
        out.append(Msg("assistant", answer, output=answer))
    return out


# --------------------------------------------------------------------------------------------------- replay


@dataclass
class Settings:
    window: int = 200_000
    reserve: int = 16_384
    keep: int = 20_000
    stub_tokens: int = 70

    @property
    def threshold(self) -> int:
        return self.window - self.reserve


@dataclass
class Stats:
    requests: int = 0
    compactions: int = 0
    batches: int = 0
    edits: int = 0
    breaks: int = 0  # compactions and batches followed by a request that found the cache warm but changed
    cold_misses: int = 0  # requests that found the cache expired
    tokens_sent: int = 0
    cached: int = 0
    written: int = 0
    output: int = 0
    warm_refreshes: int = 0
    cost: float = 0.0
    summary_cost: float = 0.0  # what the compactions would cost as LLM summaries (Pi's own or picompact's)
    peak: int = 0
    text_removed: int = 0
    fullest_freed: list[float] = field(default_factory=list)  # share prune frees where the context is fullest
    reasons: dict[str, int] = field(default_factory=dict)


def prunable(ctx: list[tuple[Msg, bool]], keep: int, stub: int) -> list[int]:
    """Positions in ``ctx`` that the prune model replaces (see the module doc)."""
    total, boundary = 0, len(ctx)
    for i in range(len(ctx) - 1, -1, -1):
        total += ctx[i][0].tokens if not ctx[i][1] else stub
        if total >= keep:
            boundary = i
            break
    else:
        return []
    edited_later: set[str] = set()
    latest_read: dict[str, int] = {}
    protected: set[int] = set()
    for i in range(len(ctx) - 1, -1, -1):
        m = ctx[i][0]
        if m.role == "assistant":
            edited_later.update(m.edits)
        elif m.role == "toolResult" and m.tool == "read" and m.path in edited_later and m.path not in latest_read:
            latest_read[m.path] = i
            protected.add(i)
    return [
        i
        for i, (m, done) in enumerate(ctx[:boundary])
        if m.role == "toolResult" and not done and m.tokens >= MIN_TOKENS and m.tokens > stub and i not in protected
    ]


STRICT = ("threshold", "cold")  # the reasons the strict arm acts on
BREAK_RULE = ("policy", "policy-pi-p", "policy-strict")  # arms that weigh a batch's breaks against compactions
MEASURED = ("policy", "policy-strict")  # arms that take the session's own return probability


def user_gap(rng: random.Random, timing: str) -> float:
    """Seconds the user is away between two prompts. ``pi``: back within the cache lifetime 15% of the time, Pi's
    measured continuation probability; ``quick``: half the time within 2 minutes."""
    r = rng.random()
    if timing == "pi":
        return rng.uniform(10, 290) if r < 0.15 else rng.uniform(300, 1800) if r < 0.6 else rng.uniform(1800, 7200)
    return rng.uniform(10, 120) if r < 0.5 else rng.uniform(120, 900) if r < 0.83 else rng.uniform(900, 5400)


def replay(stream: list[Msg], arm: str, s: Settings, seed: int, timing: str = "pi") -> Stats:
    rng = random.Random(seed)
    st = Stats()
    ctx: list[tuple[Msg, bool]] = []  # (message, pruned)
    now = 0.0
    cache_alive_until = -1.0  # when the cache entry of the last request expires
    cached_prefix = 0  # tokens of the last request's prompt (what the cache holds)
    changed = False  # an edit or compaction since the last request
    last_request = 0.0
    growth: list[int] = []
    last_prompt = 0
    runs: list[int] = []  # each run's growth
    run_start = 0
    gaps: list[int] = []  # ms from a run's last reply to the next prompt, as the session file shows them
    grown = [0, 0]  # tokens added inside runs, and with a run's last reply

    def tokens() -> int:
        return sum(s.stub_tokens if done else m.tokens for m, done in ctx)

    def warm_through(until: float, idle: bool) -> None:
        """Pi's refreshes while nothing is sent, from the last request to ``until``."""
        nonlocal cache_alive_until
        if cached_prefix <= 0:
            return
        started = cache_alive_until - TTL_S
        limit = started + (30 * 60 if idle else 60 * 60)
        p = IDLE_P if idle else 1.0
        miss = SONNET.miss_cost(cached_prefix)
        warm = SONNET.warm_cost(cached_prefix)
        if p * miss - warm < 0.05:
            return
        at = cache_alive_until - 0.1 * TTL_S
        while at < until and at <= limit:
            st.warm_refreshes += 1
            st.cost += warm
            cache_alive_until = at + TTL_S
            at = cache_alive_until - 0.1 * TTL_S

    def request(output: int) -> None:
        nonlocal cache_alive_until, cached_prefix, changed, last_request, last_prompt
        prompt = tokens()
        warm = now <= cache_alive_until
        if warm and not changed:
            read = min(cached_prefix, prompt)
        else:
            read = 0
            if not warm and cached_prefix:
                st.cold_misses += 1
            elif changed:
                st.breaks += 1
        st.requests += 1
        st.tokens_sent += prompt
        st.cached += read
        st.written += prompt - read
        st.output += output
        st.cost += (read * SONNET.cache_read + (prompt - read) * SONNET.cache_write + output * SONNET.output) / 1e6
        if last_prompt and not changed:
            growth.append(prompt - last_prompt)
        elif changed:
            growth.clear()
        st.peak = max(st.peak, prompt)
        cached_prefix, cache_alive_until, changed, last_request, last_prompt = prompt, now + TTL_S, False, now, prompt

    def run_growth() -> float:
        """What the next run is expected to add: the third quartile of the last ten runs' growth."""
        recent = sorted(runs[-10:])
        return float(recent[(len(recent) * 3) // 4]) if recent else 0.0

    def decide_for(boundary: str, picks: list[int], freed: int) -> Any:
        recent = sorted(growth[-10:])
        median = recent[len(recent) // 2] if recent else None
        context = tokens()
        return decide(
            Situation(
                boundary=boundary,  # type: ignore[arg-type]
                now_ms=int(now * 1000),
                last_request_ms=int((cache_alive_until - TTL_S) * 1000),
                cache_ttl_ms=int(TTL_S * 1000),
                warming_mode="idle",
                warming=None,
                prompt_tokens=cached_prefix,
                context_tokens=context,
                tokens_after=context - freed,
                tokens_freed=freed,
                threshold=s.threshold,
                growth_per_turn=median,
                prices=SONNET,
                min_batch_tokens=min_batch(s.window),
                return_probability=return_probability(gaps, int(TTL_S * 1000)) if arm in MEASURED else None,
                compacted_tokens=s.keep + s.keep // 2 if arm in BREAK_RULE else None,
                settle_growth_share=grown[1] / (grown[0] + grown[1])
                if arm in BREAK_RULE and grown[0] + grown[1]
                else None,
            )
        )

    def prune(boundary: str) -> str | None:
        """Runs the arm's rule at ``boundary``: "pruned" when a batch went in, else None."""
        nonlocal changed
        if arm in ("none", "none-settle"):
            return None
        picks = prunable(ctx, s.keep, s.stub_tokens)
        freed = sum(ctx[i][0].tokens - s.stub_tokens for i in picks)
        if arm.startswith("policy") or arm == "before":
            decision = decide_for(boundary, picks, freed)
            if not decision.prune or (arm == "policy-strict" and decision.reason not in STRICT):
                return None
            st.reasons[decision.reason] = st.reasons.get(decision.reason, 0) + 1
        elif not picks:
            return None
        for i in picks:
            if ctx[i][0].role != "toolResult":
                st.text_removed += 1
            ctx[i] = (ctx[i][0], True)
        st.batches += 1
        st.edits += len(picks)
        changed = True
        return "pruned"

    def compact() -> None:
        nonlocal ctx, changed
        picks = prunable(ctx, s.keep, s.stub_tokens)
        context = tokens()
        st.fullest_freed.append(sum(ctx[i][0].tokens - s.stub_tokens for i in picks) / context)
        # Pi sends a summary request uncached (no cache write): the context as input, about 2,000 tokens out.
        st.summary_cost += (context * SONNET.input + 2_000 * SONNET.output) / 1e6
        kept, total = [], 0
        for m, done in reversed(ctx):
            if total >= s.keep:
                break
            kept.append((m, done))
            total += s.stub_tokens if done else m.tokens
        ctx = [(Msg("other", s.keep // 2), False), *reversed(kept)]
        st.compactions += 1
        changed = True

    i = 0
    n = len(stream)
    while i < n:
        m = stream[i]
        if m.role == "user" and i > 0:
            runs.append(sum(x.tokens for x in stream[run_start:i]))
            prune("agent_before_settle")
            if arm == "none-settle" and tokens() + run_growth() > s.threshold:
                compact()
            gap = user_gap(rng, timing)
            gaps.append(int(gap * 1000))
            warm_through(now + gap, idle=True)
            now += gap
            if tokens() > s.threshold:  # Pi's check before the prompt
                compact()
            run_start = i
        if m.role == "assistant":
            request(m.output)
            ctx.append((m, False))
            now += rng.uniform(2, 20)  # the reply streams
            j = i + 1
            grown[0 if j < n and stream[j].role == "toolResult" else 1] += m.tokens
            while j < n and stream[j].role == "toolResult":
                grown[0] += stream[j].tokens
                ctx.append((stream[j], False))
                run = rng.uniform(60, 480) if rng.random() < 0.125 else rng.uniform(1, 20)
                warm_through(now + run, idle=False)
                now += run
                j += 1
            prune("turn_end")
            if tokens() > s.threshold:
                compact()
            i = j
            continue
        ctx.append((m, False))
        i += 1
    return st


ARMS = ("none", "none-settle", "every-turn", "before", "policy-pi-p", "policy", "policy-strict")


def stub_size(files: list[Path]) -> int:
    """The mean size of the real planner's stubs on these sessions (tokens), and a check that it replaces only tool
    results."""
    from pi_compact.ops.check import CheckOptions, check_session
    from pi_compact.ops.prune import PruneOptions, plan_prune

    sizes: list[int] = []
    for path in files:
        check = check_session(path, CheckOptions(context_window=10_000_000, keep_recent_tokens=20_000))
        plan = plan_prune(check, PruneOptions(dry_run=True))
        roles = {e.id: e.role for e in check.branch.entries}
        assert all(roles.get(e["targetId"]) == "toolResult" for e in plan.entries), "prune replaced other text"
        sizes.extend(p.stub_tokens for p in plan.pruned)
    return round(sum(sizes) / len(sizes)) if sizes else 70


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--turns", type=int, default=600, help="assistant replies per synthetic shape")
    ap.add_argument("--sessions", type=Path, nargs="*", default=[], help="session files to replay as well")
    ap.add_argument("--small-window", type=Path, nargs="*", default=[], help="files replayed with a 32k window")
    ap.add_argument("--timing", choices=("pi", "quick"), default="pi", help="how long the user is away")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)

    shapes: list[tuple[str, list[Msg], Settings]] = []
    with tempfile.TemporaryDirectory() as tmp:
        generated = Path(tmp) / "gen.jsonl"
        import subprocess

        subprocess.run(
            [
                *(sys.executable, str(Path(__file__).parent / "gen_session.py")),
                *("--size", "8MB", "--out", str(generated), "--seed", str(args.seed), "--quiet"),
            ],
            check=True,
        )
        files = [generated, *args.sessions, *args.small_window]
        stub = stub_size(files)
        base = Settings(stub_tokens=stub)
        shapes.append(("generator (gen_session.py, 8 MB)", from_file(generated), base))
    for path in args.sessions:
        shapes.append((f"file {path.name}", from_file(path), base))
    for path in args.small_window:
        small = Settings(window=32_000, reserve=4_096, keep=4_000, stub_tokens=stub)
        shapes.append((f"real Pi CLI {path.name} (32k window)", from_file(path), small))
    for kind in ("tool-heavy", "edit-heavy", "chat-heavy"):
        shapes.append((f"{kind} ({args.turns} replies)", synthetic(kind, args.seed, args.turns), base))

    rows: list[dict[str, Any]] = []
    for name, stream, s in shapes:
        results = {arm: replay(stream, arm, s, args.seed, args.timing) for arm in ARMS}
        none = results["none"]
        full = none.fullest_freed
        row = {
            "shape": name,
            "messages": len(stream),
            "stub_tokens": s.stub_tokens,
            "fullest_freed_min": round(min(full), 3) if full else None,
            "fullest_freed_mean": round(sum(full) / len(full), 3) if full else None,
            "arms": {arm: {k: v for k, v in vars(r).items() if k != "fullest_freed"} for arm, r in results.items()},
        }
        rows.append(row)
        print(f"\n{name}: {len(stream)} messages; stub {s.stub_tokens} tokens; window {s.window}; {args.timing} timing")
        if full:
            print(f"  prune frees at the fullest points: min {min(full):.0%}, mean {sum(full) / len(full):.0%}")
        print(
            f"  {'arm':<11}{'compact':>8}{'batches':>8}{'edits':>7}{'breaks':>7}{'cold':>6}{'warms':>6}"
            f"{'sent Mtok':>10}{'cached':>8}{'cost $':>9}{'vs none':>8}{'+summ $':>9}{'text':>5}  reasons"
        )
        for arm, r in results.items():
            share = r.cached / r.tokens_sent if r.tokens_sent else 0
            delta = (r.cost / none.cost - 1) if none.cost else math.nan
            print(
                f"  {arm:<11}{r.compactions:>8}{r.batches:>8}{r.edits:>7}{r.breaks:>7}{r.cold_misses:>6}"
                f"{r.warm_refreshes:>6}{r.tokens_sent / 1e6:>10.2f}{share:>8.0%}{r.cost:>9.2f}{delta:>+8.0%}"
                f"{r.cost + r.summary_cost:>9.2f}"
                f"{r.text_removed:>5}  {json.dumps(r.reasons) if r.reasons else ''}"
            )
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
