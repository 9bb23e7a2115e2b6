"""The tracked modifications the loader takes from a body before dropping it (``session.mutations``) are those the
evidence walk would read from the body itself, and the file evidence built from them (and from an index that keeps
them) is the one a full parse gives, without reading those bodies back."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_compact.checkpoint import evidence as evidence_module
from pi_compact.checkpoint.readtool import mutation_path, nested_calls, tool_call_blocks
from pi_compact.ops.check import CheckOptions, check_session
from pi_compact.session import index
from pi_compact.session.load import load_session, load_session_bytes
from pi_compact.session.mutations import mutation_facts
from pi_compact.session.source import FileSource
from tests.session.test_released_entries import compacted_session

OPTIONS = CheckOptions(context_window=20000, keep_recent_tokens=50)


def reference(message: dict[str, Any]) -> list[tuple[str, int, str]]:
    """What the evidence walk read from a body before the loader kept facts: readtool's own helpers."""
    out = []
    for index_, block in tool_call_blocks(message):
        path = mutation_path(block.get("name"), block.get("arguments"))
        if path is not None:
            out.append(("call", index_, path))
    for index_, call in enumerate(nested_calls(message)):
        path = mutation_path(call.get("name"), call.get("arguments"))
        if path is not None:
            out.append(("nested", index_, path))
    return out


def flatten(message: dict[str, Any]) -> list[tuple[str, int, str]]:
    facts = mutation_facts(message)
    if facts is None:
        return []
    kind = "call" if message.get("role") == "assistant" else "nested"
    assert facts[1], "facts are None rather than empty"
    return [(kind, i, path) for i, path in facts[1]]


json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["", "a.py", "/r/b.ts", "edit"]))
json_any = st.recursive(
    json_leaf, lambda c: st.lists(c, max_size=3) | st.dictionaries(st.text(max_size=3), c), max_leaves=8
)
names = st.one_of(st.sampled_from(["write", "edit", "read", "bash", "Edit", ""]), json_any)
arguments = st.one_of(
    st.fixed_dictionaries({}, optional={"path": st.one_of(st.sampled_from(["", "a.py", "/r/b.ts"]), json_any)}),
    json_any,
)
block = st.one_of(
    st.fixed_dictionaries(
        {}, optional={"type": st.sampled_from(["toolCall", "text", "thinking"]), "name": names, "arguments": arguments}
    ),
    json_any,
)
message = st.fixed_dictionaries(
    {"role": st.sampled_from(["assistant", "toolResult", "user", "custom"])},
    optional={
        "content": st.one_of(st.lists(block, max_size=5), json_any),
        "toolCallId": st.one_of(st.sampled_from(["c1", "c2"]), json_any),
        "nestedCalls": st.one_of(
            st.fixed_dictionaries({}, optional={"calls": st.one_of(st.lists(block, max_size=5), json_any)}), json_any
        ),
    },
)


@settings(max_examples=400, deadline=None)
@given(message)
def test_facts_are_what_the_readtool_walk_reads(msg: dict[str, Any]) -> None:
    assert flatten(msg) == reference(msg)
    facts = mutation_facts(msg)
    if facts is not None and msg["role"] == "toolResult":
        call_id = msg.get("toolCallId")
        assert facts[0] == (call_id if isinstance(call_id, str) else None)


def test_an_unhashable_tool_name_is_no_modification() -> None:
    msg = {"role": "assistant", "content": [{"type": "toolCall", "name": ["edit"], "arguments": {"path": "a"}}]}
    assert mutation_facts(msg) is None and reference(msg) == []


def _reads(monkeypatch: Any) -> list[int]:
    """The entry indexes whose bodies are read back from the file from now on."""
    seen: list[int] = []
    real = FileSource.reload

    def counting(self: FileSource, entry: Any) -> Any:
        seen.append(entry.index)
        return real(self, entry)

    monkeypatch.setattr(FileSource, "reload", counting)
    return seen


def test_evidence_from_kept_facts_is_a_full_parse_s_and_reads_no_released_modification(
    tmp_path: Path, monkeypatch: Any
) -> None:
    path = compacted_session().write(tmp_path / "s.jsonl")
    full = check_session(load_session_bytes(path.read_bytes(), str(path)), OPTIONS).to_json()
    lazy_session = load_session(path)
    assert lazy_session.mutations and lazy_session.mutations_known > 0
    released = {e.index for e in lazy_session.entries if not e.loaded}
    assert set(lazy_session.mutations) <= released  # taken from the bodies dropped
    result = check_session(lazy_session, OPTIONS)
    seen = _reads(monkeypatch)
    during: list[int] = []
    walk = evidence_module._collect_mutations

    def counted(*args: Any) -> None:
        before = len(seen)
        walk(*args)
        during.extend(seen[before:])

    monkeypatch.setattr(evidence_module, "_collect_mutations", counted)
    evidence = result.file_evidence()
    # The nested call's result asks which assistant message issued it: that body at most is read back.
    assert len(during) <= 1 and all(lazy_session.entries[i].role == "assistant" for i in during)
    assert evidence == full["file_evidence"] and evidence is not None
    assert any(item["label"] for item in evidence["modifiedFiles"])


def test_the_index_keeps_the_facts(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(index.NO_CACHE_ENV, raising=False)
    sb = compacted_session()
    path = sb.write(tmp_path / "s.jsonl")
    cold = load_session(path)
    load_session(path, cache=True)  # writes the index
    warm = load_session(path, cache=True)
    assert warm.mutations_known == len(warm.entries)  # every entry was indexed
    assert {i: f for i, f in warm.mutations.items()} == {
        e.index: f
        for e in cold.entries
        if e.role in ("assistant", "toolResult") and (f := mutation_facts(e.raw["message"])) is not None
    }
    expected = check_session(load_session_bytes(path.read_bytes(), str(path)), OPTIONS).to_json()["file_evidence"]
    assert check_session(warm, OPTIONS).file_evidence() == expected
    # Appended lines (an edit after the tail's read) are read from their bodies; the prefix from the index
    sb.assistant("again", tool_calls=[("late_9", "edit", {"path": "/repo/late0.py"})])
    sb.tool_result("late_9", "edit", "ok")
    sb.write(path)
    resumed = load_session(path, cache=True)
    assert 0 < resumed.mutations_known < len(resumed.entries)
    expected = check_session(load_session_bytes(path.read_bytes(), str(path)), OPTIONS).to_json()["file_evidence"]
    assert check_session(resumed, OPTIONS).file_evidence() == expected


def test_an_index_with_bad_facts_is_ignored(tmp_path: Path, monkeypatch: Any) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(index.NO_CACHE_ENV, raising=False)
    path = compacted_session().write(tmp_path / "s.jsonl")
    load_session(path, cache=True)
    fd = os.open(path, os.O_RDONLY)
    try:
        state = index.read(path, fd, os.fstat(fd))
        assert state is not None and state.mutations
        n = len(state.ids)
        for rows in (
            [[n, [None, [[0, "a"]]]]],  # past the prefix
            [[0, [None, []]]],  # no modification
            [[0, [5, [[0, "a"]]]]],  # a call id that is not a string
            [[0, [None, [[0, ""]]]]],  # an empty path
            [[1, [None, [[0, "a"]]]], [0, [None, [[0, "a"]]]]],  # out of order
        ):
            state.mutations = rows  # type: ignore[assignment]
            index.write(path, os.fstat(fd), state)
            assert index.read(path, fd, os.fstat(fd)) is None, rows
    finally:
        os.close(fd)


def test_message_entries_without_a_message_object_are_dropped_alike(tmp_path: Path) -> None:
    rows: list[dict[str, Any]] = [
        {"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/r"},
        {"type": "message", "id": "a", "parentId": None},
        {"type": "message", "id": "b", "parentId": "a", "message": "text"},
        {"type": "message", "id": "c", "parentId": "b", "message": {"role": "toolResult", "content": None}},
        {
            "type": "message",
            "id": "d",
            "parentId": "c",
            "message": {
                "role": "assistant",
                "content": [{"type": "toolCall", "name": "edit", "arguments": {"path": "x"}}],
            },
        },
        {"type": "message", "id": "e", "parentId": "d", "message": {"role": "user", "content": "hi"}},
        {"type": "compaction", "id": "f", "parentId": "e", "summary": "s", "firstKeptEntryId": "e", "tokensBefore": 1},
    ]
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    session = load_session(path)
    assert session.mutations == {3: (None, ((0, "x"),))} and session.mutations_known == 4
    full = load_session_bytes(path.read_bytes(), str(path))
    assert check_session(session, OPTIONS).to_json() == check_session(full, OPTIONS).to_json()
