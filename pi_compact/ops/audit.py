"""``audit``: tokens and cost along the branch, reply by reply, beside Pi's own estimate of the same context.

For each assistant reply on the branch: the usage the provider recorded (input, cache read, cache write, output,
total), Pi's chars/4 estimate of the context that reply ended with (its prompt and itself, projected as Pi projects
it at that point: compactions and context edits applied), a cl100k count of the same messages, the ratio
recorded / estimate, and whether Pi would trust that usage from the leaf (Pi's rule, ``projection.assistant_usage``
and the stale-usage rule of ``projection.context_tokens``). Compactions and context edits are markers on the way.
Costs recorded in ``usage.cost`` are summed per model. The intervals between two trusted replies where the recorded
growth differs most from the estimated growth name the entries that explain it (images, large tool outputs).

The leaf's figures are ``check``'s own (``check.check_session``), so the two commands always agree.
The estimate is kept up to date entry by entry (rebuilt at each compaction), so a long branch costs one pass.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import TypedDict

from pi_compact.checkpoint.prune_stub import is_prune_stub
from pi_compact.js import js_integer, js_quotient
from pi_compact.ops.audit_records import (
    Drift,
    DriftEntry,
    DriftJSON,
    LeafJSON,
    Marker,
    MarkerJSON,
    ModelCost,
    ModelCostJSON,
    RatioJSON,
    ReplyJSON,
    ReplyRow,
    usage_cost,
)
from pi_compact.ops.check import CheckOptions, CheckResult, check_session
from pi_compact.pi.messages import current_system_message, entry_messages
from pi_compact.pi.projection import apply_edit, assistant_usage, build_projection, calculate_usage_tokens
from pi_compact.pi.tokens import count_cl100k, count_images, estimate_tokens, message_chars
from pi_compact.session.entries import Entry, JsonDict, Session
from pi_compact.session.tree import Branch

DEFAULT_TOP = 5


class AuditJSON(TypedDict):
    """``AuditResult.to_json()``: the ``audit --json`` document."""

    session: str | None
    leaf: LeafJSON
    model: str | None
    replies: list[ReplyJSON]
    markers: list[MarkerJSON]
    ratio: RatioJSON
    costs: list[ModelCostJSON]
    cost_total: float
    cost_all_branches: float
    drift: list[DriftJSON]
    warnings: list[str]


@dataclass
class AuditResult:
    check: CheckResult
    replies: list[ReplyRow]
    markers: list[Marker]
    costs: list[ModelCost]  # the models Pi's /session lists (ModelCost.listed)
    drifts: list[Drift]
    cost_all_branches: float = 0.0
    cost_total: float | None = None  # over every model of the branch (None: the sum of ``costs``)
    cl100k: bool = True
    warnings: list[str] = field(default_factory=list)

    @property
    def session(self) -> Session:
        return self.check.session

    @property
    def branch(self) -> Branch:
        return self.check.branch

    def ratio_summary(self) -> RatioJSON:
        """Recorded / estimate over the replies with a recorded total: overall, lowest, highest, median."""
        ratios = sorted(r.ratio for r in self.replies if r.ratio is not None)
        recorded = [r for r in self.replies if r.ratio is not None]
        overall = (
            js_quotient(sum(r.total or 0 for r in recorded), sum(r.estimate for r in recorded)) if recorded else None
        )
        return {
            "replies": len(ratios),
            "overall": round(overall, 3) if overall is not None else None,
            "min": round(ratios[0], 3) if ratios else None,
            "median": round(ratios[len(ratios) // 2], 3) if ratios else None,
            "max": round(ratios[-1], 3) if ratios else None,
        }

    def leaf_json(self) -> LeafJSON:
        """The leaf's figures, exactly as ``check --json`` gives them."""
        ctx = self.check.plan.context
        return {
            "entry_id": self.branch.leaf.id if self.branch.leaf else None,
            "context_tokens": ctx.tokens,
            "context_tokens_method": ctx.method,
            "context_tokens_source": ctx.describe(),
            "usage_entry_id": ctx.usage_entry.id if ctx.usage_entry else None,
            "context_window": self.check.context_window,
            "threshold": self.check.threshold,
            "should_compact": self.check.should_compact,
        }

    def to_json(self) -> AuditJSON:
        return {
            "session": str(self.session.path) if self.session.path else None,
            "leaf": self.leaf_json(),
            "model": "/".join(self.check.model) if self.check.model else None,
            "replies": [r.to_json() for r in self.replies],
            "markers": [m.to_json() for m in self.markers],
            "ratio": self.ratio_summary(),
            "costs": [c.to_json() for c in self.costs],
            "cost_total": round(sum(c.cost for c in self.costs) if self.cost_total is None else self.cost_total, 6),
            "cost_all_branches": round(self.cost_all_branches, 6),
            "drift": [d.to_json() for d in self.drifts],
            "warnings": self.warnings,
        }


def model_label(message: JsonDict) -> str | None:
    """``provider/model`` of an assistant reply as Pi's ``/session`` labels its usage: the model that answered
    (``responseModel``: a router's ``auto`` resolved to a concrete model) before the one asked for (Pi's
    ``responseModel ?? model``). None without a provider."""
    provider = message.get("provider")
    if not provider:
        return None
    answered = message.get("responseModel")
    return f"{provider}/{message.get('model') if answered is None else answered}"


def _int(usage: JsonDict, key: str) -> int | None:
    value = usage.get(key)
    return js_integer(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


# ---------------------------------------------------------------------------------------------------------------
# Pi's estimate of the context at every point of the branch, kept up to date entry by entry


class _Counter:
    """Per-message counts, memoised by message object (an unedited message is counted once)."""

    def __init__(self, cl100k: bool) -> None:
        self.cl100k = cl100k
        self._cache: dict[int, tuple[int, int, JsonDict]] = {}

    def count(self, message: JsonDict, memo: bool = True) -> tuple[int, int]:
        """Its counts; kept for the message (and the message with them) only with ``memo``: not for the body of an
        entry the loader dropped, which is let go again once counted."""
        hit = self._cache.get(id(message))
        if hit is not None and hit[2] is message:
            return hit[0], hit[1]
        pi = estimate_tokens(message)
        cl = 0
        if self.cl100k:
            cl = count_cl100k(message)
        if memo:
            self._cache[id(message)] = (pi, cl, message)
        return pi, cl

    def keep(self, messages: list[JsonDict]) -> None:
        """Forget the counts of every message but these (the ones still in the context)."""
        live = {id(m) for m in messages}
        self._cache = {key: hit for key, hit in self._cache.items() if key in live}


class _Context:
    """The projected context of a growing branch prefix, with its estimate (Pi's rule without usage)."""

    def __init__(self, counter: _Counter) -> None:
        self.counter = counter
        self.latest: tuple[int, list[JsonDict]] = (0, [])  # id(entry) and (edited) messages, non-system, of the
        # entry set last (what its drift entry reads; the others' are not held)
        self.sums: dict[int, tuple[int, int]] = {}
        self.systems: list[JsonDict] = []
        self.pending_edits: dict[str, Entry] = {}  # edits whose target has not come yet
        self.by_id: dict[str, Entry] = {}  # entries in context
        self.pi = 0
        self.cl = 0
        self.system_pi = 0
        self.system_cl = 0

    @property
    def estimate(self) -> int:
        return self.system_pi + self.pi

    @property
    def cl100k(self) -> int:
        return self.system_cl + self.cl

    def _set(self, entry: Entry, messages: list[JsonDict], memo: bool = True) -> None:
        old = self.sums.pop(id(entry), (0, 0))
        self.pi -= old[0]
        self.cl -= old[1]
        own = [m for m in messages if m.get("role") != "system"]
        pi = cl = 0
        for m in own:
            a, b = self.counter.count(m, memo)
            pi += a
            cl += b
        self.latest = (id(entry), own)
        self.sums[id(entry)] = (pi, cl)
        self.pi += pi
        self.cl += cl
        systems = [m for m in messages if m.get("role") == "system"]
        if systems:
            self.systems.extend(systems)
            self._system()

    def _system(self) -> None:
        system = current_system_message(self.systems)
        if system is None:
            self.system_pi = self.system_cl = 0
        else:
            self.system_pi, self.system_cl = self.counter.count(system)

    def rebuild(self, prefix: Branch) -> None:
        """At a compaction: start over from Pi's projection of the prefix. The entries the compaction leaves out of
        the context drop their bodies again if the loader had dropped them (``Entry.forget``), and their messages'
        counts are forgotten: what is held is the context of the time, however long the branch."""
        left = list(self.by_id.values())
        self.latest = (0, [])
        self.sums.clear()
        self.systems = []
        self.pending_edits.clear()
        self.pi = self.cl = self.system_pi = self.system_cl = 0
        projection = build_projection(prefix)
        live: list[JsonDict] = []
        for pe in projection.entries:
            messages = pe.messages  # (read from the file each time for one held without its body)
            held = pe.facts is None
            self._set(pe.entry, messages, held)
            if held:
                live.extend(messages)
        self.by_id = {pe.entry.id: pe.entry for pe in projection.entries}
        for entry_id, edit in projection.edits.items():
            if entry_id not in self.by_id:
                self.pending_edits[entry_id] = edit
        kept = {id(pe.entry) for pe in projection.entries}
        for entry in left:
            if id(entry) not in kept:
                entry.forget()
        self.counter.keep(live + self.systems)

    def add(self, entry: Entry, dropped: bool = False) -> None:
        """The entry next on the branch; ``dropped``: its body was not held before (the caller lets it go again)."""
        if entry.type == "context_edit":
            target = entry.raw.get("targetId")
            if isinstance(target, str):
                present = self.by_id.get(target)
                if present is not None:
                    was_dropped = not present.loaded
                    self._set(present, apply_edit(entry_messages(present), entry), not was_dropped)
                    if was_dropped:
                        present.forget()
                else:
                    self.pending_edits[target] = entry
            self._set(entry, [])
            self.by_id[entry.id] = entry
            return
        edit = self.pending_edits.pop(entry.id, None) if entry.id is not None else None
        self._set(entry, apply_edit(entry_messages(entry), edit), not dropped)
        if entry.id is not None:
            self.by_id[entry.id] = entry


def _marker(entry: Entry, position: int, after_reply: int, before: int, after: int) -> Marker:
    target = entry.raw.get("targetId") if entry.type == "context_edit" else None
    tokens_before = entry.raw.get("tokensBefore") if entry.type == "compaction" else None
    return Marker(
        kind=entry.type,
        entry_id=entry.id,
        line=entry.line,
        branch_index=position,
        after_reply=after_reply,
        estimate_before=before,
        estimate_after=after,
        tokens_before=js_integer(tokens_before)
        if isinstance(tokens_before, (int, float)) and not isinstance(tokens_before, bool)
        else None,
        target_id=target if isinstance(target, str) else None,
        omitted=entry.type == "context_edit" and entry.raw.get("replacement") is None,
        pruned=is_prune_stub(entry),
    )


def _drift_entry(entry: Entry, context: _Context) -> DriftEntry:
    latest, own = context.latest
    messages = own if latest == id(entry) else []
    return DriftEntry(
        entry_id=entry.id,
        line=entry.line,
        kind=entry.kind,
        estimate=context.sums.get(id(entry), (0, 0))[0],
        images=sum(count_images(m) for m in messages),
        chars=sum(message_chars(m) for m in messages),
    )


def _reply_row(
    entry: Entry,
    message: JsonDict,
    number: int,
    position: int,
    context: _Context,
    cl100k: bool,
    path: list[Entry],
    last_invalidating: int,
    used_id: str | None,
) -> ReplyRow:
    raw_usage = message.get("usage")
    usage: JsonDict = raw_usage if isinstance(raw_usage, dict) else {}
    has = isinstance(raw_usage, dict)
    stop = message.get("stopReason")
    if not has:
        reason = "no usage"
    elif stop in ("aborted", "error"):
        reason = str(stop)
    elif assistant_usage(message) is None:
        reason = "zero usage"
    elif position < last_invalidating:
        stale_by = path[last_invalidating]
        kind = "compaction" if stale_by.type == "compaction" else "context edit"
        reason = f"stale: recorded before the {kind} {stale_by.id}"
    else:
        reason = "trusted"
    return ReplyRow(
        number=number,
        entry_id=entry.id,
        line=entry.line,
        branch_index=position,
        model=model_label(message),
        stop_reason=stop if isinstance(stop, str) else None,
        input=_int(usage, "input") if has else None,
        cache_read=_int(usage, "cacheRead") if has else None,
        cache_write=_int(usage, "cacheWrite") if has else None,
        output=_int(usage, "output") if has else None,
        total=calculate_usage_tokens(usage) if has else None,
        estimate=context.estimate,
        cl100k=context.cl100k if cl100k else None,
        trusted=reason == "trusted",
        reason=reason,
        used_by_check=entry.id == used_id,
        cost=usage_cost(usage) if has else 0.0,
    )


def _measured(row: ReplyRow) -> bool:
    """A usage that measured the context of its time (stale or not, it was true then)."""
    return row.reason == "trusted" or row.reason.startswith("stale")


class _TopDrifts:
    """The ``top`` intervals whose recorded growth differs most from the estimated growth, kept as the branch is
    walked (the earlier of two equal ones first, as a stable sort of every interval would order them): an interval's
    entries are held only while it is among them, so a long branch costs ``top`` intervals, not one per reply."""

    def __init__(self, top: int) -> None:
        self.top = top
        self._heap: list[tuple[int, int, Drift]] = []  # (|drift|, -reply number, drift): the least kept first

    def offer(self, prev: ReplyRow, cur: ReplyRow, entries: list[DriftEntry], marker: bool) -> None:
        if self.top <= 0 or marker or not (_measured(prev) and _measured(cur)):
            return
        recorded = (cur.total or 0) - (prev.total or 0)
        estimated = cur.estimate - prev.estimate
        key = (abs(recorded - estimated), -cur.number)
        if len(self._heap) >= self.top and key <= self._heap[0][:2]:
            return
        drift = Drift(
            from_reply=prev.number,
            to_reply=cur.number,
            from_entry_id=prev.entry_id,
            to_entry_id=cur.entry_id,
            recorded_growth=recorded,
            estimated_growth=estimated,
            entries=tuple(entries),
        )
        item = (key[0], key[1], drift)
        if len(self._heap) < self.top:
            heapq.heappush(self._heap, item)
        else:
            heapq.heapreplace(self._heap, item)

    def worst(self) -> list[Drift]:
        return [d for _, _, d in sorted(self._heap, key=lambda item: (-item[0], -item[1]))]


def audit_session(
    session: Session, options: CheckOptions | None = None, *, cl100k: bool = True, top: int = DEFAULT_TOP
) -> AuditResult:
    """Audit the branch ``options.leaf_id`` (default: Pi's leaf)."""
    check = check_session(session, options)
    branch = check.branch
    path = branch.entries
    counter = _Counter(cl100k)
    context = _Context(counter)
    replies: list[ReplyRow] = []
    markers: list[Marker] = []
    costs: dict[str, ModelCost] = {}
    # The last compaction or context edit on the branch: usage recorded before it is stale (Pi's rule).
    last_invalidating = max((i for i, e in enumerate(path) if e.type in ("compaction", "context_edit")), default=-1)
    ctx = check.plan.context
    used_id = ctx.usage_entry.id if ctx.method == "usage+estimate" and ctx.usage_entry is not None else None
    since_reply: list[DriftEntry] = []  # entries since the last reply, with their estimate
    marker_since_reply = False
    drifts = _TopDrifts(top)
    for position, entry in enumerate(path):
        dropped = not entry.loaded  # a body the loader let go: read for this step, then let go again
        try:
            before = context.estimate
            if entry.type == "compaction":
                context.rebuild(Branch(session, path[: position + 1]))
            else:
                context.add(entry, dropped)
            if entry.type in ("compaction", "context_edit"):
                markers.append(_marker(entry, position, len(replies), before, context.estimate))
                usage = entry.raw.get("usage")
                if entry.type == "compaction" and isinstance(usage, dict):
                    key = "compaction summaries"
                    costs.setdefault(key, ModelCost(key)).add(usage)
                marker_since_reply = True
                continue
            if entry.type == "usage" and isinstance(entry.raw.get("usage"), dict):
                key = f"{entry.raw.get('provider')}/{entry.raw.get('model')}"
                costs.setdefault(key, ModelCost(key)).add(entry.raw["usage"])
            since_reply.append(_drift_entry(entry, context))
            message = entry.message
            if entry.role != "assistant" or message is None:
                continue
            usage = message.get("usage")
            model = model_label(message)
            if isinstance(usage, dict):
                costs.setdefault(model or "unknown", ModelCost(model or "unknown")).add(usage)
            row = _reply_row(
                entry, message, len(replies) + 1, position, context, cl100k, path, last_invalidating, used_id
            )
            if replies:
                drifts.offer(replies[-1], row, since_reply, marker_since_reply)
            replies.append(row)
            since_reply = []
            marker_since_reply = False
        finally:
            if dropped:
                entry.forget()

    all_cost = 0.0
    for entry in session.entries:
        if entry.role != "assistant" and entry.type not in ("usage", "compaction"):
            continue
        released = not entry.loaded
        message = entry.message
        raw_usage = message.get("usage") if message is not None and entry.role == "assistant" else None
        if entry.type in ("usage", "compaction"):
            raw_usage = entry.raw.get("usage")
        if isinstance(raw_usage, dict):
            all_cost += usage_cost(raw_usage)
        if released:
            entry.forget()  # read back for its usage only
    # As Pi's /session: a model with neither cost nor tokens is not listed (its records still count in the total).
    ordered = sorted((c for c in costs.values() if c.listed), key=lambda c: (-c.cost, c.model))
    return AuditResult(
        check=check,
        replies=replies,
        markers=markers,
        costs=ordered,
        drifts=drifts.worst(),
        cost_all_branches=all_cost,
        cost_total=sum(c.cost for c in costs.values()),
        cl100k=cl100k,
        warnings=list(check.warnings),
    )
