"""Pi itself reads what ``picompact compact`` wrote: its projection, its numbers, and the request it sends on resume.

Uses Pi 1.6's own code (the oracle, tools/pi/oracle.mjs) and its CLI (tools/pi/e2e/resume.py), installed by
``make pi``; every test here skips cleanly without them.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from pi_compact.js import js_stringify
from pi_compact.pi.messages import convert_to_llm
from pi_compact.pi.projection import build_projection
from pi_compact.session import get_branch, load_session
from tests.helpers.cli import run
from tests.helpers.fixtures import PI_FIXTURES
from tests.helpers.sessions import simple_session, written_long_ago
from tests.oracle import NOT_INSTALLED, RESUME, ask_oracle, oracle_installed, pi_installed

needs_oracle = pytest.mark.skipif(not oracle_installed(), reason=NOT_INSTALLED)
needs_resume = pytest.mark.skipif(not pi_installed(), reason=NOT_INSTALLED)

SEEDS = {"PICOMPACT_FIXED_TIME": "2026-05-06T07:08:09.010Z", "PICOMPACT_ID_SEED": "oracle"}
ROLE_ON_WIRE = {"toolResult": "tool"}

# (fixture, extra flags): sessions with system prompts, context edits, Pi's own and repeated compactions,
# split turns, branches, images, and the two old formats Pi migrates.
CASES = [
    ("gen-small-101.jsonl", ("--keep-recent-tokens", "3000")),
    ("gen-pi16-mixed-101.jsonl", ("--keep-recent-tokens", "5000")),
    ("gen-context-edits-101.jsonl", ("--keep-recent-tokens", "4000")),
    ("gen-multi-compaction-101.jsonl", ("--keep-recent-tokens", "4000")),
    ("gen-split-turn-101.jsonl", ("--keep-recent-tokens", "6000", "--context-window", "400000")),
    ("gen-branchy-101.jsonl", ("--keep-recent-tokens", "3000")),
    ("gen-images-101.jsonl", ("--keep-recent-tokens", "3000")),
    ("gen-v2-legacy-101.jsonl", ("--keep-recent-tokens", "2000")),
    ("pi-large-session.jsonl", ("--keep-recent-tokens", "2000")),
]


def oracle(*args: str | os.PathLike[str]) -> dict[str, Any]:
    proc = ask_oracle(*args)
    assert proc.returncode == 0, proc.stdout[-2000:]
    return orjson.loads(proc.stdout)


def _window(flags: tuple[str, ...]) -> tuple[str, ...]:
    """The --context-window flag and value among ``flags`` (the oracle takes the same spelling)."""
    if "--context-window" not in flags:
        return ()
    i = flags.index("--context-window")
    return flags[i : i + 2]


def _compacted(tmp_path: Path, fixture: str, flags: tuple[str, ...]) -> tuple[Path, dict[str, Any]]:
    path = tmp_path / fixture
    path.write_bytes((PI_FIXTURES / fixture).read_bytes())
    result = run("compact", path, *flags, "--json", env=SEEDS)
    assert result.code == 0, result.stderr
    return path, result.json


@needs_oracle
@pytest.mark.parametrize(("fixture", "flags"), CASES)
def test_pi_projects_summary_then_kept_tail_then_reorientation(tmp_path, fixture, flags):
    path, doc = _compacted(tmp_path, fixture, flags)
    compaction_id, reminder_id = doc["compaction_id"], doc["reminder_id"]
    pi = oracle("context", path, "--full")
    assert pi["load"]["headerValid"] is True
    assert pi["leaf"]["id"] == reminder_id
    assert pi["latestCompaction"]["entry"]["id"] == compaction_id
    assert pi["latestCompaction"]["firstKeptEntryId"] == doc["first_kept_entry_id"]
    roles = pi["roles"]
    first = 1 if roles[0] == "system" else 0
    assert roles[first] == "compactionSummary"
    assert roles[-1] == "custom"
    assert roles.count("system") == first  # older system messages folded into the checkpoint's snapshot
    # Our own projection agrees with Pi's, message by message.
    ours = build_projection(get_branch(load_session(path)))
    assert [m["role"] for m in ours.messages] == roles
    assert pi["messages"][-1]["customType"] == "picompact.reorientation"
    assert pi["messages"][first]["summary"] == doc["entries"][0]["summary"]
    # Pi's context estimate on the compacted file is what we reported and what check says.
    assert pi["estimateProjectedContextTokens"]["tokens"] == doc["stats"]["tokens_after"]
    check = run("check", path, *_window(flags), "--json")
    assert check.json["context_tokens"] == doc["stats"]["tokens_after"]


@needs_oracle
@pytest.mark.parametrize(("fixture", "flags"), CASES[:5])
def test_pis_analysis_of_the_compacted_file_matches_check(tmp_path, fixture, flags):
    path, doc = _compacted(tmp_path, fixture, flags)
    check = run("check", path, *_window(flags), "--json").json
    pi = oracle("analyze", path, "--brief", "--context-window", str(check["context_window"]))
    assert pi["contextEstimate"]["tokens"] == check["context_tokens"] == doc["stats"]["tokens_after"]
    assert pi["leaf"]["id"] == check["leaf_id"] == doc["reminder_id"]
    assert pi["shouldCompact"] == check["should_compact"]


@needs_oracle
@pytest.mark.parametrize("fixture", ["gen-pi16-mixed-101.jsonl", "gen-small-101.jsonl", "gen-context-edits-101.jsonl"])
def test_compaction_entry_has_the_shape_pis_append_compaction_writes(tmp_path, fixture):
    keep = "4000"
    path = tmp_path / fixture
    path.write_bytes((PI_FIXTURES / fixture).read_bytes())
    pi = oracle("append-compaction", path, "--keep", keep, "--no-usage")
    dry = run("compact", path, "--keep-recent-tokens", keep, "--dry-run", "--json", env=SEEDS)
    assert dry.code == 0, dry.stderr
    entry = dry.json["entries"][0]
    assert list(entry) == pi["appendedKeyOrder"]
    assert entry["parentId"] == pi["appendedEntry"]["parentId"]
    assert entry["firstKeptEntryId"] == pi["firstKeptEntryId"]
    assert entry["tokensBefore"] == pi["tokensBefore"]
    snapshot = pi["appendedSystemMessage"]
    if snapshot is None:
        assert "systemMessage" not in entry
    else:
        mine = dict(entry["systemMessage"])
        assert list(mine) == snapshot["keyOrder"]
        mine["timestamp"] = "<now-ms>"  # the oracle masks the time the same way
        assert hashlib.sha256(js_stringify(mine).encode()).hexdigest() == snapshot["sha256"]


@needs_oracle
def test_pi_loads_a_repaired_file_and_skips_the_torn_line(tmp_path):
    path = simple_session(turns=6, size=400).write(tmp_path / "s.jsonl")
    path.write_bytes(path.read_bytes() + b'{"type":"message","id":"torn')
    written_long_ago(path)
    result = run("compact", path, "--keep-recent-tokens", "300", "--repair", "--json", env=SEEDS)
    assert result.code == 0, result.stderr
    pi = oracle("context", path)
    assert pi["load"]["headerValid"] is True
    assert pi["leaf"]["id"] == result.json["reminder_id"]
    assert pi["roles"][0] == "compactionSummary" and pi["roles"][-1] == "custom"


@needs_resume
@pytest.mark.parametrize(("fixture", "flags"), [CASES[1], CASES[3], CASES[7]])
def test_real_pi_resuming_the_compacted_file_sends_checkpoint_tail_reorientation_prompt(tmp_path, fixture, flags):
    path, doc = _compacted(tmp_path, fixture, flags)
    prompt = "what next?"
    proc = subprocess.run(
        [sys.executable, str(RESUME), "--compact", str(path), prompt], capture_output=True, timeout=300, check=False
    )
    report = orjson.loads(proc.stdout)
    assert report["ok"] is True, report
    roles = report["firstRequest"]["roles"]
    messages = report["messages"]
    first = report["firstNonSystemIndex"]
    assert roles[:first] == (["system"] if first else [])
    assert report["firstNonSystemIsCompactionSummary"] is True
    summary = report["compactionSummary"]
    assert summary["entryId"] == doc["compaction_id"] and summary["messageIndex"] == first
    assert summary["textAsSent"] == summary["wrapperPrefix"] + doc["entries"][0]["summary"] + summary["wrapperSuffix"]
    reorientation = [c for c in report["customMessages"] if c["entryId"] == doc["reminder_id"]]
    assert len(reorientation) == 1
    assert reorientation[0]["foundInRequestAt"] == len(messages) - 2 and reorientation[0]["exactText"] is True
    assert messages[-2]["text"] == doc["entries"][1]["content"]
    assert report["newPrompt"]["isLast"] is True and messages[-1]["text"] == prompt
    # In between: exactly the kept tail, in order, as our projection has it.
    session = load_session(path)
    projection = build_projection(get_branch(session))
    tail = [pe for pe in projection.entries[1:] if pe.messages and pe.entry.id != doc["reminder_id"]]
    tail_messages = convert_to_llm([m for pe in tail for m in pe.messages if m.get("role") != "system"])
    assert roles[first + 1 : -2] == [ROLE_ON_WIRE.get(m["role"], m["role"]) for m in tail_messages]
    kept_ids = [pe.entry.id for pe in tail]
    mapped = [m["entry"]["id"] for m in messages[first + 1 : -2] if isinstance(m.get("entry"), dict)]
    assert mapped == [i for i in kept_ids if i in set(mapped)]  # Pi's order is our order
    assert mapped[0] == doc["first_kept_entry_id"]


@needs_oracle
def test_after_a_second_compaction_pi_sees_only_the_newest_reorientation_message(tmp_path):
    path = simple_session(turns=8, size=4000).write(tmp_path / "s.jsonl")
    first = run("compact", path, "--keep-recent-tokens", "3000", "--json", env=SEEDS)
    assert first.code == 0, first.stderr
    leaf = first.json["reminder_id"]
    turn = [
        {"type": "message", "id": "bbbb0001", "parentId": leaf, "timestamp": "2026-05-06T08:00:00.000Z",
         "message": {"role": "user", "content": "next " + "n" * 2000, "timestamp": 5}},
        {"type": "message", "id": "bbbb0002", "parentId": "bbbb0001", "timestamp": "2026-05-06T08:00:01.000Z",
         "message": {"role": "assistant", "content": [{"type": "text", "text": "ok " + "m" * 2000}],
                     "provider": "anthropic", "model": "claude-sonnet-4-5", "stopReason": "stop", "timestamp": 6}},
    ]  # fmt: skip
    with open(path, "ab") as f:
        f.write(b"".join(orjson.dumps(e) + b"\n" for e in turn))
    second = run("compact", path, "--keep-recent-tokens", "1500", "--json", env={**SEEDS, "PICOMPACT_ID_SEED": "2"})
    assert second.code == 0, second.stderr
    assert second.json["omitted_reminder_ids"] == [leaf]
    pi = oracle("context", path, "--full")
    reminders = [m for m in pi["messages"] if m.get("customType") == "picompact.reorientation"]
    assert len(reminders) == 1 and pi["messages"][-1] is reminders[-1]
    assert reminders[0]["content"] == second.json["entries"][-1]["content"]
    assert pi["estimateProjectedContextTokens"]["tokens"] == second.json["stats"]["tokens_after"]
