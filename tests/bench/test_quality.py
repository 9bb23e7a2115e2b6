"""The checkpoint-quality harness (bench/quality.py): its generator plants what it says where it says, and its
scorer finds a needle exactly when the model's text holds it."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture(scope="module")
def bench() -> Iterator[tuple[ModuleType, ModuleType]]:
    sys.path.insert(0, str(BENCH))
    try:
        yield importlib.import_module("quality_sessions"), importlib.import_module("quality")
    finally:
        sys.path.remove(str(BENCH))


@pytest.fixture(scope="module")
def generated(
    bench: tuple[ModuleType, ModuleType], tmp_path_factory: pytest.TempPathFactory
) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    qs, _ = bench
    path = tmp_path_factory.mktemp("quality") / "task.jsonl"
    qs.write(path, 40_000, seed=3)
    lines = [orjson.loads(line) for line in path.read_bytes().split(b"\n") if line]
    assert lines[0]["type"] == "session"
    entries = {e["id"]: e for e in lines[1:]}
    sidecar = orjson.loads(qs.sidecar_path(path).read_bytes())
    return entries, sidecar


def _text(qs: ModuleType, entry: dict[str, Any]) -> str:
    return qs.entry_text(entry)


def test_every_kind_is_planted_with_its_needle_in_the_entry_it_names(
    bench: tuple[ModuleType, ModuleType], generated: tuple[dict[str, dict[str, Any]], dict[str, Any]]
) -> None:
    qs, _ = bench
    entries, sidecar = generated
    facts = sidecar["facts"]
    assert {f["kind"] for f in facts} == set(qs.KINDS)
    for f in facts:
        for entry_id in f["entries"]:
            assert qs.normalize(f["needle"]).lower() in _text(qs, entries[entry_id]), (f["kind"], f["needle"])
        if f["kind"] != "user_message":  # a needle occurs nowhere but in the entries its fact names
            where = {i for i, e in entries.items() if qs.normalize(f["needle"]).lower() in _text(qs, e)}
            assert where == set(f["entries"]), (f["kind"], f["needle"])
        assert sidecar["turn_starts"][f["turn"]] in entries


def test_planted_entries_have_the_role_their_kind_says(
    bench: tuple[ModuleType, ModuleType], generated: tuple[dict[str, dict[str, Any]], dict[str, Any]]
) -> None:
    qs, _ = bench
    entries, sidecar = generated
    role = {i: e["message"]["role"] for i, e in entries.items()}
    for f in sidecar["facts"]:
        first = role[f["entry_id"]]
        if f["kind"] in ("rule", "constraint", "preference", "value", "goal", "path_in_long_message", "user_message"):
            assert first == "user", f
        elif f["kind"] == "decision":
            assert first == "assistant", f
        elif f["kind"] in ("error", "tool_fact"):
            assert [role[i] for i in f["entries"]] == ["toolResult"], f
        if f["kind"] == "error":
            assert entries[f["entry_id"]]["message"]["isError"] is True
        if f["kind"] == "path_in_long_message":
            content = entries[f["entry_id"]]["message"]["content"]
            assert content.lower().find(f["needle"].lower()) > qs.LONG_MESSAGE_OFFSET
        if f["kind"] == "user_message":
            assert f["needle"] == qs.normalize(entries[f["entry_id"]]["message"]["content"])[: qs.USER_TRACE_CHARS]


def test_values_are_changed_later_and_some_errors_are_fixed_by_the_same_command(
    bench: tuple[ModuleType, ModuleType], generated: tuple[dict[str, dict[str, Any]], dict[str, Any]]
) -> None:
    qs, _ = bench
    entries, sidecar = generated
    order = list(entries)
    values = [f for f in sidecar["facts"] if f["kind"] == "value"]
    assert values
    for f in values:
        assert qs.normalize(f["old_needle"]).lower() in _text(qs, entries[f["old_entry_id"]])
        assert f["old_needle"].lower() not in _text(qs, entries[f["entry_id"]])
        assert order.index(f["old_entry_id"]) < order.index(f["entry_id"])

    def command_of(result_id: str) -> str:
        call_id = entries[result_id]["message"]["toolCallId"]
        for e in entries.values():
            for block in e["message"].get("content") or []:
                if isinstance(block, dict) and block.get("id") == call_id:
                    return block["arguments"]["command"]
        raise AssertionError(result_id)

    errors = [f for f in sidecar["facts"] if f["kind"] == "error"]
    fixed = [f for f in errors if f["resolved_entry_id"]]
    assert fixed and len(fixed) < len(errors)
    for f in fixed:
        assert entries[f["resolved_entry_id"]]["message"]["isError"] is False
        assert command_of(f["resolved_entry_id"]) == command_of(f["entry_id"])
        assert order.index(f["entry_id"]) < order.index(f["resolved_entry_id"])


def test_the_same_seed_gives_the_same_session(bench: tuple[ModuleType, ModuleType]) -> None:
    qs, _ = bench
    a, b = qs.generate(20_000, seed=5), qs.generate(20_000, seed=5)
    assert a == b
    assert qs.generate(20_000, seed=6)[1] != a[1]


def _reading(q: ModuleType, text: str, before: set[str], kept: set[str] = frozenset()) -> Any:  # type: ignore[assignment]
    return q.Reading(1, "c0000001", text, q.norm(text), set(before), set(kept), 0, 0)


def _fact(kind: str, needle: str, entry_id: str = "e1", **extra: Any) -> dict[str, Any]:
    return {"kind": kind, "sub": kind, "needle": needle, "entry_id": entry_id, "turn": 0, "entries": [entry_id]} | extra


def test_a_fact_is_found_when_its_needle_is_in_the_model_text_and_missing_when_not(
    bench: tuple[ModuleType, ModuleType],
) -> None:
    _, q = bench
    fact = _fact("rule", "deploy/Kavelo3.env")
    found = q.score_facts([fact], _reading(q, "Rules:\n- don't touch   DEPLOY/kavelo3.env  please", {"e1"}))
    assert (found["rule"].found, found["rule"].total) == (1, 1)
    missing = q.score_facts([fact], _reading(q, "Rules:\n- don't touch deploy/kavelo4.env", {"e1"}))
    assert (missing["rule"].found, missing["rule"].total) == (0, 1)
    kept = q.score_facts([fact], _reading(q, "anything", {"e1"}, kept={"e1"}))  # still in the tail: not scored
    assert kept["rule"].total == 0
    later = q.score_facts([fact], _reading(q, "anything", set()))  # not yet written at that compaction
    assert later["rule"].total == 0


def test_a_user_message_leaves_a_trace_by_its_opening_or_by_its_entry_id(
    bench: tuple[ModuleType, ModuleType],
) -> None:
    _, q = bench
    fact = _fact("user_message", "please look at src/weatherly/cache.py an", "ab12cd34")
    for text, ok in (
        ("[ab12cd34] user: Please look at src/weatherly/cache.py and fix it", True),
        ("(user message ab12cd34 removed)", True),
        ("user: Please look at src/weatherly/cache.py", False),
    ):
        assert q.score_facts([fact], _reading(q, text, {"ab12cd34"}))["user_message"].found == ok, text


def test_a_superseded_value_is_scored_by_its_latest_value(bench: tuple[ModuleType, ModuleType]) -> None:
    _, q = bench
    fact = _fact("value", "43179", "e9", old_needle="41873", old_entry_id="e1")
    old_only = q.score_facts([fact], _reading(q, "the dev server listens on port 41873", {"e1", "e9"}))
    assert (old_only["value"].found, old_only["value"].total) == (0, 1)
    assert (old_only["value_stale"].found, old_only["value_stale"].total) == (1, 1)
    both = q.score_facts([fact], _reading(q, "port 41873\nmake the port 43179", {"e1", "e9"}))
    assert both["value"].found == 1 and both["value_stale"].found == 1
    marked = q.score_facts([fact], _reading(q, "port: 43179 (was 41873)", {"e1", "e9"}))
    assert marked["value"].found == 1 and marked["value_stale"].found == 0
    before_change = q.score_facts([fact], _reading(q, "port 41873", {"e1"}))  # the change not written yet
    assert (before_change["value"].found, before_change["value"].total) == (1, 1)
    assert before_change["value_stale"].total == 0


def test_open_and_fixed_errors_are_counted_apart(bench: tuple[ModuleType, ModuleType]) -> None:
    _, q = bench
    fact = _fact("error", "no such table: rutyqui2_readings", "e2", resolved_entry_id="e5")
    text = "sqlite3.OperationalError: no such table: rutyqui2_readings"
    open_ = q.score_facts([fact], _reading(q, text, {"e2"}))
    assert (open_["error"].found, open_["error"].total, open_["error_resolved"].total) == (1, 1, 0)
    fixed = q.score_facts([fact], _reading(q, "nothing", {"e2", "e5"}))
    assert (fixed["error"].total, fixed["error_resolved"].found, fixed["error_resolved"].total) == (0, 0, 1)


@pytest.mark.parametrize("shape", ["rulings", "pasted"])
def test_every_shape_plants_its_kinds_with_needles_in_the_entries_it_names(
    bench: tuple[ModuleType, ModuleType], tmp_path: Path, shape: str
) -> None:
    qs, _ = bench
    path = tmp_path / f"{shape}.jsonl"
    sidecar = qs.write(path, 20_000, seed=5, shape=shape)
    entries = {e["id"]: e for e in (orjson.loads(x) for x in path.read_bytes().split(b"\n")[1:] if x)}
    kinds = {f["kind"] for f in sidecar["facts"]}
    assert {"ruling_denied", "task_fact", "user_message", "goal"} <= kinds
    for f in sidecar["facts"]:
        text = _text(qs, entries[f["entry_id"]])
        assert qs.normalize(f["needle"]).lower() in text
        for part in f["parts"] or ():
            assert qs.normalize(part).lower() in text, (f["kind"], part)


def _one_line(q: ModuleType, text: str) -> Any:
    return q.Reading(1, "c", text, q.norm(text), {"u1"}, set(), 0, 0)


def test_a_ruling_is_kept_only_with_its_parts_and_its_polarity_on_one_line(
    bench: tuple[ModuleType, ModuleType],
) -> None:
    _, q = bench
    denied = {"kind": "ruling_denied", "parts": ["chartkit", "017"], "needle": "component-017"}
    allowed = {"kind": "ruling_allowed", "parts": ["chartkit", "021"], "needle": "component-021"}
    assert q.parts_on_a_line(denied, _one_line(q, "- Do not adopt chartkit for component-003 … -017 (2 messages)"))
    assert not q.parts_on_a_line(denied, _one_line(q, "- You may use chartkit for component-017"))
    assert not q.parts_on_a_line(denied, _one_line(q, "Do not adopt chartkit\nfor component-017"))
    assert not q.parts_on_a_line(denied, _one_line(q, "Do not adopt chartkit for component-1017"))
    assert q.parts_on_a_line(allowed, _one_line(q, "You may use chartkit for component-021, it passed."))
    assert not q.parts_on_a_line(allowed, _one_line(q, "Do not adopt chartkit for component-021; you may not."))


def test_files_and_sentences_are_scored_from_the_compacted_entries(
    bench: tuple[ModuleType, ModuleType], tmp_path: Path
) -> None:
    qs, q = bench
    path = tmp_path / "rulings.jsonl"
    sidecar = qs.write(path, 8_000, seed=2, shape="rulings")
    content = q.SpanContent.of(path, sidecar["cwd"])
    ids = [e for e in content.sentences if content.sentences[e]]
    sentence = content.sentences[ids[0]][0]
    file_entry = next(iter(content.files))
    path_named = content.files[file_entry][0]
    assert not path_named.startswith("/"), path_named  # relative to the session's cwd
    reading = q.Reading(
        1, "c", f"{sentence}\n{path_named}", q.norm(f"{sentence}\n{path_named}"), {ids[0], file_entry}, set(), 0, 0
    )
    scores = {k: q.KindScore() for k in q.REPORTED}
    content.score(reading, scores)
    assert scores["file"].found == 1 and scores["file"].total == len(set(content.files[file_entry]))
    assert scores["sentence"].found == 1 and scores["sentence"].total == len(content.sentences[ids[0]])


def test_peer_sizes_given_run_picompact_at_those_sizes_compaction_by_compaction(
    bench: tuple[ModuleType, ModuleType],
) -> None:
    _, q = bench
    args = q.argparse.Namespace(
        peer_sizes="task-100k=2707,pasted-30k=1900/2427",
        shapes="task,pasted,rulings",
        sizes="30k:2,100k:3",
        windows="32000:8000",
    )
    runs = {(s.shape, s.size): s for s in q.given_sizes(args)}
    assert set(runs) == {("task", 100_000), ("pasted", 30_000)}  # only the shapes and sizes given
    assert runs[("task", 100_000)].peer_sizes == (2707, 2707, 2707)  # one number: every compaction of the chain
    assert runs[("pasted", 30_000)].peer_sizes == (1900, 2427)
    assert runs[("pasted", 30_000)].cap_label == "pi-vcc size (1900/2427 given)"
    assert runs[("task", 100_000)].compactions == 3 and runs[("task", 100_000)].window == 32000
