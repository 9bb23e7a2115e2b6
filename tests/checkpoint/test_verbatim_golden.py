"""Golden checkpoints for hand-made sessions, and the real Pi fixtures rendered deterministically.

The golden files in tests/golden/verbatim/ hold the summary, the reminder and the saved details of each session.
They change only on purpose: regenerate them with

    PICOMPACT_UPDATE_GOLDEN=1 .venv/bin/pytest tests/checkpoint/test_verbatim_golden.py

and review the diff before committing.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from pi_compact.checkpoint import REORIENTATION_CUSTOM_TYPE, VerbatimOptions, build_verbatim_checkpoint
from pi_compact.errors import NothingToCompactError
from pi_compact.pi.plan import plan_compaction
from pi_compact.session import get_branch, load_session
from tests.helpers.checkpoint import CWD, append_checkpoint, plan_for
from tests.helpers.fixtures import PI_FIXTURES
from tests.helpers.sessions import SERIAL, SessionBuilder

GOLDEN = Path(__file__).parent.parent / "golden" / "verbatim"
UPDATE = os.environ.get("PICOMPACT_UPDATE_GOLDEN") == "1"
SESSION_PATH = "/home/dev/.pi/agent/sessions/--home-dev-repo--/2025-01-01T00-00-00-000Z_sess-0001.jsonl"


def all_kinds(b: SessionBuilder) -> tuple[int, int | None]:
    """Every message kind, context edits, unrendered entry types, emoji and images."""
    b.message(
        {
            "role": "system",
            "content": "You are a coding assistant.\n\n"
            f'<project_instructions path="{CWD}/AGENTS.md">\nTax code lives in src/tax.ts.\n</project_instructions>',
        }
    )
    b.other("model_change", provider="anthropic", modelId="claude-sonnet-4-5")
    b.other("thinking_level_change", thinkingLevel="high")
    b.user("Bonjour 👋 — please fix the tax rounding in src/tax.ts.\nDetails follow:\n\t1. cents\n\t2. 🇫🇷 locale")
    read = b.call("read", {"path": f"{CWD}/src/tax.ts", "offset": 1, "limit": 200})
    grep = b.call("grep", {"pattern": "round(", "path": f"{CWD}/src", "ignoreCase": True})
    b.assistant(
        {"type": "thinking", "thinking": "secret plan", "thinkingSignature": "c2ln"},
        "Let me look at the code first.",
        read,
        grep,
        stop="toolUse",
    )
    b.result(read, "export const tax = ...")
    b.result(grep, "src/tax.ts:3: round(", is_error=False)
    write = b.call("write", {"path": f"{CWD}/src/tax.ts", "content": "export const tax = (x) => x;\n"})
    edit = b.call(
        "edit", {"path": "src/util.ts", "edits": [{"oldText": "a", "newText": "b"}, {"oldText": "c", "newText": "d"}]}
    )
    legacy = b.call("edit", {"path": "/elsewhere/notes.md", "oldText": "old", "newText": "new text"})
    bash = b.call(
        "bash", {"command": f"cd {CWD} && npm test -- --grep 'tax rounding' | tee {CWD}/out.log", "timeout": 120}
    )
    mystery = b.call(
        "mcp__tracker__create", {"title": "Rounding bug", "labels": ["bug", "tax"], "body": "A long description " * 20}
    )
    b.assistant(write, edit, legacy, bash, mystery, stop="toolUse")
    b.result(write, "Wrote 29 bytes")
    b.result(edit, "Applied 2 edits")
    b.result(legacy, "old text not found", is_error=True)
    b.result(bash, "1 failing", is_error=True)  # the tracker call never got a result: unknown
    code = b.call("codemode", {"code": "await edit('src/a.ts')"})
    b.assistant(code, stop="toolUse")
    b.result(
        code,
        "ok",
        nestedCalls={
            "complete": True,
            "calls": [
                {
                    "id": "n1",
                    "name": "edit",
                    "arguments": {"path": f"{CWD}/src/a.ts", "oldText": "x", "newText": "yy"},
                    "status": "ok",
                },
                {"id": "n2", "name": "read", "arguments": {"path": "src/b.ts"}, "status": "error"},
            ],
        },
    )
    b.user(
        [
            {"type": "text", "text": "Here is a screenshot:"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
        ]
    )
    b.bash(f"git -C {CWD} status --short", " M src/tax.ts", 0)
    b.bash("npm run flaky", "", 1)
    b.custom_message("git-status", "branch main, 1 file changed")
    b.custom_message(REORIENTATION_CUSTOM_TYPE, "an older reminder", display=False)
    b.message(
        {
            "role": "custom",
            "customType": "todo-reminder",
            "content": [{"type": "text", "text": "TODO"}],
            "display": True,
        }
    )
    b.other("label", targetId="e0000004", label="start")
    b.other("session_info", name="tax work")
    b.other("custom", customType="my-ext", data={"n": 1})
    dropped = b.user("this message was dropped from context")
    replaced = b.assistant("a long answer that was later replaced")
    b.context_edit(dropped, None)
    b.context_edit(replaced, {"content": "(answer shortened by an extension)"})
    b.message({"role": "hologram", "content": "unknown role"})
    b.assistant("Partial answer", stop="aborted")
    b.assistant(stop="error", error="529 overloaded")
    b.user("Thanks! Now run the full suite.")
    b.assistant("Running it now.")
    return 1, None


def branches(b: SessionBuilder) -> tuple[int, int | None]:
    """A tree: an abandoned branch, a branch summary, and the leaf on the second branch."""
    root = b.user("Which approach for caching?")
    b.assistant("Option A: LRU. Option B: TTL.")
    b.user("try A")
    b.tool("write", {"path": f"{CWD}/cache.py", "content": "class LRU: ..."})
    abandoned = b.user("A is too slow, ABANDONED-BRANCH-TEXT")
    b.assistant("ok")
    b.branch_summary("Tried LRU (cache.py); too slow under load.", abandoned, parent=root)
    b.user("try B instead")
    b.tool("write", {"path": f"{CWD}/cache.py", "content": "class TTL: ..."})
    b.assistant("TTL cache in place.")
    b.user("ship it")
    return 1, None


def windows_split_turn(b: SessionBuilder) -> tuple[int, int | None]:
    """A Windows cwd and a cut inside a long turn."""
    b.cwd = "C:\\Users\\dev\\proj"
    b.user("Refactor C:\\Users\\dev\\proj\\src\\main.rs")
    b.tool("read", {"path": "C:\\Users\\dev\\proj\\src\\main.rs"}, "fn main() {}\n" * 50)
    b.tool("bash", {"command": "cd C:\\Users\\dev\\proj && cargo build"}, "ok")
    b.assistant("Build passes; now the tests. " + "detail " * 80)
    b.tool("read", {"path": "c:/users/dev/proj/tests/it.rs"}, "#[test] fn t() {}\n" * 40)
    b.tool("edit", {"path": "D:\\other\\lib.rs", "oldText": "a", "newText": "b"})
    b.assistant("All done.")
    return 200, None


def huge_paste(b: SessionBuilder) -> tuple[int, int | None]:
    """A huge user paste and many tool calls under a small cap."""
    b.user(
        "Here is the full log:\n"
        + "".join(f"2025-01-01 12:00:{i % 60:02d} WARN worker {i} slow\n" for i in range(1500))
    )
    for i in range(25):
        b.tool("bash", {"command": f"grep -n 'worker {i}' {CWD}/logs/app.log"}, f"line {i}")
        b.assistant(f"Worker {i} looks fine.")
    b.user("So which worker is the problem?")
    b.assistant("Worker 7.")
    b.user("Fix it.")
    return 1, 1500


def repeated(b: SessionBuilder, tmp_path: Path) -> tuple[int, int | None]:
    """A foreign (model) summary, then two picompact rounds."""
    b.user("old work")
    kept = b.user("kept before the model summary")
    b.compaction(
        "## Goal\nMake the parser fast.\n\n## Progress\n- [x] profiling",
        kept,
        details={"readFiles": ["parser.py"], "modifiedFiles": []},
    )
    b.tool("edit", {"path": f"{CWD}/parser.py", "oldText": "slow", "newText": "fast"})
    b.user("round two")
    plan = plan_for(b.write(tmp_path / "round1.jsonl"))
    append_checkpoint(b, plan, build_verbatim_checkpoint(plan, VerbatimOptions(SESSION_PATH, None)))
    b.assistant("Continuing after the checkpoint.")
    b.tool("bash", {"command": "pytest -q"}, "3 passed")
    b.user("round three")
    return 1, None


SESSIONS: dict[str, Callable[..., tuple[int, int | None]]] = {
    "all-kinds": all_kinds,
    "branches": branches,
    "windows-split-turn": windows_split_turn,
    "huge-paste-capped": huge_paste,
    "repeated": repeated,
}


def render(name: str, tmp_path: Path) -> str:
    b = SessionBuilder(scheme=SERIAL)
    build = SESSIONS[name]
    keep, cap = build(b, tmp_path) if name == "repeated" else build(b)
    plan = plan_for(b.write(tmp_path / f"{name}.jsonl"), keep)
    cp = build_verbatim_checkpoint(plan, VerbatimOptions(SESSION_PATH, cap))
    details = orjson.dumps(cp.details, option=orjson.OPT_INDENT_2).decode()
    return (
        f"{cp.summary}\n\n===== reminder =====\n{cp.reminder}\n\n===== tokens {cp.tokens}, trimmed {cp.trimmed}, "
        f"warnings {cp.warnings} =====\n\n===== details =====\n{details}\n"
    )


@pytest.mark.parametrize("name", sorted(SESSIONS))
def test_golden_checkpoints(name: str, tmp_path: Path) -> None:
    got = render(name, tmp_path)
    path = GOLDEN / f"{name}.txt"
    if UPDATE:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(got, encoding="utf-8", newline="\n")
    assert path.exists(), f"missing golden file {path}; run with PICOMPACT_UPDATE_GOLDEN=1"
    assert got == path.read_text(encoding="utf-8")


def test_golden_sessions_cover_what_they_claim(tmp_path: Path) -> None:
    kinds = render("all-kinds", tmp_path)
    for needle in (
        "[image: image/png]",
        "user ran:",
        'custom "git-status": content removed',
        "→ unknown",
        "→ error",
        "  ↳ edit(",
        "(context-edited)",
        '"hologram" message',
        "(the reply was aborted)",
        "👋",
        '<read entry="e0000006" path="src/tax.ts" offset="1" limit="200">\nexport const tax = ...\n</read>',
    ):
        assert needle in kinds
    assert "secret plan" not in kinds and "an older reminder" not in kinds and "dropped from context" not in kinds
    assert "ABANDONED-BRANCH-TEXT" not in render("branches", tmp_path)
    windows = render("windows-split-turn", tmp_path).split("===== reminder", 1)[0]
    assert "read(path=src\\\\main.rs)" not in windows and "read(path=src\\main.rs) → ok" in windows
    assert "(This turn continues after this span.)" in windows
    assert 'trimmed="true"' in render("huge-paste-capped", tmp_path)
    assert render("repeated", tmp_path).count("<span compaction=") == 3


# --- the real Pi sessions ------------------------------------------------------------------------------------

FIXTURES = sorted(p.name for p in PI_FIXTURES.glob("*.jsonl"))


@pytest.mark.parametrize("name", FIXTURES)
@pytest.mark.parametrize("cap", [None, 10000, 2000])
def test_real_sessions_render_deterministically(name: str, cap: int | None) -> None:
    def build() -> tuple[str, bytes, str]:
        plan = plan_compaction(get_branch(load_session(PI_FIXTURES / name)), 20000)
        if not plan.can_compact:
            pytest.skip(plan.nothing_reason or "")
        cp = build_verbatim_checkpoint(plan, VerbatimOptions("/s.jsonl", cap))
        if cap is not None:
            assert cp.tokens <= cap or cp.warnings
        return cp.summary, orjson.dumps(cp.details), cp.reminder

    try:
        first = build()
    except NothingToCompactError:  # pragma: no cover - plans are checked above
        pytest.skip("nothing to compact")
    assert build() == first


def test_real_session_thinking_and_outputs_never_leak() -> None:
    session = load_session(PI_FIXTURES / "gen-small-101.jsonl")
    branch = get_branch(session)
    plan = plan_compaction(branch, 20000)
    cp = build_verbatim_checkpoint(plan, VerbatimOptions("/s.jsonl", None))
    compacted = plan.entries[plan.boundary_start : plan.cut.first_kept_index]
    for pe in compacted:
        for message in pe.messages:
            for block in message.get("content") or []:
                if isinstance(block, dict) and block.get("type") == "thinking" and len(block["thinking"]) > 40:
                    assert block["thinking"] not in cp.summary
            if message.get("role") == "toolResult":
                for block in message.get("content") or []:
                    if isinstance(block, dict) and len(block.get("text", "")) > 80:
                        assert block["text"] not in cp.summary
