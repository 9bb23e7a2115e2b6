"""The shortcuts ``plan_prune`` takes never change its plan.

Building a stub means reading the facts of its output, for every old tool result of the context; where not even the
shortest stub each output can have would bring Pi's estimate below what it counts now, the plan knows nothing will
be pruned without building them. These tests compare that plan with the one built from every stub, across
recorded usages on both sides of the point where pruning starts to gain, and the shortest stub with real stubs.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_compact.checkpoint.prune_stub import stub_floor, stub_text
from pi_compact.js import js_len
from pi_compact.ops import prune
from pi_compact.ops.check import CheckOptions, check_session
from pi_compact.ops.prune import PruneOptions, context_estimate, plan_prune
from pi_compact.pi.tokens import estimate_tokens, estimate_with_text
from tests.helpers.sessions import SessionBuilder

BIG = 4000


def _session(path: Path, usage: int) -> Path:
    """Old reads, searches and a failed test run, then recent turns; every reply records ``usage`` tokens."""
    sb = SessionBuilder()
    sb.add({"type": "model_change", "provider": "anthropic", "modelId": "claude-sonnet-4-5"})
    sb.user("Find why the totals are off " + "please " * 100)
    for i in range(6):
        call = sb.call("bash", {"command": f"grep -rn total src/ # {i}"})
        sb.assistant(call, usage=usage)
        sb.result(call, f"src/mod{i}.py:3: total(1)\n" + "z" * (BIG + 700 * i))
    test = sb.call("bash", {"command": "python -m pytest -q"})
    sb.assistant(test, usage=usage)
    sb.result(test, "FAILED tests/test_a.py::test_b - AssertionError\n==== 1 failed in 0.2s ====\n" + "x" * BIG, True)
    read = sb.call("read", {"path": "/repo/src/mod1.py"})
    sb.assistant(read, usage=usage)
    sb.result(read, "def total(x):\n    return x\n" + "r" * 600)  # near the least a stub frees
    for i in range(3):
        sb.user(f"And round {i}?")
        sb.assistant(f"Round {i} done. " + "ok " * 300, usage=usage)
    return sb.write(path)


def _plans(path: Path) -> tuple[Any, Any, int]:
    check = check_session(path, CheckOptions(keep_recent_tokens=1500), cache=False)
    return check, plan_prune(check, PruneOptions(min_tokens=100), summary_only=True), check.plan.context.tokens


def _same_plan(path: Path, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Whether the plan equals the one built from every stub (asserted), and whether it prunes anything."""
    check, plan, _ = _plans(path)
    with monkeypatch.context() as patched:
        patched.setattr(prune, "most_freed", lambda candidates: math.inf)  # every stub built
        built = plan_prune(check, PruneOptions(min_tokens=100), summary_only=True)
    assert plan.summary_json() == built.summary_json(), path.name
    assert plan.protected == built.protected, path.name
    assert [(p.entry_id, p.stub, p.stub_tokens) for p in plan.pruned] == [
        (p.entry_id, p.stub, p.stub_tokens) for p in built.pruned
    ]
    return bool(plan.pruned)


def test_skipping_the_stubs_never_changes_the_plan(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    check, _, _ = _plans(_session(tmp_path / "probe.jsonl", 10))
    estimate = context_estimate(check.plan.projection)
    coarse = {u: _same_plan(_session(tmp_path / f"s{u}.jsonl", u), monkeypatch) for u in range(10, estimate, 97)}
    assert set(coarse.values()) == {True, False}  # low usages: no gain; high ones: pruned
    flip = min(u for u, pruned in coarse.items() if pruned)
    fine = {u: _same_plan(_session(tmp_path / f"f{u}.jsonl", u), monkeypatch) for u in range(flip - 97, flip + 1)}
    assert set(fine.values()) == {True, False}  # and the tokens either side of where it starts to gain


_ID = st.text(alphabet="0123456789abcdef", min_size=1, max_size=12)
_TEXT = st.text(alphabet=st.characters(codec="utf-8"), max_size=300)
_OUTPUT_LINES = st.lists(
    st.sampled_from(
        [
            "FAILED tests/t.py::test_x - AssertionError",
            "==== 2 failed, 3 passed in 1.0s ====",
            "src/a/b.py:3: total(1)",
            "Traceback (most recent call last):",
            "KeyError: 'x'",
            "Name: pyproj",
            "Version: 3.6.1",
            "",
        ]
    )
    | _TEXT,
    max_size=12,
)


@settings(max_examples=300, deadline=None)
@given(
    entry_id=_ID,
    tokens=st.integers(0, 10**9),
    tool=st.sampled_from(["bash", "read", "grep", "version", "", "ls"]) | st.none() | _TEXT,
    arguments=st.none() | st.fixed_dictionaries({"command": _TEXT}) | st.fixed_dictionaries({"path": _TEXT}),
    lines=_OUTPUT_LINES,
    outcome=st.sampled_from(["ok", "error", "unknown"]),
)
def test_the_shortest_stub_is_never_longer_than_a_stub(
    entry_id: str, tokens: int, tool: Any, arguments: Any, lines: list[str], outcome: str
) -> None:
    result = {"role": "toolResult", "content": [{"type": "text", "text": "\n".join(lines)}]}
    stub = stub_text(entry_id, tool, arguments, result, outcome, tokens, "/repo")
    assert stub_floor(entry_id, tokens) <= js_len(stub)


_MESSAGE = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["toolResult", "user", "custom", "assistant", "system", "bashExecution", "other"]),
        "content": st.just([{"type": "text", "text": "old"}]),
    },
    optional={
        "sections": st.dictionaries(st.sampled_from(["a", "b"]), _TEXT),
        "toolsAdded": st.lists(st.fixed_dictionaries({"name": _TEXT})),
        "command": _TEXT,
        "output": _TEXT,
    },
)


@settings(max_examples=300, deadline=None)
@given(message=_MESSAGE, text=_TEXT)
def test_a_replaced_messages_estimate_is_that_of_the_message_built(message: dict[str, Any], text: str) -> None:
    built = orjson.loads(orjson.dumps({**message, "content": [{"type": "text", "text": text}]}))
    assert estimate_with_text(message, text) == estimate_tokens(built)
