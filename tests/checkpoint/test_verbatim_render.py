"""Selection and rendering of compacted entries (V1–V12)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from pi_compact.checkpoint import REORIENTATION_CUSTOM_TYPE, VerbatimOptions, build_verbatim_checkpoint
from pi_compact.checkpoint.verbatim.signatures import abbreviate_cwd, json_cut, relative_path
from pi_compact.errors import NothingToCompactError
from tests.helpers.checkpoint import CWD, compact, span_texts
from tests.helpers.sessions import SessionBuilder


def only_span(summary: str) -> str:
    spans = span_texts(summary)
    assert len(spans) == 1
    return spans[0]


# --- A. Selection -------------------------------------------------------------------------------------------


def test_v1_span_is_exactly_pis_compacted_range(builder: SessionBuilder, tmp_path: Path) -> None:
    builder.user("first request")
    builder.assistant("first answer")
    builder.user("second request")
    builder.assistant("second answer")
    builder.user("the kept request")
    plan, cp = compact(builder, tmp_path)
    compacted = plan.entries[plan.boundary_start : plan.cut.first_kept_index]
    assert plan.first_kept is not None and plan.first_kept.id == "e0000005"
    span = only_span(cp.summary)
    assert f'entries="{compacted[0].entry.id}..{compacted[-1].entry.id}"' in span
    for pe in compacted:
        assert f"[{pe.entry.id}]" in span
    assert "the kept request" not in span
    saved = cp.details["picompact"]["spans"][0]
    assert (saved["first"], saved["last"]) == ("e0000001", "e0000004")


def test_v1_nothing_to_compact_is_a_typed_error(builder: SessionBuilder, tmp_path: Path) -> None:
    builder.user("only message")
    path = builder.write(tmp_path / "s.jsonl")
    from tests.helpers.checkpoint import plan_for

    plan = plan_for(path, 100000)
    with pytest.raises(NothingToCompactError):
        build_verbatim_checkpoint(plan, VerbatimOptions(str(path), None))


def test_v2_omitted_entry_is_not_rendered_and_replaced_shows_replacement(
    builder: SessionBuilder, tmp_path: Path
) -> None:
    secret = builder.user("please drop this message")
    builder.assistant("ok")
    edited = builder.user("original wording that was replaced")
    builder.assistant("fine")
    builder.context_edit(secret, None)
    builder.context_edit(edited, {"content": "the replacement wording"})
    builder.user("now continue")
    _, cp = compact(builder, tmp_path)
    span = only_span(cp.summary)
    assert "please drop this message" not in span
    assert f"[{secret}]" not in span
    assert "original wording" not in span
    assert f"[{edited}] user (context-edited):\nthe replacement wording" in span


def test_v2_split_turn_prefix_is_compacted(builder: SessionBuilder, tmp_path: Path) -> None:
    builder.user("do the big job")
    builder.tool("read", {"path": f"{CWD}/a.txt"}, "x" * 400)
    builder.assistant("halfway there " + "y" * 400)
    builder.tool("read", {"path": f"{CWD}/b.txt"}, "z" * 40)
    builder.assistant("done")
    plan, cp = compact(builder, tmp_path, keep=20)
    assert plan.cut.is_split_turn
    span = only_span(cp.summary)
    assert "do the big job" in span
    assert "read(path=a.txt) → ok" in span
    assert span.endswith("(This turn continues after this span.)\n</span>")
    kept_ids = {pe.entry.id for pe in plan.kept_entries()}
    assert not any(f"[{i}]" in span for i in kept_ids)


# --- B. Rendering ------------------------------------------------------------------------------------------


def test_v3_user_messages_verbatim(builder: SessionBuilder, tmp_path: Path) -> None:
    text = "Multi-line\n  indented ✓ 😀 𝔘\u2028separator\ttab and trailing space \n"
    builder.user(text)
    builder.user(
        [
            {"type": "text", "text": "block one"},
            {"type": "image", "data": "AAAA", "mimeType": "image/png"},
            {"type": "text", "text": "block two"},
        ]
    )
    builder.assistant("answer")
    builder.user("keep")
    _, cp = compact(builder, tmp_path)
    span = only_span(cp.summary)
    assert f"[e0000001] user:\n{text}\n" in span
    assert "[e0000002] user:\nblock one\n[image: image/png]\nblock two" in span
    assert "AAAA" not in cp.summary


def test_v4_assistant_text_kept_thinking_removed(builder: SessionBuilder, tmp_path: Path) -> None:
    builder.user("go")
    builder.assistant(
        {"type": "thinking", "thinking": "private chain of thought", "thinkingSignature": "sig"},
        "Visible prose,\nover two lines.",
    )
    builder.user("keep")
    _, cp = compact(builder, tmp_path)
    assert "private chain of thought" not in cp.summary
    assert "[e0000002] assistant:\nVisible prose,\nover two lines." in cp.summary


def test_v5_outcome_labels_from_paired_results(builder: SessionBuilder, tmp_path: Path) -> None:
    builder.user("go")
    ok, bad, lost = builder.call("ls", {}), builder.call("bash", {"command": "false"}), builder.call("ls", {"x": 1})
    builder.assistant(ok, bad, lost, stop="toolUse")
    builder.result(bad, "boom", is_error=True)  # results arrive out of order; pairing is by toolCallId
    builder.result(ok, "files")
    builder.assistant("next")
    builder.user("keep")
    _, cp = compact(builder, tmp_path)
    span = only_span(cp.summary)
    assert "▸ ls() → ok" in span
    assert '▸ bash(command="false") → error' in span
    assert "▸ ls(x=1) → unknown" in span


def test_v6_tool_outputs_removed_and_explained_once(builder: SessionBuilder, tmp_path: Path) -> None:
    builder.user("go")
    builder.tool("read", {"path": "a.py"}, "UNIQUE-OUTPUT-TEXT")
    builder.tool("bash", {"command": "make"}, "ANOTHER-OUTPUT", is_error=True)
    builder.user("keep")
    _, cp = compact(builder, tmp_path)
    assert "UNIQUE-OUTPUT-TEXT" not in cp.summary
    assert cp.summary.count("tool outputs removed") == 1
    # a failed output leaves one line, as a fact of the span (what failed is what the next step needs)
    span = only_span(cp.summary)
    assert span.count("ANOTHER-OUTPUT") == 1
    assert "facts from the removed tool output:\n- [e0000005] error: ANOTHER-OUTPUT" in span


@pytest.mark.parametrize(
    ("cwd", "path", "shown"),
    [
        ("/repo", "/repo/src/a.ts", "src/a.ts"),
        ("/repo", "/repo", "."),
        ("/repo/", "/repo/src", "src"),
        ("/repo", "/repository/x.ts", "/repository/x.ts"),
        ("/repo", "src/a.ts", "src/a.ts"),
        ("/repo", "/other/a.ts", "/other/a.ts"),
        ("C:\\Users\\me\\proj", "C:\\Users\\me\\proj\\src\\main.rs", "src\\main.rs"),
        ("C:\\Users\\me\\proj", "c:/users/me/proj/src/lib.rs", "src/lib.rs"),
        ("C:\\Users\\me\\proj", "C:\\Users\\me\\project\\x", "C:\\Users\\me\\project\\x"),
        ("/", "/etc/hosts", "/etc/hosts"),
    ],
)
def test_v7_relative_path(cwd: str, path: str, shown: str) -> None:
    assert relative_path(path, cwd) == shown


def test_v7_file_tool_paths_complete_and_relative(builder: SessionBuilder, tmp_path: Path) -> None:
    long_path = f"{CWD}/" + "/".join(["deeply-nested-directory"] * 12) + "/file.ts"
    builder.user("go")
    builder.tool("read", {"path": long_path})
    builder.tool("grep", {"pattern": "x", "path": f"{CWD}/src"})
    builder.tool("edit", {"path": "/elsewhere/with space.txt", "oldText": "a", "newText": "bb"})
    builder.user("keep")
    _, cp = compact(builder, tmp_path)
    span = only_span(cp.summary)
    assert "read(path=" + long_path[len(CWD) + 1 :] + ") → ok" in span
    assert 'grep(pattern="x", path=src) → ok' in span
    assert 'edit(path="/elsewhere/with space.txt", oldText=<1 chars>, newText=<2 chars>) → ok' in span


@pytest.mark.parametrize(
    ("command", "shown"),
    [
        ("cd /repo && ls /repo/src", "cd . && ls ./src"),
        ("ls /repository /repo-old /repo.bak", "ls /repository /repo-old /repo.bak"),
        ("cat /home/repo/x", "cat /home/repo/x"),
        ('grep -r "x" "/repo"', 'grep -r "x" "."'),
        ("FOO=/repo:/repo/bin make", "FOO=.:./bin make"),
    ],
)
def test_v8_shell_cwd_abbreviation(command: str, shown: str) -> None:
    assert abbreviate_cwd(command, "/repo") == shown


@pytest.mark.parametrize(
    ("command", "shown"),
    [
        ("cd C:\\Users\\dev\\proj && cargo build", "cd . && cargo build"),
        ("type c:/users/dev/proj/src/x.rs", "type ./src/x.rs"),
        ("dir C:\\Users\\dev\\project", "dir C:\\Users\\dev\\project"),
    ],
)
def test_v8_shell_cwd_abbreviation_windows(command: str, shown: str) -> None:
    assert abbreviate_cwd(command, "C:\\Users\\dev\\proj") == shown


def test_v8_bash_signature_shows_dot_but_raw_is_untouched(builder: SessionBuilder, tmp_path: Path) -> None:
    builder.user("go")
    builder.tool("bash", {"command": f"cd {CWD} && pytest {CWD}/tests -q"})
    builder.user("keep")
    path = builder.write(tmp_path / "s.jsonl")
    before = path.read_bytes()
    from tests.helpers.checkpoint import plan_for

    cp = build_verbatim_checkpoint(plan_for(path), VerbatimOptions(str(path), None))
    assert '▸ bash(command="cd . && pytest ./tests -q") → ok' in cp.summary
    assert path.read_bytes() == before


def test_v9_write_and_edit_bodies_become_counts(builder: SessionBuilder, tmp_path: Path) -> None:
    builder.user("go")
    builder.tool("write", {"path": f"{CWD}/new.py", "content": "print('hi')\n" * 10})
    builder.tool("edit", {"path": "a.py", "edits": [{"oldText": "a", "newText": "b"}] * 3})
    builder.tool("edit", {"path": "b.py", "oldText": "abc", "newText": "😀"})
    builder.user("keep")
    _, cp = compact(builder, tmp_path)
    span = only_span(cp.summary)
    assert "▸ write(path=new.py, content=<120 chars>) → ok" in span
    assert "▸ edit(path=a.py, edits=3) → ok" in span
    assert "▸ edit(path=b.py, oldText=<3 chars>, newText=<1 chars>) → ok" in span
    assert "print(" not in span


def test_v10_other_arguments_json_prefix_cut_at_160() -> None:
    assert json_cut("short") == '"short"'
    long = "line one\nline two " + "x" * 300
    shown = json_cut(long)
    assert shown.endswith("…") and shown.count("…") == 1
    assert len(shown) <= 161
    assert shown.startswith('"line one\\nline two xxx')  # not reduced to the first line
    assert json_cut({"a": [1, 2.5, True, None]}) == '{"a":[1,2.5,true,null]}'
    # the cut never splits an escape sequence
    escaped = json_cut("é" * 10 + "\n" * 200)
    assert not escaped[:-1].endswith("\\")


def test_v10_same_rules_with_cap_on_and_off(builder: SessionBuilder, tmp_path: Path) -> None:
    builder.user("go")
    builder.tool("bash", {"command": "echo " + "word " * 100, "timeout": 30})
    builder.user("keep")
    _, uncapped = compact(builder, tmp_path)
    _, capped = compact(builder, tmp_path, cap=100000)
    assert uncapped.summary == capped.summary
    line = next(x for x in uncapped.summary.split("\n") if x.startswith("▸ bash("))
    assert '", timeout=30) → ok' not in line  # the command is cut, the next argument still shown
    assert line.endswith("…, timeout=30) → ok")


def test_v11_custom_messages_become_type_stubs(builder: SessionBuilder, tmp_path: Path) -> None:
    builder.user("go")
    builder.custom_message("git-status", "SECRET BODY")
    builder.custom_message("x" * 300, [{"type": "text", "text": "OTHER BODY"}], display=False)
    builder.message({"role": "custom", "customType": "inline-kind", "content": "THIRD BODY", "display": True})
    builder.assistant("ok")
    builder.user("keep")
    _, cp = compact(builder, tmp_path)
    span = only_span(cp.summary)
    assert '[e0000002] custom "git-status": content removed' in span
    assert f'[e0000003] custom "{"x" * 159}…: content removed' in span
    assert '[e0000004] custom "inline-kind": content removed' in span
    for body in ("SECRET BODY", "OTHER BODY", "THIRD BODY"):
        assert body not in cp.summary


def test_v11_own_reorientation_messages_are_skipped(builder: SessionBuilder, tmp_path: Path) -> None:
    assert REORIENTATION_CUSTOM_TYPE == "picompact.reorientation"
    builder.user("go")
    old = builder.custom_message(REORIENTATION_CUSTOM_TYPE, "OLD REMINDER TEXT", display=False)
    builder.assistant("ok")
    builder.user("keep")
    _, cp = compact(builder, tmp_path)
    assert "OLD REMINDER TEXT" not in cp.summary
    assert f"[{old}]" not in cp.summary


def test_v12_other_kinds_render_consistently(builder: SessionBuilder, tmp_path: Path) -> None:
    builder.message({"role": "system", "content": "SYSTEM PROMPT TEXT"})
    builder.user("go")
    builder.bash(f"ls {CWD}/src", "a\nb", 0)
    builder.bash("false", "", 1)
    builder.bash("sleep 100", "", None, cancelled=True)
    builder.bash("secret", "", 0, excludeFromContext=True)
    builder.branch_summary("We tried approach A; it failed.", "e0000001")
    builder.message({"role": "weird-role", "content": "WEIRD BODY"})
    builder.assistant("stopped", stop="error", error="overloaded")
    builder.assistant(stop="aborted")
    builder.user("keep")
    _, cp = compact(builder, tmp_path)
    span = only_span(cp.summary)
    assert "SYSTEM PROMPT TEXT" not in span
    assert '[e0000003] user ran: "ls ./src" → exit 0' in span
    assert '[e0000004] user ran: "false" → exit 1' in span
    assert '[e0000005] user ran: "sleep 100" → cancelled' in span
    assert '[e0000006] user ran: "secret" → exit 0 (not sent to the model)' in span
    assert "[e0000007] branch summary (from e0000001):\nWe tried approach A; it failed." in span
    assert '[e0000008] "weird-role" message: content removed' in span
    assert '[e0000009] assistant:\nstopped\n(the reply ended with an error: "overloaded")' in span
    assert "[e0000010] assistant:\n(the reply was aborted)" in span
    assert "WEIRD BODY" not in span


def test_v12_nested_calls_listed_under_their_call(builder: SessionBuilder, tmp_path: Path) -> None:
    builder.user("go")
    call = builder.call("codemode", {"code": "edit things"})
    builder.assistant(call, stop="toolUse")
    builder.result(
        call,
        "done",
        nestedCalls={
            "complete": False,
            "calls": [
                {"id": "n1", "name": "edit", "arguments": {"path": f"{CWD}/x.ts", "edits": [{}]}, "status": "ok"},
                {"id": "n2", "name": "bash", "argumentsBytes": 4000, "status": "unfinished"},
            ],
        },
    )
    builder.user("keep")
    _, cp = compact(builder, tmp_path)
    assert (
        '▸ codemode(code="edit things") → ok\n  ↳ edit(path=x.ts, edits=1) → ok\n'
        "  ↳ bash(<4000 bytes of arguments>) → unknown\n  ↳ … (list of nested calls incomplete)"
    ) in cp.summary


def test_entry_ids_in_span_exist_in_session(builder: SessionBuilder, tmp_path: Path) -> None:
    builder.user("go")
    builder.tool("ls", {})
    builder.custom_message("note")
    builder.user("keep")
    plan, cp = compact(builder, tmp_path)
    import re

    ids = set(re.findall(r"^\[([0-9a-z]+)\] ", only_span(cp.summary), re.M))
    assert ids and ids <= set(plan.projection.branch.session.by_id)


def test_details_are_json_serialisable(builder: SessionBuilder, tmp_path: Path) -> None:
    builder.user("go 😀")
    builder.tool("read", {"path": "a"})
    builder.user("keep")
    _, cp = compact(builder, tmp_path)
    assert orjson.loads(orjson.dumps(cp.details)) == cp.details
