"""V14/V15: file-list annotations say what evidence the kept tail holds, cautiously, from the session alone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pi_compact.checkpoint.evidence import (
    FULL_READ,
    FULL_STARTUP_READ,
    NO_READ_OUTPUT,
    PARTIAL_READ,
    PARTIAL_STARTUP_READ,
    READ_ORDER_UNCERTAIN,
    READ_OUTPUT,
    READ_THEN_EDITED,
    STARTUP_ORDER_UNCERTAIN,
    STARTUP_THEN_EDITED,
    WRITE_CONTENT,
    WRITE_ORDER_UNCERTAIN,
    WRITE_THEN_EDITED,
    annotate_file_lists,
)
from pi_compact.checkpoint.startup_reads import RetainedRead
from pi_compact.pi.plan import CompactionPlan, plan_compaction
from pi_compact.pi.projection import build_projection
from pi_compact.session import get_branch, load_session
from tests.helpers.sessions import SessionBuilder

CWD = "/repo"
FILE = "/repo/src/app.py"
BODY = "line 1\nline 2\nline 3\n"


def plan_from(sb: SessionBuilder, tmp_path: Path, first_kept: str) -> CompactionPlan:
    """Pi's plan for the session, with keepRecentTokens chosen so that the cut falls exactly at ``first_kept``."""
    branch = get_branch(load_session(sb.write(tmp_path / "session.jsonl")))
    projection = build_projection(branch)
    index = projection.index_of(first_kept)
    plan = plan_compaction(branch, sum(pe.tokens for pe in projection.entries[index:]))
    assert plan.first_kept is not None and plan.first_kept.id == first_kept
    return plan


def session() -> tuple[SessionBuilder, str]:
    """A first turn that gets compacted, then the user message the tail starts at."""
    sb = SessionBuilder(cwd=CWD)
    sb.user("start " + "x" * 200)
    sb.assistant("ok " + "y" * 200)
    return sb, sb.user("continue")


def read(sb: SessionBuilder, call: str, path: str = FILE, text: str = BODY, **args: Any) -> str:
    sb.assistant(tool_calls=[(call, "read", {"path": path, **args})])
    return sb.tool_result(call, "read", text)


def label(plan: CompactionPlan, path: str = FILE, *, modified: bool = False, retained: Any = ()) -> str | None:
    annotations = annotate_file_lists(plan, [] if modified else [path], [path] if modified else [], CWD, retained)
    return annotations.label(path)


# ---------------------------------------------------------------------------------------------------- completeness


def test_v15_read_without_arguments_is_full(tmp_path: Path) -> None:
    sb, tail = session()
    read(sb, "r1")
    assert label(plan_from(sb, tmp_path, tail)) == FULL_READ


def test_v15_offset_one_with_limit_past_eof_is_full(tmp_path: Path) -> None:
    sb, tail = session()
    read(sb, "r1", offset=1, limit=500)
    assert label(plan_from(sb, tmp_path, tail)) == FULL_READ


def test_v15_later_start_line_is_partial(tmp_path: Path) -> None:
    sb, tail = session()
    read(sb, "r1", text="line 2\nline 3\n", offset=2)
    assert label(plan_from(sb, tmp_path, tail)) == PARTIAL_READ


def test_v15_truncation_metadata_makes_partial(tmp_path: Path) -> None:
    sb, tail = session()
    sb.assistant(tool_calls=[("r1", "read", {"path": FILE})])
    sb.tool_result("r1", "read", BODY, details={"truncation": {"truncated": True, "truncatedBy": "bytes"}})
    assert label(plan_from(sb, tmp_path, tail)) == PARTIAL_READ


@pytest.mark.parametrize(
    "notice",
    [
        "\n\n[Showing lines 1-2000 of 2561. Use offset=2001 to continue.]",
        "\n\n[Showing lines 1-1500 of 9000 (50.0KB limit). Use offset=1501 to continue.]",
        "\n\n[7 more lines in file. Use offset=4 to continue.]",
    ],
    ids=["lines-cap", "byte-cap", "limit"],
)
def test_v15_continuation_notice_makes_partial(tmp_path: Path, notice: str) -> None:
    sb, tail = session()
    read(sb, "r1", text=BODY.rstrip("\n") + notice)
    assert label(plan_from(sb, tmp_path, tail)) == PARTIAL_READ


def test_v15_long_first_line_notice_is_partial(tmp_path: Path) -> None:
    sb, tail = session()
    text = "[Line 1 is 80.0KB, exceeds 50.0KB limit. Use bash: sed -n '1p' src/app.py | head -c 51200]"
    read(sb, "r1", text=text)
    assert label(plan_from(sb, tmp_path, tail)) == PARTIAL_READ


def test_v15_two_partial_pages_never_add_up_to_full(tmp_path: Path) -> None:
    sb, tail = session()
    read(sb, "r1", text="line 1\n\n[2 more lines in file. Use offset=2 to continue.]", limit=1)
    read(sb, "r2", text="line 2\nline 3\n", offset=2)
    assert label(plan_from(sb, tmp_path, tail)) == PARTIAL_READ


def test_v15_later_partial_read_does_not_hide_earlier_full_one(tmp_path: Path) -> None:
    sb, tail = session()
    read(sb, "r1")
    read(sb, "r2", text="line 2\n\n[1 more lines in file. Use offset=3 to continue.]", offset=2, limit=1)
    assert label(plan_from(sb, tmp_path, tail)) == FULL_READ


def test_v15_modification_between_full_and_partial_leaves_partial(tmp_path: Path) -> None:
    sb, tail = session()
    read(sb, "r1")
    sb.assistant(tool_calls=[("e1", "edit", {"path": FILE, "edits": [{"oldText": "1", "newText": "one"}]})])
    sb.tool_result("e1", "edit", "Successfully replaced 1 block(s) in src/app.py.")
    read(sb, "r2", text="line 2\n", offset=2)
    assert label(plan_from(sb, tmp_path, tail)) == PARTIAL_READ


# ---------------------------------------------------------------------------------------------------- modifications


def test_v15_read_then_edit(tmp_path: Path) -> None:
    sb, tail = session()
    read(sb, "r1")
    sb.assistant(tool_calls=[("e1", "edit", {"path": "src/app.py", "oldText": "1", "newText": "one"})])
    sb.tool_result("e1", "edit", "Successfully replaced 1 block(s) in src/app.py.")
    assert label(plan_from(sb, tmp_path, tail), modified=True) == READ_THEN_EDITED


def test_v15_write_content_in_tail(tmp_path: Path) -> None:
    sb, tail = session()
    sb.assistant(tool_calls=[("w1", "write", {"path": FILE, "content": BODY})])
    sb.tool_result("w1", "write", "Successfully wrote 21 bytes to /repo/src/app.py")
    assert label(plan_from(sb, tmp_path, tail), modified=True) == WRITE_CONTENT


def test_v15_write_then_edit(tmp_path: Path) -> None:
    sb, tail = session()
    sb.assistant(tool_calls=[("w1", "write", {"path": FILE, "content": BODY})])
    sb.tool_result("w1", "write", "Successfully wrote 21 bytes to /repo/src/app.py")
    sb.assistant(tool_calls=[("e1", "edit", {"path": FILE, "edits": [{"oldText": "1", "newText": "one"}]})])
    sb.tool_result("e1", "edit", "Successfully replaced 1 block(s) in /repo/src/app.py.")
    assert label(plan_from(sb, tmp_path, tail), modified=True) == WRITE_THEN_EDITED


def test_v15_failed_write_is_no_evidence(tmp_path: Path) -> None:
    sb, tail = session()
    sb.assistant(tool_calls=[("w1", "write", {"path": FILE, "content": BODY})])
    sb.tool_result("w1", "write", "EACCES: permission denied", is_error=True)
    assert label(plan_from(sb, tmp_path, tail), modified=True) == NO_READ_OUTPUT


def test_v15_same_message_read_and_edit_order_uncertain(tmp_path: Path) -> None:
    sb, tail = session()
    sb.assistant(
        tool_calls=[
            ("r1", "read", {"path": FILE}),
            ("e1", "edit", {"path": "src/app.py", "edits": [{"oldText": "1", "newText": "one"}]}),
        ]
    )
    sb.tool_result("r1", "read", BODY)
    sb.tool_result("e1", "edit", "Successfully replaced 1 block(s) in src/app.py.")
    assert label(plan_from(sb, tmp_path, tail), modified=True) == READ_ORDER_UNCERTAIN


def test_v15_same_message_write_and_edit_order_uncertain(tmp_path: Path) -> None:
    sb, tail = session()
    sb.assistant(
        tool_calls=[
            ("w1", "write", {"path": FILE, "content": BODY}),
            ("e1", "edit", {"path": FILE, "edits": [{"oldText": "1", "newText": "one"}]}),
        ]
    )
    sb.tool_result("w1", "write", "Successfully wrote 21 bytes to /repo/src/app.py")
    sb.tool_result("e1", "edit", "Successfully replaced 1 block(s) in /repo/src/app.py.")
    assert label(plan_from(sb, tmp_path, tail), modified=True) == WRITE_ORDER_UNCERTAIN


def test_v15_same_message_reads_without_modification_stay_certain(tmp_path: Path) -> None:
    sb, tail = session()
    sb.assistant(tool_calls=[("r1", "read", {"path": FILE}), ("r2", "read", {"path": "/repo/other.py"})])
    sb.tool_result("r1", "read", BODY)
    sb.tool_result("r2", "read", "x = 1\n")
    assert label(plan_from(sb, tmp_path, tail)) == FULL_READ


def test_v15_nested_call_invalidates_but_supplies_nothing(tmp_path: Path) -> None:
    sb, tail = session()
    read(sb, "r1")
    sb.assistant(tool_calls=[("c1", "codemode", {"code": "..."})])
    nested = {
        "calls": [
            {"id": "n1", "name": "read", "status": "ok", "arguments": {"path": "/repo/other.py"}},
            {"id": "n2", "name": "write", "status": "ok", "arguments": {"path": FILE, "content": "new"}},
        ],
        "complete": True,
    }
    sb.tool_result("c1", "codemode", "done", nestedCalls=nested)
    plan = plan_from(sb, tmp_path, tail)
    assert label(plan, modified=True) == READ_THEN_EDITED
    assert label(plan, "/repo/other.py") is None


def test_v15_nested_modification_beside_a_read_is_order_uncertain(tmp_path: Path) -> None:
    sb, tail = session()
    sb.assistant(tool_calls=[("r1", "read", {"path": FILE}), ("c1", "codemode", {"code": "..."})])
    sb.tool_result("r1", "read", BODY)
    nested = {"calls": [{"id": "n1", "name": "edit", "status": "ok", "arguments": {"path": FILE, "edits": []}}]}
    sb.tool_result("c1", "codemode", "done", nestedCalls=nested)
    assert label(plan_from(sb, tmp_path, tail), modified=True) == READ_ORDER_UNCERTAIN


# ---------------------------------------------------------------------------------------------------- no evidence


def test_v15_failed_read_is_no_evidence(tmp_path: Path) -> None:
    sb, tail = session()
    sb.assistant(tool_calls=[("r1", "read", {"path": FILE, "offset": 9})])
    sb.tool_result("r1", "read", "Offset 9 is beyond end of file (4 lines total)", is_error=True)
    plan = plan_from(sb, tmp_path, tail)
    assert label(plan) is None
    assert label(plan, modified=True) == NO_READ_OUTPUT


def test_v15_image_read_is_not_text_evidence(tmp_path: Path) -> None:
    sb, tail = session()
    sb.assistant(tool_calls=[("r1", "read", {"path": "/repo/logo.png"})])
    sb.message(
        {
            "role": "toolResult",
            "toolCallId": "r1",
            "toolName": "read",
            "content": [
                {"type": "text", "text": "Read image file [image/png]"},
                {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            ],
            "isError": False,
            "timestamp": 3,
        }
    )
    assert label(plan_from(sb, tmp_path, tail), "/repo/logo.png") is None


def test_v15_omitted_result_is_no_evidence(tmp_path: Path) -> None:
    sb, tail = session()
    result = read(sb, "r1")
    sb.assistant("noted")
    sb.add({"type": "context_edit", "targetId": result, "replacement": None})
    assert label(plan_from(sb, tmp_path, tail), modified=True) == NO_READ_OUTPUT


def test_v15_replaced_result_has_unknown_completeness(tmp_path: Path) -> None:
    sb, tail = session()
    result = read(sb, "r1")
    sb.assistant("noted")
    sb.add({"type": "context_edit", "targetId": result, "replacement": {"content": "line 1\n(rest elided)"}})
    assert label(plan_from(sb, tmp_path, tail)) == READ_OUTPUT


def test_v15_omitted_call_message_hides_the_read(tmp_path: Path) -> None:
    sb, tail = session()
    sb.assistant(tool_calls=[("r1", "read", {"path": FILE})])
    call = sb.leaf
    sb.tool_result("r1", "read", BODY)
    sb.assistant("noted")
    sb.add({"type": "context_edit", "targetId": call, "replacement": None})
    assert label(plan_from(sb, tmp_path, tail)) is None


def test_v15_omitted_modification_still_invalidates(tmp_path: Path) -> None:
    sb, tail = session()
    read(sb, "r1")
    sb.assistant(tool_calls=[("e1", "edit", {"path": FILE, "edits": [{"oldText": "1", "newText": "one"}]})])
    edit_call = sb.leaf
    sb.tool_result("e1", "edit", "Successfully replaced 1 block(s) in /repo/src/app.py.")
    sb.assistant("noted")
    sb.add({"type": "context_edit", "targetId": edit_call, "replacement": None})
    assert label(plan_from(sb, tmp_path, tail), modified=True) == READ_THEN_EDITED


def test_v15_modified_path_without_evidence(tmp_path: Path) -> None:
    sb = SessionBuilder(cwd=CWD)
    sb.user("start")
    sb.assistant(tool_calls=[("e1", "edit", {"path": FILE, "edits": [{"oldText": "a", "newText": "b"}]})])
    sb.tool_result("e1", "edit", "Successfully replaced 1 block(s).")
    sb.assistant("done " + "y" * 200)
    tail = sb.user("next")
    sb.assistant("ok")
    plan = plan_from(sb, tmp_path, tail)
    assert plan.modified_files == [FILE]
    annotations = annotate_file_lists(plan, plan.read_files, plan.modified_files, CWD)
    assert annotations.label(FILE) == NO_READ_OUTPUT


def test_v15_unmodified_path_without_evidence_is_unannotated(tmp_path: Path) -> None:
    sb = SessionBuilder(cwd=CWD)
    sb.user("start")
    read(sb, "r1")
    sb.assistant("done " + "y" * 200)
    tail = sb.user("next")
    sb.assistant("ok")
    plan = plan_from(sb, tmp_path, tail)
    assert plan.read_files == [FILE]
    annotations = annotate_file_lists(plan, plan.read_files, plan.modified_files, CWD)
    assert annotations.label(FILE) is None  # the read was compacted: no evidence left


def test_v15_turn_prefix_of_a_split_turn_is_not_evidence(tmp_path: Path) -> None:
    sb = SessionBuilder(cwd=CWD)
    sb.user("start")
    read(sb, "r1")
    cut = sb.assistant("now the rest " + "z" * 40)
    sb.assistant("still going")
    plan = plan_from(sb, tmp_path, cut)
    assert plan.cut.is_split_turn
    assert label(plan) is None


def test_v15_ambiguous_pairing_is_no_evidence(tmp_path: Path) -> None:
    sb, tail = session()
    read(sb, "dup")
    read(sb, "dup", text="other text\n")
    assert label(plan_from(sb, tmp_path, tail)) is None


def test_v15_relative_and_absolute_spellings_are_one_file(tmp_path: Path) -> None:
    sb, tail = session()
    read(sb, "r1", path="src/app.py")
    plan = plan_from(sb, tmp_path, tail)
    annotations = annotate_file_lists(plan, ["src/app.py"], [FILE], CWD)
    assert annotations.label("src/app.py") == FULL_READ
    assert annotations.label(FILE) == FULL_READ


def test_one_file_under_two_spellings_is_listed_once_with_both_paths(tmp_path: Path) -> None:
    sb, tail = session()
    read(sb, "r1", path="src/app.py")
    plan = plan_from(sb, tmp_path, tail)
    annotations = annotate_file_lists(plan, ["src/zed.py", FILE, "src/app.py", "/repo/src/zed.py"], [], CWD)
    assert [(a.display_path, a.paths) for a in annotations.read] == [
        ("src/app.py", (FILE, "src/app.py")),
        ("src/zed.py", ("src/zed.py", "/repo/src/zed.py")),
    ]
    assert annotations.label(FILE) == annotations.label("src/app.py") == FULL_READ
    both = annotate_file_lists(plan, ["src/b.py"], ["/repo/src/b.py", "src/a.py", "/repo/src/a.py"], CWD)
    assert both.read == ()
    assert [(a.display_path, a.paths) for a in both.modified] == [
        ("src/a.py", ("src/a.py", "/repo/src/a.py")),
        ("src/b.py", ("/repo/src/b.py", "src/b.py")),
    ]


def test_v15_shell_reads_are_not_inferred(tmp_path: Path) -> None:
    sb, tail = session()
    sb.assistant(tool_calls=[("b1", "bash", {"command": "cat src/app.py"})])
    sb.tool_result("b1", "bash", BODY)
    assert label(plan_from(sb, tmp_path, tail), modified=True) == NO_READ_OUTPUT


# ---------------------------------------------------------------------------------------------------- startup reads


def retained(entry_id: str, call_id: str, complete: bool) -> RetainedRead:
    return RetainedRead(entry_id, call_id, FILE, "src/app.py", None, None, BODY, None, complete)


def test_v15_retained_startup_read_replaces_no_output_label(tmp_path: Path) -> None:
    sb = SessionBuilder(cwd=CWD)
    sb.user("start")
    result = read(sb, "r1")
    sb.assistant("done " + "y" * 200)
    tail = sb.user("next")
    sb.assistant(tool_calls=[("b1", "bash", {"command": "ls"})])
    sb.tool_result("b1", "bash", "src")
    plan = plan_from(sb, tmp_path, tail)
    assert label(plan, retained=[retained(result, "r1", True)]) == FULL_STARTUP_READ
    assert label(plan, retained=[retained(result, "r1", False)]) == PARTIAL_STARTUP_READ


def test_v15_retained_startup_read_then_edited(tmp_path: Path) -> None:
    sb = SessionBuilder(cwd=CWD)
    sb.user("start")
    result = read(sb, "r1")
    sb.assistant(tool_calls=[("e1", "edit", {"path": FILE, "edits": [{"oldText": "1", "newText": "one"}]})])
    sb.tool_result("e1", "edit", "Successfully replaced 1 block(s).")
    sb.assistant("done " + "y" * 200)
    tail = sb.user("next")
    sb.assistant("ok")
    plan = plan_from(sb, tmp_path, tail)
    assert label(plan, modified=True, retained=[retained(result, "r1", True)]) == STARTUP_THEN_EDITED


def test_v15_tail_full_read_beats_retained_partial(tmp_path: Path) -> None:
    sb = SessionBuilder(cwd=CWD)
    sb.user("start")
    result = read(sb, "r1", text="line 1\n\n[2 more lines in file. Use offset=2 to continue.]", limit=1)
    sb.assistant("done " + "y" * 200)
    tail = sb.user("next")
    read(sb, "r2")
    plan = plan_from(sb, tmp_path, tail)
    assert label(plan, retained=[retained(result, "r1", False)]) == FULL_READ


# ---------------------------------------------------------------------------------------------------- output


def test_v14_header_display_paths_and_json(tmp_path: Path) -> None:
    sb, tail = session()
    read(sb, "r1")
    plan = plan_from(sb, tmp_path, tail)
    annotations = annotate_file_lists(plan, [FILE, "/elsewhere/notes.md"], ["src/new.py"], CWD)
    assert "unless annotated, no retained read-tool output identified" in annotations.header
    assert "not the live filesystem" in annotations.header
    assert "shell reads" in annotations.header
    data = json.loads(json.dumps(annotations.to_json()))
    assert data["readFiles"] == [  # sorted by the path shown
        {
            "path": "/elsewhere/notes.md",
            "paths": ["/elsewhere/notes.md"],
            "displayPath": "/elsewhere/notes.md",
            "label": None,
        },
        {"path": FILE, "paths": [FILE], "displayPath": "src/app.py", "label": FULL_READ},
    ]
    assert data["modifiedFiles"] == [
        {"path": "src/new.py", "paths": ["src/new.py"], "displayPath": "src/new.py", "label": NO_READ_OUTPUT}
    ]
    assert dict(annotations) == {FILE: FULL_READ, "/elsewhere/notes.md": None, "src/new.py": NO_READ_OUTPUT}
    assert BODY not in json.dumps(data)  # never file contents


def test_v15_retained_read_from_elsewhere_is_order_uncertain_once_modified(tmp_path: Path) -> None:
    sb = SessionBuilder(cwd=CWD)
    sb.user("start")
    sb.assistant(tool_calls=[("e1", "edit", {"path": FILE, "edits": [{"oldText": "1", "newText": "one"}]})])
    sb.tool_result("e1", "edit", "Successfully replaced 1 block(s).")
    sb.assistant("done " + "y" * 200)
    tail = sb.user("next")
    sb.assistant("ok")
    plan = plan_from(sb, tmp_path, tail)
    elsewhere = retained("ffffffff", "r9", True)  # not on this branch: its place relative to the edit is unknown
    assert label(plan, modified=True, retained=[elsewhere]) == STARTUP_ORDER_UNCERTAIN
    assert label(plan, "/repo/src/untouched.py", retained=[]) is None


def test_v15_windows_session_paths_compare_like_pi_there(tmp_path: Path) -> None:
    sb = SessionBuilder(cwd="C:\\Repo")
    sb.user("start " + "x" * 200)
    sb.assistant("ok " + "y" * 200)
    tail = sb.user("continue")
    read(sb, "r1", path="src\\app.py")
    plan = plan_from(sb, tmp_path, tail)
    annotations = annotate_file_lists(plan, ["C:/repo/SRC/App.py"], [], "C:\\Repo")
    assert annotations.label("C:/repo/SRC/App.py") == FULL_READ
