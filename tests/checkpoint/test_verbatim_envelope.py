"""The envelope around the spans and the re-orientation reminder (V23–V26)."""

from __future__ import annotations

import shlex
import subprocess
from pathlib import Path

from pi_compact.checkpoint import (
    REORIENTATION_CUSTOM_TYPE,
    VerbatimOptions,
    build_verbatim_checkpoint,
)
from pi_compact.checkpoint.context_files import ContextFile
from pi_compact.checkpoint.verbatim.envelope import TAIL_MARKER
from pi_compact.ops.compact import stale_reminders
from tests.helpers.checkpoint import CWD, compact, plan_for
from tests.helpers.sessions import SessionBuilder


def rich_session(builder: SessionBuilder) -> None:
    builder.user("start")
    builder.tool("read", {"path": "docs/GUIDE.md"}, "guide text")
    builder.user("now fix src/app.py")
    builder.tool("edit", {"path": f"{CWD}/src/app.py", "oldText": "a", "newText": "b"})
    builder.tool("bash", {"command": "pytest"}, "1 failed", is_error=True)
    builder.assistant("One test still fails.")
    builder.user("please keep going")


def test_v23_envelope_order(builder: SessionBuilder, tmp_path: Path) -> None:
    rich_session(builder)
    path = builder.write(tmp_path / "s.jsonl")
    guide = ContextFile(f"{CWD}/AGENTS.md", "Read docs/GUIDE.md.", "project")
    cp = build_verbatim_checkpoint(plan_for(path), VerbatimOptions(str(path), None, (guide,)))
    s = cp.summary
    order = [
        s.index("# Verbatim checkpoint"),
        s.index("picompact grep"),
        s.index('<span compaction="1"'),
        s.index("</span>"),
        s.index("## Retained startup reads"),
        s.index("## Files in the compacted history"),
        s.index("All of the above is history."),
        s.index(TAIL_MARKER),
    ]
    assert order == sorted(order)
    assert s.endswith(TAIL_MARKER)
    assert s.count("All of the above is history.") == 1
    assert '<read entry="e0000003" path="docs/GUIDE.md">\nguide text\n</read>' in s
    assert "- src/app.py\n" in s and "(no read-tool output in tail)" not in s  # no label says it


def test_v24_reminder_is_separate_and_typed(builder: SessionBuilder, tmp_path: Path) -> None:
    rich_session(builder)
    _, cp = compact(builder, tmp_path)
    assert REORIENTATION_CUSTOM_TYPE == "picompact.reorientation"
    assert cp.reminder and cp.reminder not in cp.summary
    assert "git status" not in cp.summary  # the checklist lives only in the reminder


def test_v25_reminder_says_what_to_do(builder: SessionBuilder, tmp_path: Path) -> None:
    rich_session(builder)
    _, cp = compact(builder, tmp_path)
    r = cp.reminder
    assert r.index("Re-read the files the next step needs") < r.index("Recover history")  # restoring comes first
    assert "redo cheap checks; old output is not current state; label what is unverified." in r
    assert "only if the task needs what is gone" in r
    assert "Don't redo writes shown as done" in r
    assert "`git status`" in r
    assert "Before replacing a file with `write`, re-read it unless it is in view" in r
    assert "never rebuild unchanged parts from memory" in r
    # the recap: counts; the latest request is in the kept tail, so it is not quoted again
    assert "Compacted: 2 user messages, 3 tool calls (1 failed)." in r
    assert "Latest request" not in r


def test_v25_recap_quotes_the_latest_request_only_when_compacted_flattened_and_cut(
    builder: SessionBuilder, tmp_path: Path
) -> None:
    builder.user("first")
    builder.assistant("ok")
    builder.user("a very\nlong request " + "z" * 500)
    builder.assistant("working on it " + "w" * 4000)  # the kept tail starts after the request
    _, cp = compact(builder, tmp_path, keep=500)
    line = cp.reminder.split("Latest request, compacted (entry ", 1)[1]
    assert "a very long request" in line and "z" * 500 not in line and line.endswith('…"')


def test_v26_recovery_commands_name_the_session_once_shell_quoted(builder: SessionBuilder, tmp_path: Path) -> None:
    rich_session(builder)
    name = "it's a session with spaces.jsonl"
    _, cp = compact(builder, tmp_path, name=name)
    quoted = shlex.quote(str(tmp_path / name))
    assert f"FILE={quoted}:" in cp.summary
    assert "`picompact grep '<regex>' FILE`" in cp.summary
    assert "`picompact show <id> FILE`" in cp.summary
    assert "`picompact list FILE`" in cp.summary
    assert cp.summary.count(str(tmp_path)) == 1 and str(tmp_path) not in cp.reminder  # the path said once
    assert "picompact lookup" not in cp.summary and "picompact lookup" not in cp.reminder
    assert "the checkpoint's commands" in cp.reminder
    # the quoting survives a real shell: the path comes back as one argument
    out = subprocess.run(
        ["sh", "-c", f"FILE={quoted}; printf '%s' \"$FILE\""], capture_output=True, text=True, check=True
    )
    assert out.stdout == str(tmp_path / name)


def test_v26_lookup_only_when_a_model_is_configured(builder: SessionBuilder, tmp_path: Path) -> None:
    rich_session(builder)
    _, cp = compact(builder, tmp_path, lookup=True)
    assert '`picompact lookup "<question>" FILE`' in cp.summary


def test_intro_explains_removals_once(builder: SessionBuilder, tmp_path: Path) -> None:
    rich_session(builder)
    _, cp = compact(builder, tmp_path)
    intro = cp.summary.split("<span", 1)[0]
    for phrase in (
        "compacted without a model",
        "thinking and tool outputs removed",
        "ok|error|unknown",
        "(the tool's flag)",
        f"Paths relative to {CWD}",
    ):
        assert phrase in intro
        assert cp.summary.count(phrase) == 1


def test_v24_earlier_reminders_in_the_kept_tail_are_reported(builder: SessionBuilder, tmp_path: Path) -> None:
    builder.user("first")
    builder.assistant("ok")
    builder.user("second " + "x" * 200)
    old = builder.custom_message(REORIENTATION_CUSTOM_TYPE, "old reminder", display=False)
    builder.assistant("continuing")
    builder.user("third")
    plan, _ = compact(builder, tmp_path, keep=20)
    assert old in {pe.entry.id for pe in plan.kept_entries()}
    assert stale_reminders(plan) == [old]
