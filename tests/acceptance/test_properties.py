"""Property tests over generated sessions: the invariants Pi's cut rules promise, and a loader that never crashes."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pi_compact.errors import PiCompactError
from pi_compact.pi.plan import plan_compaction
from pi_compact.session import get_branch, load_session_bytes
from tests.helpers.sessions import SessionBuilder

text = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=300)

step = st.one_of(
    st.tuples(st.just("user"), text),
    st.tuples(st.just("assistant"), text),
    st.tuples(st.just("tools"), st.integers(min_value=1, max_value=3), text),
    st.tuples(st.just("bash"), text),
    st.tuples(st.just("custom"), text),
    st.tuples(st.just("meta"), st.sampled_from(["label", "model_change", "thinking_level_change", "custom", "usage"])),
    st.tuples(st.just("omit"), st.integers(min_value=0, max_value=50)),
    st.tuples(st.just("compact"), st.integers(min_value=0, max_value=50)),
)


def build(steps: list[tuple[Any, ...]]) -> SessionBuilder:
    sb = SessionBuilder()
    calls = 0
    for item in steps:
        kind = item[0]
        if kind == "user":
            sb.user(item[1] or "u")
        elif kind == "assistant":
            sb.assistant(item[1] or "a", usage=len(item[1]) * 3 + 1)
        elif kind == "tools":
            ids = []
            for _ in range(item[1]):
                calls += 1
                ids.append(f"c{calls}")
            sb.assistant("", tool_calls=[(i, "read", {"path": f"/repo/{i}.txt"}) for i in ids])
            for i in ids:
                sb.tool_result(i, "read", item[2] * 3)
        elif kind == "bash":
            sb.message({"role": "bashExecution", "command": "ls", "output": item[1], "exitCode": 0, "timestamp": 1})
        elif kind == "custom":
            sb.add({"type": "custom_message", "customType": "ext", "content": item[1], "display": True})
        elif kind == "meta":
            sb.add({"type": item[1], "targetId": sb.leaf, "label": "x", "provider": "a", "modelId": "b"})
        elif kind == "omit" and sb.entries:
            target = sb.entries[item[1] % len(sb.entries)]
            sb.add({"type": "context_edit", "targetId": target["id"], "replacement": None})
        elif kind == "compact" and sb.entries:
            target = sb.entries[item[1] % len(sb.entries)]
            sb.add(
                {"type": "compaction", "summary": "earlier work", "firstKeptEntryId": target["id"], "tokensBefore": 9}
            )
    return sb


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(steps=st.lists(step, min_size=1, max_size=40), keep=st.integers(min_value=0, max_value=400))
def test_cut_never_lands_on_a_tool_result_and_ranges_partition(steps: list[tuple[Any, ...]], keep: int) -> None:
    sb = build(steps)
    session = load_session_bytes(sb.to_bytes())
    plan = plan_compaction(get_branch(session), keep)
    entries = plan.entries
    start, cut = plan.boundary_start, plan.cut.first_kept_index
    assert start <= cut <= len(entries)
    if plan.can_compact and cut < len(entries):
        # never cut at a tool result: a tool result must follow its call into the kept tail
        roles = {m.get("role") for m in entries[cut].messages}
        assert "toolResult" not in roles or roles - {"toolResult"}
    summarized = plan.summarized_entries()
    prefix = plan.prefix_entries()
    kept = plan.kept_entries()
    # kept ∪ summarised ∪ prefix = the compactable range, in order, without overlap
    assert [*summarized, *prefix, *kept] == entries[start:]
    if plan.cut.is_split_turn:
        assert prefix and any(
            m.get("role") == "user" or m.get("role") == "bashExecution" or m.get("role") == "custom"
            for m in prefix[0].messages
        )


@settings(max_examples=300, deadline=None)
@given(
    data=st.lists(
        st.one_of(
            st.binary(max_size=80),
            st.sampled_from(
                [
                    b'{"type":"session","version":3,"id":"s","cwd":"/"}',
                    b"null",
                    b"{}",
                    b"[]",
                    b"5",
                    b'"x"',
                    b'{"type":"message","id":"a","parentId":null,"message":{"role":"user","content":"hi"}}',
                    b'{"type":"message","id":"b","parentId":"a","message":{"role":"assistant","content":null}}',
                    b'{"type":"compaction","id":"c","parentId":"b","summary":"s","firstKeptEntryId":"zz"}',
                    b'{"type":"context_edit","id":"d","parentId":"c","targetId":"a","replacement":{"content":"x"}}',
                    b'\xef\xbb\xbf{"type":"session","id":"s"}',
                    b'{"type":"message","id":"a","parentId":"a"}',
                ]
            ),
        ),
        max_size=12,
    )
)
def test_parsing_never_raises_anything_but_picompact_errors(data: list[bytes]) -> None:
    blob = b"\n".join(data)
    try:
        session = load_session_bytes(blob)
        branch = get_branch(session)
        plan_compaction(branch, 10)
    except PiCompactError:
        pass


def test_property_builder_produces_valid_json() -> None:
    sb = build([("user", "x"), ("tools", 2, "y"), ("compact", 1)])
    for line in sb.lines():
        orjson.loads(line)


def test_public_api_names_all_resolve() -> None:
    import pi_compact

    for name in pi_compact.__all__:
        assert getattr(pi_compact, name) is not None, name
