"""The benchmark session generator writes valid, reproducible Pi v3 sessions with findable rare literals."""

from __future__ import annotations

import base64
import importlib
import re
import sys
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from types import ModuleType
from typing import Any

import orjson
import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
SIZE = "200KB"


@pytest.fixture(scope="module")
def gen() -> Iterator[ModuleType]:
    sys.path.insert(0, str(BENCH))
    try:
        yield importlib.import_module("gen_session")
    finally:
        sys.path.remove(str(BENCH))


@pytest.fixture(scope="module")
def session(gen: ModuleType, tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, list[dict[str, Any]]]:
    path = tmp_path_factory.mktemp("bench") / "s.jsonl"
    gen.generate_file(path, gen.parse_size(SIZE), seed=7)
    data = path.read_bytes()
    lines = data.split(b"\n")
    assert lines[-1] == b"", "file must end with a newline"
    return data, [orjson.loads(line) for line in lines[:-1]]


def test_parse_size_units(gen: ModuleType) -> None:
    assert gen.parse_size("200KB") == 200 * 1024
    assert gen.parse_size("10MB") == 10 * 1024**2
    assert gen.parse_size("1.5g") == int(1.5 * 1024**3)
    assert gen.parse_size("4096") == 4096
    with pytest.raises(ValueError):
        gen.parse_size("ten megs")


def test_every_line_is_a_json_object_and_the_header_is_v3(gen: ModuleType, session: Any) -> None:
    data, entries = session
    assert len(data) >= gen.parse_size(SIZE)
    assert all(isinstance(e, dict) and isinstance(e.get("type"), str) for e in entries)
    header = entries[0]
    assert header["type"] == "session"
    assert header["version"] == 3
    assert isinstance(header["id"], str) and header["id"]
    assert header["cwd"].startswith("/")
    datetime.fromisoformat(header["timestamp"])
    assert not any(e["type"] == "session" for e in entries[1:])


def test_ids_are_unique_8_hex_and_parents_come_first(session: Any) -> None:
    _, entries = session
    seen: set[str] = set()
    roots = 0
    for e in entries[1:]:
        assert re.fullmatch(r"[0-9a-f]{8}", e["id"]), e["id"]
        assert e["id"] not in seen
        if e["parentId"] is None:
            roots += 1
        else:
            assert e["parentId"] in seen, f"{e['id']} points to a later or missing parent"
        datetime.fromisoformat(e["timestamp"])
        seen.add(e["id"])
    assert roots == 1


def test_references_point_to_existing_entries(session: Any) -> None:
    _, entries = session
    ids = {e["id"] for e in entries[1:]}
    call_ids: set[str] = set()
    compactions = 0
    for e in entries[1:]:
        if e["type"] == "compaction":
            compactions += 1
            assert e["firstKeptEntryId"] in ids
            assert e["tokensBefore"] > 0
        elif e["type"] in ("context_edit", "label"):
            assert e["targetId"] in ids
        elif e["type"] == "branch_summary":
            assert e["fromId"] in ids
        elif e["type"] == "message" and e["message"]["role"] == "assistant":
            call_ids |= {b["id"] for b in e["message"]["content"] if b["type"] == "toolCall"}
        elif e["type"] == "message" and e["message"]["role"] == "toolResult":
            assert e["message"]["toolCallId"] in call_ids
    assert compactions >= 1


def test_assistant_usage_is_consistent(session: Any) -> None:
    _, entries = session
    usages = [
        e["message"]["usage"] for e in entries[1:] if e["type"] == "message" and e["message"]["role"] == "assistant"
    ]
    assert usages
    for u in usages:
        assert u["totalTokens"] == u["input"] + u["output"] + u["cacheRead"] + u["cacheWrite"]
    assert max(u["totalTokens"] for u in usages) > 100_000


def test_images_are_base64_png(session: Any) -> None:
    _, entries = session
    images = [
        b
        for e in entries[1:]
        if e["type"] == "message" and isinstance(e["message"].get("content"), list)
        for b in e["message"]["content"]
        if b.get("type") == "image"
    ]
    assert images
    for block in images:
        assert block["mimeType"] == "image/png"
        assert base64.b64decode(block["data"], validate=True).startswith(b"\x89PNG\r\n\x1a\n")


def test_each_rare_literal_occurs_exactly_once(gen: ModuleType, session: Any) -> None:
    data, entries = session
    for literal in gen.RARE_LITERALS.values():
        assert data.count(literal.encode()) == 1, literal
    needle = gen.RARE_LITERALS["tool_output"]
    holders = [e for e in entries[1:] if needle in orjson.dumps(e).decode()]
    assert len(holders) == 1
    assert holders[0]["message"]["role"] == "toolResult"
    assert re.search(gen.COMMON_REGEX.encode(), data)


def test_same_seed_same_bytes_other_seed_other_bytes(gen: ModuleType, session: Any, tmp_path: Path) -> None:
    data, _ = session
    again = tmp_path / "again.jsonl"
    assert gen.main(["--size", SIZE, "--out", str(again), "--seed", "7", "--quiet"]) == 0
    assert again.read_bytes() == data
    other = tmp_path / "other.jsonl"
    gen.generate_file(other, gen.parse_size(SIZE), seed=8)
    assert other.read_bytes() != data
    assert not list(tmp_path.glob("*.part"))
