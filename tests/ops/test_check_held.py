"""``check`` on a long span never compacted: the loader drops the bodies as it reads (``ops.check.held_load``) and
the plan is made from what it kept of each message, with the same answers as a check that holds every body."""

from __future__ import annotations

from pathlib import Path

import pytest

import pi_compact.session.load as loader
from pi_compact.ops.check import CheckOptions, check_session
from pi_compact.ops.prune import plan_prune
from tests.helpers.cli import run
from tests.helpers.fixtures import PI_FIXTURES
from tests.helpers.sessions import SessionBuilder

BIG = 64 * 1024
FIXTURE_FILES = sorted(PI_FIXTURES.glob("*.jsonl"))


def never_compacted(rounds: int) -> SessionBuilder:
    """A long span with every kind of message Pi counts: the system prompt and a patch of it, replies with usage
    (the last one without), tool calls that read, write and edit (one answered with nested calls), an error
    result, an aborted reply, a custom message and a bash execution."""
    sb = SessionBuilder()
    sb.add({"type": "message", "message": {"role": "system", "content": "You are Pi.", "timestamp": 1}})
    for r in range(rounds):
        sb.user(f"round {r}: look at src/mod{r}.py and the logs")
        calls = [
            (f"read_{r}", "read", {"path": f"src/mod{r}.py"}),
            (f"bash_{r}", "bash", {"command": f"cat log{r}"}),
        ]
        if r % 3 == 1:
            calls.append((f"edit_{r}", "edit", {"path": f"src/mod{r}.py", "oldText": "a", "newText": "b"}))
        if r % 4 == 2:
            calls.append((f"write_{r}", "write", {"path": f"out/{r}.txt", "content": "w" * 300}))
        sb.assistant(f"reading round {r}", tool_calls=calls, usage=1_000 + 9_000 * r)
        for call_id, tool, _ in calls:
            nested = {"calls": [{"name": "edit", "arguments": {"path": f"src/nested{r}.py"}}]} if r == 7 else None
            text = f"{tool} {r} output line\n" * (BIG // 24)
            extra = {"nestedCalls": nested} if nested and tool == "bash" else {}
            sb.tool_result(call_id, tool, text, is_error=(r == 5 and tool == "bash"), **extra)
        if r == 4:
            sb.assistant("interrupted", stop="aborted", usage=77)
            sb.add({"type": "custom_message", "customType": "note", "content": "a note " * 50, "display": True})
        if r == 6:
            sb.add(
                {
                    "type": "message",
                    "message": {"role": "system", "content": "", "sections": {"rules": "be brief"}, "timestamp": 2},
                }
            )
            sb.add(
                {
                    "type": "message",
                    "message": {
                        "role": "bashExecution",
                        "command": "make",
                        "output": "built " * 400,
                        "exitCode": 0,
                        "timestamp": 3,
                    },
                }
            )
    sb.user("the last turn")
    sb.assistant("done")
    return sb


def _check_json(path: Path, *args: str) -> list[tuple[int, bytes, str]]:
    """``check --json`` and the human table, twice (the second run resumes from the file's index)."""
    out = []
    for _ in range(2):
        for extra in (("--json",), ()):
            result = run("check", path, *extra, *args)
            out.append((result.code, result.stdout_bytes, result.stderr))
    return out


@pytest.mark.parametrize("fixture", FIXTURE_FILES, ids=lambda p: p.name)
def test_a_check_that_drops_every_body_answers_as_one_that_holds_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fixture: Path
) -> None:
    path = tmp_path / fixture.name
    path.write_bytes(fixture.read_bytes())
    args = ("--context-window", "32000", "--keep-recent-tokens", "2000")
    held = _check_json(path, *args)
    monkeypatch.setattr(loader, "HOLD_BYTES", 1)  # every body dropped as soon as the next line is read
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache-dropped"))  # nothing of the first runs' index
    assert _check_json(path, *args) == held


@pytest.mark.parametrize("keep", [2_000, 20_000, 200_000])
def test_a_long_span_never_compacted_is_planned_without_holding_its_bodies(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, keep: int
) -> None:
    path = never_compacted(12).write(tmp_path / "long.jsonl")
    options = CheckOptions(context_window=64_000, keep_recent_tokens=keep)
    whole = check_session(loader.load_session(path, keep_bodies=True), options)
    monkeypatch.setattr(loader, "HOLD_BYTES", 2 * BIG)
    dropped = check_session(path, options)
    assert dropped.to_json() == whole.to_json()
    assert plan_prune(dropped, summary_only=True).summary_json() == plan_prune(whole, summary_only=True).summary_json()
    assert len(dropped.plan.messages_to_summarize) == len(whole.plan.messages_to_summarize)
    assert list(dropped.plan.messages_to_summarize) == list(whole.plan.messages_to_summarize)
    results = [e for e in dropped.session.entries if e.role == "toolResult"]
    held = sum(e.loaded for e in results)
    if keep < 100_000:  # (with the larger keep, the whole context is the tail the evidence reads)
        assert len(results) > 24 and held <= 6  # a few bodies of the newest lines at most
    assert whole.to_json()["modified_files"] and whole.to_json()["read_files"]  # the lists came from the facts


def test_a_check_that_would_prune_reads_each_dropped_body_once_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where stubs gain (the last usage is high), the prune row builds them from bodies read back one by one."""
    sb = never_compacted(10)
    sb.assistant("a long reply", usage=60_000)
    sb.user("and now?")
    path = sb.write(tmp_path / "gain.jsonl")
    options = CheckOptions(context_window=64_000, keep_recent_tokens=2_000)
    whole = plan_prune(check_session(loader.load_session(path, keep_bodies=True), options), summary_only=True)
    monkeypatch.setattr(loader, "HOLD_BYTES", 2 * BIG)
    check = check_session(path, options)
    dropped = plan_prune(check, summary_only=True)
    assert dropped.summary_json() == whole.summary_json() and dropped.pruned
    assert [(p.entry_id, p.stub) for p in dropped.pruned] == [(p.entry_id, p.stub) for p in whole.pruned]
    assert sum(e.loaded for e in check.session.entries if e.role == "toolResult") <= 6
