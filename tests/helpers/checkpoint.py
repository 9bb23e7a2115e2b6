"""Helpers of the checkpoint tests: plan and build a verbatim checkpoint from a session written by
``tests.helpers.sessions.SessionBuilder`` with the ``SERIAL`` scheme (ids e0000001, …, which the golden files
record)."""

from __future__ import annotations

from pathlib import Path

from pi_compact.checkpoint import Checkpoint, VerbatimOptions, build_verbatim_checkpoint
from pi_compact.pi.plan import CompactionPlan, plan_compaction
from pi_compact.session import get_branch, load_session
from tests.helpers.sessions import SERIAL, SessionBuilder

CWD = SERIAL.cwd


def plan_for(path: Path, keep_recent_tokens: int = 1) -> CompactionPlan:
    """Pi's plan for the session file (keep 1 token: only the last message is kept)."""
    return plan_compaction(get_branch(load_session(path)), keep_recent_tokens)


def compact(
    builder: SessionBuilder,
    tmp_path: Path,
    *,
    keep: int = 1,
    cap: int | None = None,
    lookup: bool = False,
    name: str = "session.jsonl",
) -> tuple[CompactionPlan, Checkpoint]:
    path = builder.write(tmp_path / name)
    plan = plan_for(path, keep)
    return plan, build_verbatim_checkpoint(plan, VerbatimOptions(str(path), cap, lookup_available=lookup))


def append_checkpoint(builder: SessionBuilder, plan: CompactionPlan, checkpoint: Checkpoint) -> str:
    """Record the checkpoint as the entry picompact writes (compaction + hidden re-orientation message)."""
    assert plan.first_kept is not None
    compaction_id = builder.compaction(
        checkpoint.summary, plan.first_kept.id, details=checkpoint.details, fromHook=True
    )
    builder.custom_message("picompact.reorientation", checkpoint.reminder, display=False)
    return compaction_id


def span_texts(summary: str) -> list[str]:
    """The <span …>…</span> blocks of a summary, in order."""
    out: list[str] = []
    rest = summary
    while "<span " in rest:
        start = rest.index("<span ")
        end = rest.index("</span>", start) + len("</span>")
        out.append(rest[start:end])
        rest = rest[end:]
    return out
