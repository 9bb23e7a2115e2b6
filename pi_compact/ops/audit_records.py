"""The rows of an ``audit``: one per assistant reply, the compaction and context-edit markers between them, the cost
per model and the intervals of largest drift, each with the JSON it prints (``ops.audit`` computes them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

from pi_compact.js import js_double, js_integer, js_quotient
from pi_compact.pi.projection import calculate_usage_tokens
from pi_compact.session.entries import JsonDict


class ReplyUsageJSON(TypedDict):
    input: int | None
    cache_read: int | None
    cache_write: int | None
    output: int | None
    total: int


class ReplyJSON(TypedDict):
    number: int
    entry_id: str
    line: int
    branch_index: int
    model: str | None
    stop_reason: str | None
    usage: ReplyUsageJSON | None
    estimate: int
    cl100k: int | None
    ratio: float | None
    trusted: bool
    reason: str
    used_by_check: bool
    cost: float


class MarkerJSON(TypedDict):
    kind: str
    entry_id: str
    line: int
    branch_index: int
    after_reply: int
    estimate_before: int
    estimate_after: int
    freed: int
    tokens_before: int | None
    target_id: str | None
    omitted: bool
    pruned: bool


class ModelCostJSON(TypedDict):
    model: str
    records: int
    input: int
    output: int
    cache_read: int
    cache_write: int
    total_tokens: int
    cost: float


class DriftEntryJSON(TypedDict):
    entry_id: str
    line: int
    kind: str
    estimate: int
    images: int
    chars: int


class DriftJSON(TypedDict):
    from_reply: int
    to_reply: int
    from_entry_id: str
    to_entry_id: str
    recorded_growth: int
    estimated_growth: int
    drift: int
    entries: list[DriftEntryJSON]


class RatioJSON(TypedDict):
    """Recorded total / Pi's estimate over the replies with a recorded total."""

    replies: int
    overall: float | None
    min: float | None
    median: float | None
    max: float | None


class LeafJSON(TypedDict):
    """The leaf's figures, as ``check --json`` gives them."""

    entry_id: str | None
    context_tokens: int
    context_tokens_method: str
    context_tokens_source: str
    usage_entry_id: str | None
    context_window: int
    threshold: int
    should_compact: bool


def usage_cost(usage: JsonDict) -> float:
    cost = usage.get("cost")
    total = cost.get("total") if isinstance(cost, dict) else None
    if isinstance(total, int) and not isinstance(total, bool):
        return js_double(total)
    return float(total) if isinstance(total, float) else 0.0


@dataclass(frozen=True, slots=True)
class ReplyRow:
    """One assistant reply on the branch."""

    number: int  # 1-based among the branch's assistant replies
    entry_id: str
    line: int
    branch_index: int
    model: str | None
    stop_reason: str | None
    input: int | None  # None: no usage recorded
    cache_read: int | None
    cache_write: int | None
    output: int | None
    total: int | None
    estimate: int  # Pi's chars/4 estimate of the context the reply ended with
    cl100k: int | None
    trusted: bool  # whether Pi would use this usage, seen from the leaf
    reason: str  # "trusted", "no usage", "aborted", "error", "zero usage", "stale: ..."
    used_by_check: bool  # the usage check's context figure starts from
    cost: float

    @property
    def ratio(self) -> float | None:
        """Recorded total / Pi's estimate (None without a usable recorded total)."""
        if not self.total or self.total <= 0 or self.estimate <= 0:
            return None
        return js_quotient(self.total, self.estimate)  # a total past any double (10^400, Infinity): Infinity

    def to_json(self) -> ReplyJSON:
        ratio = self.ratio
        return {
            "number": self.number,
            "entry_id": self.entry_id,
            "line": self.line,
            "branch_index": self.branch_index,
            "model": self.model,
            "stop_reason": self.stop_reason,
            "usage": None
            if self.total is None
            else {
                "input": self.input,
                "cache_read": self.cache_read,
                "cache_write": self.cache_write,
                "output": self.output,
                "total": self.total,
            },
            "estimate": self.estimate,
            "cl100k": self.cl100k,
            "ratio": round(ratio, 3) if ratio is not None else None,
            "trusted": self.trusted,
            "reason": self.reason,
            "used_by_check": self.used_by_check,
            "cost": self.cost,
        }


@dataclass(frozen=True, slots=True)
class Marker:
    """A compaction or a context edit on the branch, between replies."""

    kind: str  # "compaction" or "context_edit"
    entry_id: str
    line: int
    branch_index: int
    after_reply: int  # how many replies came before it
    estimate_before: int  # Pi's estimate of the context just before it
    estimate_after: int  # and just after it
    tokens_before: int | None = None  # a compaction's recorded tokensBefore
    target_id: str | None = None  # a context edit's target
    omitted: bool = False  # a context edit that omits its target
    pruned: bool = False  # a context edit that replaces a tool output with a prune stub (``picompact prune``)

    @property
    def freed(self) -> int:
        return self.estimate_before - self.estimate_after

    def to_json(self) -> MarkerJSON:
        return {
            "kind": self.kind,
            "entry_id": self.entry_id,
            "line": self.line,
            "branch_index": self.branch_index,
            "after_reply": self.after_reply,
            "estimate_before": self.estimate_before,
            "estimate_after": self.estimate_after,
            "freed": self.freed,
            "tokens_before": self.tokens_before,
            "target_id": self.target_id,
            "omitted": self.omitted,
            "pruned": self.pruned,
        }


@dataclass(slots=True)
class ModelCost:
    """What ``usage`` recorded for one model (or for compaction summaries without one)."""

    model: str
    replies: int = 0
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total_tokens: int = 0
    cost: float = 0.0

    def add(self, usage: JsonDict) -> None:
        def num(key: str) -> float:
            value = usage.get(key)
            return value if isinstance(value, (int, float)) and not isinstance(value, bool) else 0

        self.replies += 1
        self.input += js_integer(num("input"))
        self.output += js_integer(num("output"))
        self.cache_read += js_integer(num("cacheRead"))
        self.cache_write += js_integer(num("cacheWrite"))
        self.total_tokens += calculate_usage_tokens(usage)
        self.cost += usage_cost(usage)

    @property
    def listed(self) -> bool:
        """Whether Pi's ``/session`` lists it: some cost, or some tokens (input, output, cache read and write)."""
        return self.cost > 0 or self.input + self.output + self.cache_read + self.cache_write > 0

    def to_json(self) -> ModelCostJSON:
        return {
            "model": self.model,
            "records": self.replies,
            "input": self.input,
            "output": self.output,
            "cache_read": self.cache_read,
            "cache_write": self.cache_write,
            "total_tokens": self.total_tokens,
            "cost": round(self.cost, 6),
        }


@dataclass(frozen=True, slots=True)
class DriftEntry:
    """An entry between two replies, with what Pi's estimate gives it."""

    entry_id: str
    line: int
    kind: str
    estimate: int
    images: int
    chars: int

    def to_json(self) -> DriftEntryJSON:
        return {
            "entry_id": self.entry_id,
            "line": self.line,
            "kind": self.kind,
            "estimate": self.estimate,
            "images": self.images,
            "chars": self.chars,
        }


@dataclass(frozen=True, slots=True)
class Drift:
    """Between two trusted replies: how much the recorded usage grew, how much Pi's estimate grew, and the entries
    that came in between (the ones the difference is about)."""

    from_reply: int
    to_reply: int
    from_entry_id: str
    to_entry_id: str
    recorded_growth: int
    estimated_growth: int
    entries: tuple[DriftEntry, ...]

    @property
    def drift(self) -> int:
        return self.recorded_growth - self.estimated_growth

    def to_json(self) -> DriftJSON:
        return {
            "from_reply": self.from_reply,
            "to_reply": self.to_reply,
            "from_entry_id": self.from_entry_id,
            "to_entry_id": self.to_entry_id,
            "recorded_growth": self.recorded_growth,
            "estimated_growth": self.estimated_growth,
            "drift": self.drift,
            "entries": [e.to_json() for e in self.entries],
        }
