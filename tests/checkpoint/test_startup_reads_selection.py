"""V16–V19: which startup reads a checkpoint retains verbatim, how references match, and how the state carries on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pi_compact.checkpoint.context_files import ContextFile, context_files_for
from pi_compact.checkpoint.startup_reads import RetainedRead, select_startup_reads
from pi_compact.pi.plan import CompactionPlan, plan_compaction
from pi_compact.pi.projection import build_projection
from pi_compact.session import get_branch, load_session
from tests.helpers.sessions import SessionBuilder

GUIDE = "line 1\nline 2\n"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    return path


def plan_from(sb: SessionBuilder, path: Path, first_kept: str) -> CompactionPlan:
    """Pi's plan for the session, with keepRecentTokens chosen so that the cut falls exactly at ``first_kept``."""
    branch = get_branch(load_session(sb.write(path)))
    projection = build_projection(branch)
    index = projection.index_of(first_kept)
    plan = plan_compaction(branch, sum(pe.tokens for pe in projection.entries[index:]))
    assert plan.first_kept is not None and plan.first_kept.id == first_kept
    return plan


def agents(repo: Path, text: str, name: str = "AGENTS.md") -> list[ContextFile]:
    (repo / name).write_text(text)
    return [f for f in context_files_for(str(repo), repo.parent / "agent") if f.path.startswith(str(repo))]


def read(sb: SessionBuilder, call: str, path: str, text: str = GUIDE, **args: Any) -> str:
    sb.assistant(tool_calls=[(call, "read", {"path": path, **args})])
    return sb.tool_result(call, "read", text)


def first_turn(repo: Path, *paths: str) -> tuple[SessionBuilder, str]:
    """A first user message, one read per path, then the second user message (where the cut will fall)."""
    sb = SessionBuilder(cwd=str(repo))
    sb.user("set up " + "x" * 100)
    for n, path in enumerate(paths):
        read(sb, f"r{n}", path)
    sb.assistant("ready " + "y" * 100)
    second = sb.user("now work")
    sb.assistant("ok")
    return sb, second


def selected(repo: Path, sb: SessionBuilder, cut: str, files: list[ContextFile]) -> list[str]:
    reads, _ = select_startup_reads(plan_from(sb, repo.parent / "s.jsonl", cut), None, files, str(repo))
    return [r.path for r in reads]


# ---------------------------------------------------------------------------------------------------- context files


def test_v16_context_files_discovered_like_pi(tmp_path: Path) -> None:
    agent_dir = tmp_path / "agent"
    agent_dir.mkdir()
    (agent_dir / "AGENTS.md").write_text("global rules")
    root = tmp_path / "repo"
    cwd = root / "app" / "sub"
    cwd.mkdir(parents=True)
    (root / "AGENTS.md").write_text("\ufeffroot rules")
    (root / "app" / "AGENTS.override.md").write_text("override")
    (root / "app" / "AGENTS.md").write_text("shadowed by the override")
    (cwd / "AGENTS.md").mkdir()  # a directory is not a context file: the next candidate is used
    (cwd / "CLAUDE.md").write_text("claude rules")
    extra = tmp_path / "extra.md"
    extra.write_text("extra rules")
    files = context_files_for(str(cwd), agent_dir, [extra, tmp_path / "missing.md"])
    mine = [
        (Path(f.path).relative_to(tmp_path).as_posix(), f.content, f.origin)
        for f in files
        if f.path.startswith(str(tmp_path))
    ]
    assert mine == [
        ("agent/AGENTS.md", "global rules", "global"),
        ("repo/AGENTS.md", "root rules", "project"),
        ("repo/app/AGENTS.override.md", "override", "project"),
        ("repo/app/sub/CLAUDE.md", "claude rules", "project"),
        ("extra.md", "extra rules", "extra"),
    ]


def test_v16_default_agent_dir_is_pis(isolated_home: Path, tmp_path: Path) -> None:
    agent_dir = isolated_home / ".pi" / "agent"  # PI_CODING_AGENT_DIR points here in tests
    agent_dir.mkdir(parents=True)
    (agent_dir / "CLAUDE.md").write_text("from the agent dir")
    files = context_files_for(str(tmp_path / "nowhere"), None, [])
    assert [(f.content, f.origin) for f in files if f.origin == "global"] == [("from the agent dir", "global")]


def test_v16_nested_worktree_shadows_main_checkout_file(tmp_path: Path) -> None:
    main = tmp_path / "main"
    (main / ".git" / "worktrees" / "wt").mkdir(parents=True)
    (main / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (main / ".git" / "worktrees" / "wt" / "HEAD").write_text("ref: refs/heads/wt\n")
    (main / ".git" / "worktrees" / "wt" / "commondir").write_text("../..\n")
    (main / "AGENTS.md").write_text("main checkout")
    worktree = main / "wt"
    worktree.mkdir()
    (worktree / ".git").write_text(f"gitdir: {main / '.git' / 'worktrees' / 'wt'}\n")
    (worktree / "AGENTS.md").write_text("worktree")
    files = context_files_for(str(worktree), tmp_path / "agent", [])
    assert [f.content for f in files if f.path.startswith(str(tmp_path))] == ["worktree"]


# ---------------------------------------------------------------------------------------------------- matching


def test_v17_cwd_relative_reference(repo: Path) -> None:
    files = agents(repo, "Before anything, read docs/guide.md.")
    sb, second = first_turn(repo, "docs/guide.md", "docs/other.md")
    assert selected(repo, sb, second, files) == ["docs/guide.md"]


def test_v17_absolute_reference(repo: Path) -> None:
    files = agents(repo, f"Spec: `{repo}/spec/api.md`")
    sb, second = first_turn(repo, "spec/api.md", f"{repo}/spec/other.md")
    assert selected(repo, sb, second, files) == ["spec/api.md"]


def test_v17_reference_relative_to_the_instruction_file(repo: Path) -> None:
    app = repo / "app"
    app.mkdir()
    files = agents(repo, "See [the guide](docs/guide.md#start).")  # repo/AGENTS.md: means repo/docs/guide.md
    sb, second = first_turn(app, "../docs/guide.md", "../docs/other.md")
    reads, _ = select_startup_reads(plan_from(sb, repo.parent / "s.jsonl", second), None, files, str(app))
    assert [(r.path, r.display_path) for r in reads] == [("../docs/guide.md", "../docs/guide.md")]


def test_v17_basename_selects_every_same_named_file(repo: Path) -> None:
    files = agents(repo, "Each package has a README.md; read them.")
    sb, second = first_turn(repo, "README.md", "pkg/README.md", "pkg/README.md.orig")
    assert selected(repo, sb, second, files) == ["README.md", "pkg/README.md"]


def test_v17_substrings_of_longer_names_do_not_match(repo: Path) -> None:
    files = agents(repo, "Inputs: data.md and docs/a.md.")
    sb, second = first_turn(repo, "a.md", "src/docs/a.md", "data.md", "docs/a.md")
    assert selected(repo, sb, second, files) == ["data.md", "docs/a.md"]


def test_v17_quoted_name_with_spaces_is_one_name(repo: Path) -> None:
    files = agents(repo, 'Read "Design Notes.md" and `docs/Release Plan.md` and nothing else.')
    sb, second = first_turn(repo, "Design Notes.md", "Notes.md", "docs/Release Plan.md", "Plan.md")
    assert selected(repo, sb, second, files) == ["Design Notes.md", "docs/Release Plan.md"]


# ---------------------------------------------------------------------------------------------------- the interval


def test_v16_reads_after_the_second_user_message_are_ignored(repo: Path) -> None:
    files = agents(repo, "Read docs/guide.md and docs/late.md.")
    sb, _ = first_turn(repo, "docs/guide.md")
    read(sb, "late", "docs/late.md")
    sb.assistant("done " + "z" * 100)
    cut = sb.user("third")
    sb.assistant("ok")
    assert selected(repo, sb, cut, files) == ["docs/guide.md"]


def test_v16_custom_messages_do_not_close_the_interval(repo: Path) -> None:
    files = agents(repo, "Read docs/guide.md and docs/api.md.")
    sb = SessionBuilder(cwd=str(repo))
    sb.user("set up")
    read(sb, "r1", "docs/guide.md")
    sb.add({"type": "custom_message", "customType": "note", "content": "an extension speaks", "display": True})
    read(sb, "r2", "docs/api.md")
    sb.assistant("ready " + "y" * 100)
    second = sb.user("now work")
    sb.assistant("ok")
    assert selected(repo, sb, second, files) == ["docs/guide.md", "docs/api.md"]


def test_v16_shell_and_nested_reads_are_ignored(repo: Path) -> None:
    files = agents(repo, "Read docs/guide.md.")
    sb = SessionBuilder(cwd=str(repo))
    sb.user("set up")
    sb.assistant(tool_calls=[("b1", "bash", {"command": "cat docs/guide.md"})])
    sb.tool_result("b1", "bash", GUIDE)
    sb.assistant(tool_calls=[("c1", "codemode", {"code": "read('docs/guide.md')"})])
    nested = {"calls": [{"id": "n1", "name": "read", "status": "ok", "arguments": {"path": "docs/guide.md"}}]}
    sb.tool_result("c1", "codemode", GUIDE, nestedCalls=nested)
    sb.assistant("ready " + "y" * 100)
    second = sb.user("now work")
    sb.assistant("ok")
    assert selected(repo, sb, second, files) == []


def test_v18_failed_image_and_ambiguous_reads_are_excluded(repo: Path) -> None:
    files = agents(repo, "Read docs/guide.md, logo.png, docs/a.md and docs/b.md.")
    sb = SessionBuilder(cwd=str(repo))
    sb.user("set up")
    sb.assistant(tool_calls=[("r1", "read", {"path": "docs/guide.md", "offset": 50})])
    sb.tool_result("r1", "read", "Offset 50 is beyond end of file (3 lines total)", is_error=True)
    sb.assistant(tool_calls=[("r2", "read", {"path": "logo.png"})])
    sb.message(
        {
            "role": "toolResult",
            "toolCallId": "r2",
            "toolName": "read",
            "content": [
                {"type": "text", "text": "Read image file [image/png]"},
                {"type": "image", "data": "AA==", "mimeType": "image/png"},
            ],
            "isError": False,
            "timestamp": 3,
        }
    )
    read(sb, "same", "docs/a.md")
    read(sb, "same", "docs/b.md")
    read(sb, "ok", "docs/guide.md")
    sb.assistant("ready " + "y" * 100)
    second = sb.user("now work")
    sb.assistant("ok")
    reads, _ = select_startup_reads(plan_from(sb, repo.parent / "s.jsonl", second), None, files, str(repo))
    assert [(r.path, r.tool_call_id) for r in reads] == [("docs/guide.md", "ok")]


def test_v16_agents_file_read_during_the_interval_is_a_source(repo: Path) -> None:
    sb = SessionBuilder(cwd=str(repo))
    sb.user("set up")
    read(sb, "r1", "pkg/AGENTS.md", text="Rules for pkg: consult design/notes.md first.\n")
    read(sb, "r2", "pkg/design/notes.md")
    read(sb, "r3", "lib/design/notes.md")  # a longer path: not what pkg/AGENTS.md names
    sb.assistant("ready " + "y" * 100)
    second = sb.user("now work")
    sb.assistant("ok")
    assert selected(repo, sb, second, []) == ["pkg/design/notes.md"]


def test_v16_recorded_system_prompt_is_the_fallback(repo: Path) -> None:
    sb = SessionBuilder(cwd=str(repo))
    block = f'<project_instructions path="{repo}/AGENTS.md">\nAlways read docs/guide.md.\n</project_instructions>'
    sb.message(
        {
            "role": "system",
            "content": "",
            "sections": {
                "project_context": f"<project_context>\nProject-specific instructions:\n\n{block}\n</project_context>"
            },
            "timestamp": 0,
        }
    )
    sb.user("set up")
    read(sb, "r1", "docs/guide.md")
    sb.assistant("ready " + "y" * 100)
    second = sb.user("now work")
    sb.assistant("ok")
    assert selected(repo, sb, second, []) == ["docs/guide.md"]
    unrelated = [ContextFile(str(repo / "CLAUDE.md"), "nothing relevant", "project")]
    assert selected(repo, sb, second, unrelated) == []


def test_v16_context_edits_are_respected(repo: Path) -> None:
    files = agents(repo, "Read docs/a.md, docs/b.md and docs/c.md.")
    sb = SessionBuilder(cwd=str(repo))
    sb.user("set up")
    omitted = read(sb, "r1", "docs/a.md")
    replaced = read(sb, "r2", "docs/b.md")
    read(sb, "r3", "docs/c.md")
    sb.add({"type": "context_edit", "targetId": omitted, "replacement": None})
    sb.add({"type": "context_edit", "targetId": replaced, "replacement": {"content": "[elided]"}})
    sb.assistant("ready " + "y" * 100)
    second = sb.user("now work")
    sb.assistant("ok")
    assert selected(repo, sb, second, files) == ["docs/c.md"]


# ---------------------------------------------------------------------------------------------------- what is kept


def test_v18_kept_verbatim_with_entry_id_offset_limit_and_notice(repo: Path) -> None:
    files = agents(repo, "Read docs/guide.md.")
    sb = SessionBuilder(cwd=str(repo))
    sb.user("set up")
    page = "line 1\nline 2\n\n[40 more lines in file. Use offset=3 to continue.]"
    first = read(sb, "p1", "docs/guide.md", text=page, offset=1, limit=2)
    whole = read(sb, "p2", f"{repo}/docs/guide.md", text=GUIDE)
    sb.assistant("ready " + "y" * 100)
    second = sb.user("now work")
    sb.assistant("ok")
    reads, _ = select_startup_reads(plan_from(sb, repo.parent / "s.jsonl", second), None, files, str(repo))
    assert reads == [
        RetainedRead(
            first, "p1", "docs/guide.md", "docs/guide.md", 1, 2, page,
            "[40 more lines in file. Use offset=3 to continue.]", False,
        ),
        RetainedRead(whole, "p2", f"{repo}/docs/guide.md", "docs/guide.md", None, None, GUIDE, None, True),
    ]  # fmt: skip
    assert [RetainedRead.from_json(json.loads(json.dumps(r.to_json()))) for r in reads] == reads


# ---------------------------------------------------------------------------------------------------- the state


def test_v19_closed_selection_is_carried_forward_unchanged(repo: Path) -> None:
    files = agents(repo, "Read docs/guide.md.")
    sb, second = first_turn(repo, "docs/guide.md", "docs/api.md")
    reads, state = select_startup_reads(plan_from(sb, repo.parent / "s.jsonl", second), None, files, str(repo))
    assert state["open"] is False
    stored = json.loads(json.dumps(state))
    sb.add(
        {
            "type": "compaction",
            "summary": "checkpoint",
            "firstKeptEntryId": second,
            "tokensBefore": 900,
            "details": {"startupReads": stored},
        }
    )
    sb.assistant("more " + "m" * 100)
    cut = sb.user("again")
    sb.assistant("ok")
    more = agents(repo, "Read docs/guide.md and docs/api.md.")  # new instructions do not reopen a closed selection
    again, state2 = select_startup_reads(plan_from(sb, repo.parent / "s.jsonl", cut), stored, more, str(repo))
    assert again == reads and state2 == stored


def test_v19_open_selection_grows_through_three_compactions_each_read_once(repo: Path) -> None:
    files = agents(repo, "Read guide.md, api.md and faq.md, in that order.")
    path = repo.parent / "s.jsonl"
    sb = SessionBuilder(cwd=str(repo))
    sb.user("set up " + "x" * 100)
    read(sb, "r1", "guide.md")
    sb.assistant(tool_calls=[("r2", "read", {"path": "api.md"})])
    cut1 = sb.leaf
    sb.tool_result("r2", "read", GUIDE)
    sb.assistant("reading on " + "y" * 100)

    # 1: no second user message yet; api.md is still in the kept tail, so only guide.md is retained.
    reads1, state1 = select_startup_reads(plan_from(sb, path, cut1), None, files, str(repo))
    assert [r.path for r in reads1] == ["guide.md"] and state1["open"] is True
    sb.add(
        {
            "type": "compaction",
            "summary": "c1",
            "firstKeptEntryId": cut1,
            "tokensBefore": 500,
            "details": {"startupReads": state1},
        }
    )
    sb.assistant(tool_calls=[("r3", "read", {"path": "faq.md"})])
    cut2 = sb.leaf
    sb.tool_result("r3", "read", GUIDE)
    sb.assistant("still reading " + "z" * 100)

    # 2: the cut passed api.md, so it enters now; faq.md waits in the tail.
    reads2, state2 = select_startup_reads(plan_from(sb, path, cut2), json.loads(json.dumps(state1)), files, str(repo))
    assert [r.path for r in reads2] == ["guide.md", "api.md"] and state2["open"] is True
    assert reads2[0] == reads1[0]
    sb.add(
        {
            "type": "compaction",
            "summary": "c2",
            "firstKeptEntryId": cut2,
            "tokensBefore": 500,
            "details": {"startupReads": state2},
        }
    )
    cut3 = sb.user("thanks, now fix the bug")
    read(sb, "r4", "guide.md")  # after the second user message: never a startup read
    sb.assistant("fixed " + "w" * 100)

    # 3: the second user message closes the interval and faq.md has left the tail.
    reads3, state3 = select_startup_reads(plan_from(sb, path, cut3), json.loads(json.dumps(state2)), files, str(repo))
    assert [r.tool_call_id for r in reads3] == ["r1", "r2", "r3"] and state3["open"] is False
    sb.add(
        {
            "type": "compaction",
            "summary": "c3",
            "firstKeptEntryId": cut3,
            "tokensBefore": 500,
            "details": {"startupReads": state3},
        }
    )
    sb.assistant("more " + "v" * 100)
    cut4 = sb.user("and another thing")
    sb.assistant("ok")

    # 4: carried forward; every read still exactly once.
    reads4, state4 = select_startup_reads(plan_from(sb, path, cut4), json.loads(json.dumps(state3)), files, str(repo))
    assert reads4 == reads3 and state4 == state3


def test_v19_second_user_message_in_the_tail_keeps_the_selection_open(repo: Path) -> None:
    files = agents(repo, "Read guide.md and api.md.")
    sb = SessionBuilder(cwd=str(repo))
    sb.user("set up " + "x" * 100)
    read(sb, "r1", "guide.md")
    sb.assistant(tool_calls=[("r2", "read", {"path": "api.md"})])
    cut = sb.leaf
    sb.tool_result("r2", "read", GUIDE)
    sb.assistant("ready")
    sb.user("second")
    sb.assistant("ok")
    reads, state = select_startup_reads(plan_from(sb, repo.parent / "s.jsonl", cut), None, files, str(repo))
    assert [r.path for r in reads] == ["guide.md"]
    assert state["open"] is True  # api.md has not been compacted yet: it must still be able to enter


def test_v19_older_checkpoint_without_state_starts_from_the_raw_branch(repo: Path) -> None:
    files = agents(repo, "Read guide.md.")
    sb, second = first_turn(repo, "guide.md")
    sb.add({"type": "compaction", "summary": "an LLM summary", "firstKeptEntryId": second, "tokensBefore": 900})
    sb.assistant("more " + "m" * 100)
    cut = sb.user("again")
    sb.assistant("ok")
    reads, state = select_startup_reads(plan_from(sb, repo.parent / "s.jsonl", cut), None, files, str(repo))
    assert [r.path for r in reads] == ["guide.md"] and state["open"] is False


def test_v17_windows_session_matches_without_case(tmp_path: Path) -> None:
    cwd = "C:\\Work\\Repo"
    files = [ContextFile("C:\\Work\\Repo\\AGENTS.md", "Read docs\\Guide.md and readme.md.", "session")]
    sb = SessionBuilder(cwd=cwd)
    sb.user("set up")
    read(sb, "r1", "C:\\Work\\Repo\\docs\\guide.md")
    read(sb, "r2", "README.md")
    read(sb, "r3", "docs\\other.md")
    sb.assistant("ready " + "y" * 100)
    second = sb.user("now work")
    sb.assistant("ok")
    reads, _ = select_startup_reads(plan_from(sb, tmp_path / "s.jsonl", second), None, files, cwd)
    assert [r.tool_call_id for r in reads] == ["r1", "r2"]
