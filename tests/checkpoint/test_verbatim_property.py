"""Properties of the verbatim checkpoint on generated sessions: deterministic, never crashes, fits the cap."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_compact.checkpoint import VerbatimOptions, build_verbatim_checkpoint
from pi_compact.checkpoint.verbatim.cap import MIN_CONVERSATION_CHARS
from pi_compact.js import js_len
from pi_compact.pi.plan import plan_compaction
from pi_compact.session import get_branch, load_session_bytes
from tests.helpers.checkpoint import CWD, span_texts
from tests.helpers.sessions import SERIAL, SessionBuilder

PIECE = st.one_of(
    st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=8),
    st.sampled_from(["\n", " ", "/", CWD, "😀", "\u2028", "\\", '"', "</span>", "[e0000001]", "\r\n"]),
)
TEXT = st.lists(PIECE, max_size=8).map("".join)
LONG_TEXT = st.one_of(TEXT, TEXT.map(lambda t: (t or "x") * 40))
ARGS = st.dictionaries(
    st.sampled_from(["path", "command", "content", "edits", "oldText", "newText", "pattern", "offset", "x"]),
    st.one_of(
        LONG_TEXT, st.integers(-5, 10**6), st.lists(st.integers(-(10**9), 10**9), max_size=3), st.none(), st.booleans()
    ),
    max_size=4,
)
OP = st.one_of(
    st.tuples(st.just("user"), LONG_TEXT),
    st.tuples(st.just("assistant"), TEXT),
    st.tuples(
        st.just("tool"),
        st.sampled_from(["read", "write", "edit", "bash", "grep", "mcp__x"]),
        ARGS,
        st.sampled_from(["ok", "error", "missing"]),
    ),
    st.tuples(st.just("bash"), TEXT, st.one_of(st.none(), st.integers(0, 2))),
    st.tuples(st.just("custom"), TEXT),
    st.tuples(st.just("edit"), st.integers(0, 50), st.booleans()),
    st.tuples(
        st.just("image"),
    ),
    st.tuples(st.just("compaction"), TEXT),
    st.tuples(
        st.just("checkpoint"),
    ),
)


def build(ops: list[tuple[Any, ...]]) -> SessionBuilder:
    b = SessionBuilder(scheme=SERIAL)
    b.user("first")
    for op in ops:
        kind = op[0]
        if kind == "user":
            b.user(op[1])
        elif kind == "assistant":
            b.assistant({"type": "thinking", "thinking": "hmm"}, op[1])
        elif kind == "tool":
            call = b.call(op[1], op[2])
            b.assistant(call, stop="toolUse")
            if op[3] != "missing":
                b.result(call, "out", is_error=op[3] == "error")
        elif kind == "bash":
            b.bash(op[1], "out", op[2])
        elif kind == "custom":
            b.custom_message(op[1] or "t")
        elif kind == "edit":
            target = b.entries[op[1] % len(b.entries)]["id"]
            b.context_edit(target, None if op[2] else {"content": "replaced"})
        elif kind == "image":
            b.user([{"type": "image", "data": "AA==", "mimeType": "image/jpeg"}])
        elif kind == "compaction":
            b.compaction(op[1] or "summary", b.entries[-1]["id"])
        elif kind == "checkpoint":
            checkpoint_round(b)
    b.user("continue")
    return b


def checkpoint_round(b: SessionBuilder) -> None:
    """Record a picompact checkpoint of the session so far, when Pi would compact it."""
    plan = plan_compaction(get_branch(load_session_bytes(b.to_bytes())), 50)
    if not plan.can_compact or plan.first_kept is None:
        return
    cp = build_verbatim_checkpoint(plan, VerbatimOptions("/s.jsonl", 300))
    b.compaction(cp.summary, plan.first_kept.id, details=cp.details, fromHook=True)
    b.custom_message("picompact.reorientation", cp.reminder, display=False)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    ops=st.lists(OP, max_size=25),
    keep=st.sampled_from([1, 10, 40, 400]),
    cap=st.sampled_from([None, 1, 300, 550, 700, 1000, 2000]),
)
def test_rendering_is_deterministic_never_raises_and_fits_the_cap(
    ops: list[tuple[Any, ...]], keep: int, cap: int | None
) -> None:
    data = build(ops).to_bytes()

    def run() -> Any:
        plan = plan_compaction(get_branch(load_session_bytes(data, "/s.jsonl")), keep)
        if not plan.can_compact:
            return None
        return build_verbatim_checkpoint(plan, VerbatimOptions("/s.jsonl", cap)), plan

    first = run()
    if first is None:
        return
    cp, plan = first
    again, _ = run()
    assert (again.summary, again.reminder, orjson.dumps(again.details)) == (
        cp.summary,
        cp.reminder,
        orjson.dumps(cp.details),
    )
    assert orjson.loads(orjson.dumps(cp.details)) == cp.details
    free = build_verbatim_checkpoint(plan, VerbatimOptions("/s.jsonl", None))
    assert free.details == cp.details  # the cap never touches what is saved
    if cap is None:
        return
    if free.tokens <= cap:
        assert cp.summary == free.summary and not cp.trimmed
        return
    assert cp.tokens <= cap or cp.warnings
    spans = span_texts(free.summary)
    # The fixed parts of the capped checkpoint: its standing block holds what the cap no longer shows whole.
    overhead = js_len(cp.summary) - js_len("\n\n".join(span_texts(cp.summary)))
    if len(spans) == 1 and overhead + MIN_CONVERSATION_CHARS <= cap * 4:
        assert cp.tokens <= cap and not cp.warnings
