"""Compaction orchestration (``pi_compact.ops.compact``) with a stand-in mode: plan, build, write, retry, report."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import pytest

from pi_compact.checkpoint.entry import fixed_clock, seeded_ids
from pi_compact.checkpoint.mode import CheckpointMode, CheckpointResult, ModeContext, get_mode
from pi_compact.checkpoint.verbatim.mode import default_cap
from pi_compact.errors import ConcurrentWriteError, ExitCode, NothingToCompactError, SessionError, UsageError
from pi_compact.ops.check import CheckOptions
from pi_compact.ops.compact import CompactOptions, build_compaction, compact_session
from pi_compact.pi.plan import CompactionPlan
from pi_compact.pi.projection import build_projection, context_tokens
from pi_compact.session import get_branch, load_session
from tests.helpers.fixtures import PI_FIXTURES
from tests.helpers.sessions import side_branch_session, simple_session, written_long_ago

WHEN = "2026-02-03T04:05:06.007Z"


@dataclass(frozen=True)
class StandInCheckpoint:
    """Shaped like the verbatim module's Checkpoint (no from_hook / usage: the mode adapter supplies them)."""

    summary: str
    details: dict[str, Any]
    reminder: str | None
    tokens: int = 0
    trimmed: bool = False
    warnings: list[str] = field(default_factory=list)


def stand_in(plan, ctx):
    text = f"CHECKPOINT of {len(plan.messages_to_summarize)} messages"
    return StandInCheckpoint(text, {"n": len(plan.messages_to_summarize)}, "REORIENT: re-read files first")


@dataclass
class FunctionMode:
    """A ``CheckpointMode`` around a function returning a checkpoint-shaped object (the orchestration's view)."""

    run: Callable[[CompactionPlan, ModeContext], StandInCheckpoint]
    name: str = "stand-in"

    def build(self, plan: CompactionPlan, ctx: ModeContext) -> CheckpointResult:
        made = self.run(plan, ctx)
        return CheckpointResult(
            summary=made.summary,
            details=made.details,
            reminder=made.reminder,
            from_hook=True,
            tokens=made.tokens,
            trimmed=made.trimmed,
            warnings=tuple(made.warnings),
        )

    def preview(self, plan: CompactionPlan, ctx: ModeContext) -> CheckpointResult:
        return self.build(plan, ctx)


def test_the_stand_in_is_a_checkpoint_mode():
    assert isinstance(FunctionMode(stand_in), CheckpointMode)


def _options(**kw) -> CompactOptions:
    base = {"clock": fixed_clock(WHEN), "new_id": seeded_ids("t"), "check": CheckOptions(keep_recent_tokens=300)}
    base.update(kw)
    return CompactOptions(**base)


def _big(tmp_path: Path, name: str = "s.jsonl") -> Path:
    return simple_session(turns=6, size=400).write(tmp_path / name)


def test_written_session_projects_as_summary_then_kept_tail_then_reorientation(tmp_path):
    path = _big(tmp_path)
    before = path.read_bytes()
    result = compact_session(path, FunctionMode(stand_in), _options())
    assert result.status == "written"
    assert path.read_bytes().startswith(before)
    session = load_session(path)
    compaction, reminder = session.entries[-2:]
    assert compaction.type == "compaction" and reminder.type == "custom_message"
    assert compaction.raw["fromHook"] is True
    assert compaction.raw["tokensBefore"] == result.check.plan.context.tokens
    assert compaction.raw["firstKeptEntryId"] == result.check.plan.first_kept.id
    projection = build_projection(get_branch(session))
    kinds = [pe.entry.id for pe in projection.entries if pe.messages]
    kept = [pe.entry.id for pe in result.check.plan.kept_entries() if pe.messages]
    assert kinds == [compaction.id, *kept, reminder.id]
    roles = [m["role"] for m in projection.messages]
    assert roles[0] == "compactionSummary" and roles[-1] == "custom"
    assert projection.messages[0]["summary"].startswith("CHECKPOINT of ")


def test_reported_tokens_after_are_what_check_says_on_the_compacted_file(tmp_path):
    path = _big(tmp_path)
    result = compact_session(path, FunctionMode(stand_in), _options())
    after = context_tokens(build_projection(get_branch(load_session(path))))
    stats = result.stats
    assert stats.tokens_after == after.tokens
    assert stats.tokens_before == result.check.plan.context.tokens
    assert stats.checkpoint_tokens + stats.reminder_tokens + stats.system_tokens + stats.kept_tokens == after.tokens
    assert stats.freed_tokens == stats.tokens_before - stats.tokens_after


def test_an_append_while_planning_makes_it_reread_replan_and_retry_once(tmp_path):
    path = _big(tmp_path)
    foreign = simple_session(turns=7, size=400)  # one more turn, same ids for the shared part
    extra = foreign.entries[len(simple_session(turns=6, size=400).entries) :]
    calls = []

    def appending_mode(plan, ctx):
        if not calls:
            with open(path, "ab") as f:  # Pi writes its next turn while we plan
                f.write(b"".join(foreign.lines()[-len(extra) :][i] + b"\n" for i in range(len(extra))))
        calls.append(ctx.session.leaf.id)
        return stand_in(plan, ctx)

    result = compact_session(path, FunctionMode(appending_mode), _options())
    assert result.status == "written" and result.attempts == 2
    assert calls[1] == extra[-1]["id"]
    session = load_session(path)
    assert session.entries[-2].parent_id == extra[-1]["id"]  # the compaction follows Pi's new entries
    assert [e.id for e in session.entries[-2 - len(extra) : -2]] == [e["id"] for e in extra]


def test_a_session_that_keeps_changing_gives_exit_3_and_none_of_our_lines(tmp_path):
    path = _big(tmp_path)
    counter = iter(range(1000))

    def always_appending(plan, ctx):
        n = next(counter)
        label = {"type": "label", "id": f"beef{n:04d}", "parentId": ctx.session.leaf.id, "timestamp": "t"}
        with open(path, "ab") as f:
            f.write(orjson.dumps({**label, "targetId": "x", "label": "l"}) + b"\n")
        return stand_in(plan, ctx)

    with pytest.raises(ConcurrentWriteError) as info:
        compact_session(path, FunctionMode(always_appending), _options())
    assert info.value.exit_code == ExitCode.EXTERNAL
    session = load_session(path)
    assert not [e for e in session.entries if e.type in ("compaction", "custom_message")]
    assert [e.id for e in session.entries[-2:]] == ["beef0000", "beef0001"]


def test_nothing_to_compact_is_exit_2_with_the_reason_and_no_write(tmp_path):
    path = _big(tmp_path)
    before = path.read_bytes()
    with pytest.raises(NothingToCompactError) as info:
        compact_session(
            path, FunctionMode(stand_in), _options(check=CheckOptions())
        )  # keepRecentTokens 20000 keeps it all
    assert info.value.exit_code == ExitCode.USAGE
    assert "keepRecentTokens" in str(info.value)
    assert path.read_bytes() == before
    compact_session(path, FunctionMode(stand_in), _options())
    with pytest.raises(NothingToCompactError, match=r"already a compaction|nothing"):
        compact_session(path, FunctionMode(stand_in), _options())


def test_if_needed_writes_only_above_the_threshold(tmp_path):
    path = _big(tmp_path)
    before = path.read_bytes()
    result = compact_session(path, FunctionMode(stand_in), _options(if_needed=True))  # 200k window: far below
    assert result.status == "not-needed" and not result.entries
    assert path.read_bytes() == before
    tokens = result.check.plan.context.tokens
    small = CheckOptions(keep_recent_tokens=300, context_window=tokens + 100, reserve_tokens=200)
    result = compact_session(path, FunctionMode(stand_in), _options(if_needed=True, check=small))
    assert result.status == "written"


def test_dry_run_and_output_leave_the_session_untouched(tmp_path):
    path = _big(tmp_path)
    before = path.read_bytes()
    dry = compact_session(path, FunctionMode(stand_in), _options(dry_run=True))
    assert dry.status == "dry-run" and len(dry.entries) == 2 and dry.write is None
    out = tmp_path / "copy.jsonl"
    copied = compact_session(path, FunctionMode(stand_in), _options(output=str(out)))
    assert copied.status == "copied"
    assert path.read_bytes() == before
    assert out.read_bytes() == before + "".join(dry.lines).encode()  # same clock and ids: same bytes
    with pytest.raises(UsageError, match="dry_run and output clash"):
        _options(dry_run=True, output=str(out))


def test_same_session_flags_clock_and_ids_give_identical_bytes(tmp_path):
    a, b = _big(tmp_path, "a.jsonl"), _big(tmp_path, "b.jsonl")
    compact_session(a, FunctionMode(stand_in), _options())
    compact_session(b, FunctionMode(stand_in), _options())
    assert a.read_bytes() == b.read_bytes()


def test_v2_session_is_migrated_rewritten_and_backed_up(tmp_path):
    path = tmp_path / "v2.jsonl"
    original = (PI_FIXTURES / "gen-v2-legacy-101.jsonl").read_bytes()
    path.write_bytes(original)
    result = compact_session(path, FunctionMode(stand_in), _options(check=CheckOptions(keep_recent_tokens=2000)))
    assert result.status == "rewritten"
    assert result.write.backup.read_bytes() == original
    session = load_session(path)
    assert session.original_version == 3
    assert [e.type for e in session.entries[-2:]] == ["compaction", "custom_message"]
    path.write_bytes(original)
    result = compact_session(
        path, FunctionMode(stand_in), _options(backup=False, check=CheckOptions(keep_recent_tokens=2000))
    )
    assert result.write.backup is None


def test_torn_last_line_refused_unless_repair_and_only_warned_in_a_dry_run(tmp_path):
    path = _big(tmp_path)
    torn = path.read_bytes() + b'{"type":"message","id":"dead'
    path.write_bytes(torn)
    written_long_ago(path)
    with pytest.raises(SessionError, match="--repair"):
        compact_session(path, FunctionMode(stand_in), _options())
    assert path.read_bytes() == torn
    dry = compact_session(path, FunctionMode(stand_in), _options(dry_run=True))
    assert any("--repair" in w for w in dry.warnings)
    compact_session(path, FunctionMode(stand_in), _options(repair=True))
    data = path.read_bytes()
    assert data.startswith(torn + b"\n")
    assert load_session(path).entries[-1].type == "custom_message"


def test_leaf_on_another_branch_extends_that_branch_and_becomes_pis_leaf(tmp_path):
    path, main_tip = side_branch_session(tmp_path / "s.jsonl", "a side question " + "z" * 300)
    compact_session(
        path, FunctionMode(stand_in), _options(check=CheckOptions(keep_recent_tokens=300, leaf_id=main_tip))
    )
    session = load_session(path)
    compaction = session.entries[-2]
    assert compaction.parent_id == main_tip
    branch = get_branch(session)  # Pi resumes on the last entry of the file: our re-orientation message
    assert branch.leaf.type == "custom_message"
    assert main_tip in [e.id for e in branch.entries]


def test_low_gain_is_warned_with_the_reason(tmp_path):
    path = simple_session(turns=6, size=400, usage=False).write(tmp_path / "s.jsonl")
    keep = 1100  # keeps most of the ~1.4k-token context
    result = compact_session(
        path, FunctionMode(stand_in), _options(dry_run=True, check=CheckOptions(keep_recent_tokens=keep))
    )
    assert result.stats.freed_percent < 20
    assert any("fire again soon" in w and "--keep-recent-tokens" in w for w in result.warnings)
    result = compact_session(path, FunctionMode(stand_in), _options(dry_run=True))
    assert not any("fire again soon" in w for w in result.warnings)


def test_verbatim_mode_default_cap_is_half_of_keep_recent_tokens(tmp_path, monkeypatch):
    import pi_compact.checkpoint.verbatim.build as verbatim

    seen = []

    def fake_build(plan, options):
        seen.append(options)
        return verbatim.Checkpoint("S", {}, "R", read_files=[], modified_files=[], tokens=1, trimmed=False)

    import pi_compact.checkpoint.verbatim.mode as verbatim_mode

    monkeypatch.setattr(verbatim_mode, "build_verbatim_checkpoint", fake_build)
    path = _big(tmp_path)
    compact_session(path, get_mode("verbatim"), _options(dry_run=True))
    compact_session(path, get_mode("verbatim", cap_tokens=77), _options(dry_run=True))
    compact_session(path, get_mode("verbatim", no_cap=True), _options(dry_run=True))
    assert [o.cap_tokens for o in seen] == [default_cap(300), 77, None]
    assert default_cap(20000) == 10000
    assert seen[0].session_path == str(path)
    with pytest.raises(UsageError, match="cap_tokens and no_cap clash"):
        get_mode("verbatim", cap_tokens=5, no_cap=True)


def _next_turn(path: Path, tag: str) -> None:
    """Pi appends a new turn after the compaction (chained to the file's last entry)."""
    leaf = load_session(path).leaf.id
    user = {
        "type": "message",
        "id": f"{tag}0001",
        "parentId": leaf,
        "timestamp": "2026-02-03T05:00:00.000Z",
        "message": {"role": "user", "content": "next " + "n" * 2000, "timestamp": 5},
    }
    reply = {
        "type": "message",
        "id": f"{tag}0002",
        "parentId": f"{tag}0001",
        "timestamp": "2026-02-03T05:00:01.000Z",
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": "ok " + "m" * 2000}],
            "provider": "anthropic",
            "model": "claude-sonnet-4-5",
            "stopReason": "stop",
            "timestamp": 6,
        },
    }
    with open(path, "ab") as f:
        f.write(orjson.dumps(user) + b"\n" + orjson.dumps(reply) + b"\n")


def test_a_new_checkpoint_replaces_the_reminder_still_in_its_kept_tail(tmp_path):
    """V24: only the newest re-orientation message stays in view; older ones are omitted, never accumulated."""
    path = simple_session(turns=8, size=4000).write(tmp_path / "s.jsonl")
    first = compact_session(path, FunctionMode(stand_in), _options(check=CheckOptions(keep_recent_tokens=3000)))
    old_reminder = first.to_json()["reminder_id"]
    _next_turn(path, "bbbb")
    second = compact_session(path, FunctionMode(stand_in), _options(check=CheckOptions(keep_recent_tokens=1500)))
    assert old_reminder in [pe.entry.id for pe in second.check.plan.kept_entries()]
    doc = second.to_json()
    assert doc["omitted_reminder_ids"] == [old_reminder]
    projection = build_projection(get_branch(load_session(path)))
    visible = [pe.entry.id for pe in projection.entries if pe.messages and pe.entry.type == "custom_message"]
    assert visible == [doc["reminder_id"]]
    assert next(pe for pe in projection.entries if pe.entry.id == old_reminder).omitted
    assert second.stats.tokens_after == context_tokens(projection).tokens  # the omission is counted


def test_the_verbatim_mode_reads_no_api_key_to_decide_its_text(tmp_path, monkeypatch):
    """Whether the checkpoint advertises `picompact lookup` is the caller's input (a value or a probe)."""
    path = _big(tmp_path)
    monkeypatch.setenv("PICOMPACT_API_KEY", "sk-a-key-for-the-run")
    monkeypatch.setenv("PICOMPACT_MODEL", "openai/gpt-4.1-mini")
    by_default = compact_session(path, get_mode("verbatim"), _options(dry_run=True))
    assert "picompact lookup" not in by_default.checkpoint.summary
    asked: list[tuple[Any, Any]] = []

    def probe(session_model, lookup_model):
        asked.append((session_model, lookup_model))
        return True

    advertised = compact_session(path, get_mode("verbatim", lookup_available=probe), _options(dry_run=True))
    assert "picompact lookup" in advertised.checkpoint.summary
    assert asked and asked[0][0] == advertised.check.plan.projection.model


@dataclass(frozen=True)
class _Requests:
    """What a costly mode's preview shows: what building it would send."""

    warnings: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"status": "dry-run", "requests": 1}


@dataclass
class CostlyMode:
    """A mode whose checkpoint costs something to build (a model call), so its preview is not the checkpoint."""

    calls: list[str] = field(default_factory=list)
    name: str = "costly"

    def build(self, plan: CompactionPlan, ctx: ModeContext) -> CheckpointResult:
        self.calls.append("build")
        return FunctionMode(stand_in).build(plan, ctx)

    def preview(self, plan: CompactionPlan, ctx: ModeContext) -> _Requests:
        self.calls.append("preview")
        return _Requests()


def test_a_dry_run_previews_and_build_compaction_builds_in_full_and_neither_writes(tmp_path):
    path = _big(tmp_path)
    before = path.read_bytes()
    mode = CostlyMode()
    dry = compact_session(path, mode, _options(dry_run=True))
    assert mode.calls == ["preview"]
    assert dry.status == "dry-run" and dry.preview is not None and dry.entries == []
    built = build_compaction(path, mode, _options())
    assert mode.calls == ["preview", "build"]
    assert built.status == "dry-run" and built.preview is None and built.write is None
    assert [e["type"] for e in built.entries] == ["compaction", "custom_message"]
    assert built.entries[0]["summary"].startswith("CHECKPOINT of ")
    assert path.read_bytes() == before
    # what it builds is what compact_session writes
    written = compact_session(path, CostlyMode(), _options())
    assert written.entries[0]["summary"] == built.entries[0]["summary"]
