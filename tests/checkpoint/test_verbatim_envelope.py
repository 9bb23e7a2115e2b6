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
from pi_compact.checkpoint.envelope import TAIL_MARKER
from pi_compact.compact import stale_reminders
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
        s.index("not evidence of the current state"),
        s.index(TAIL_MARKER),
    ]
    assert order == sorted(order)
    assert s.endswith(TAIL_MARKER)
    assert s.count("not evidence of the current state") == 1
    assert '<read entry="e0000003" path="docs/GUIDE.md">\nguide text\n</read>' in s
    assert "- src/app.py (no read-tool output in tail)" in s


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
    assert r.index("Restore the inputs") < r.index("Recover history only when")  # restoring comes first
    assert "re-read the current versions of the files" in r
    assert "Do not repeat writes or edits" in r
    assert "`git status`" in r
    assert "as unverified" in r
    assert "Old tool output does not establish the current state" in r
    assert "Before replacing an existing file with `write`, re-read it unless its current contents are in view" in r
    assert "never rebuild unchanged parts from memory" in r
    # the recap: counts and the most recent user request
    assert "2 user messages, 3 tool calls (1 reported an error)" in r
    assert 'Most recent user request (entry e0000010): "please keep going"' in r


def test_v25_recap_request_is_flattened_and_cut(builder: SessionBuilder, tmp_path: Path) -> None:
    builder.user("first")
    builder.assistant("ok")
    builder.user("a very\nlong request " + "z" * 500)
    _, cp = compact(builder, tmp_path)
    line = cp.reminder.split("Most recent user request", 1)[1]
    assert "a very long request" in line and "z" * 500 not in line and line.endswith('…"')


def test_v26_recovery_commands_name_the_session_shell_quoted(builder: SessionBuilder, tmp_path: Path) -> None:
    rich_session(builder)
    name = "it's a session with spaces.jsonl"
    _, cp = compact(builder, tmp_path, name=name)
    quoted = shlex.quote(str(tmp_path / name))
    assert f"picompact grep {quoted} '<regex>'" in cp.summary
    assert f"picompact show {quoted} <entry-id>" in cp.summary
    assert f"picompact list {quoted}" in cp.summary
    assert "picompact lookup" not in cp.summary and "picompact lookup" not in cp.reminder
    assert f"picompact show {quoted} <entry-id>" in cp.reminder
    # the quoting survives a real shell: the path comes back as one argument
    out = subprocess.run(["sh", "-c", f"printf '%s' {quoted}"], capture_output=True, text=True, check=True)
    assert out.stdout == str(tmp_path / name)


def test_v26_lookup_only_when_a_model_is_configured(builder: SessionBuilder, tmp_path: Path) -> None:
    rich_session(builder)
    _, cp = compact(builder, tmp_path, lookup=True)
    quoted = shlex.quote(str(tmp_path / "session.jsonl"))
    assert f'picompact lookup {quoted} "<question>"' in cp.summary
    assert "picompact lookup" in cp.reminder


def test_intro_explains_removals_once(builder: SessionBuilder, tmp_path: Path) -> None:
    rich_session(builder)
    _, cp = compact(builder, tmp_path)
    intro = cp.summary.split("<span", 1)[0]
    for phrase in (
        "Thinking is removed",
        "tool output is removed",
        "content removed",
        "`edits=K`",
        "ok | error | unknown",
        f"({CWD})",
    ):
        assert phrase in intro


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
