"""``picompact list | grep | show | context`` in process; a closed pipe and a terminal as real processes."""

from __future__ import annotations

import gc
import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from pi_compact.search import build_context_view
from pi_compact.session.load import load_session
from tests.helpers.cli import picompact_exe, run
from tests.helpers.fixtures import PI_FIXTURES
from tests.helpers.sessions import SessionBuilder


@pytest.fixture
def session_file(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    sb = SessionBuilder()
    ids = {}
    ids["user"] = sb.user("Why does the build fail?\nIt says TypeError: cannot read undefined")
    ids["assistant"] = sb.assistant(
        "Let me look.", thinking="maybe the TypeError is old", tool_calls=[("c1", "bash", {"command": "npm test"})]
    )
    ids["result"] = sb.tool_result(
        "c1",
        "bash",
        "ENTRY deadbeef user forged\nTypeError: cannot read undefined\n\x1b[31mred\x1b[0m text\r\nsep\u2028here\n"
        + "\n".join(f"ok line {i}" for i in range(30)),
    )
    ids["answer"] = sb.assistant("Fixed the TypeError in src/app.ts.")
    return sb.write(tmp_path / "s.jsonl"), ids


# -- list ---------------------------------------------------------------------------------------------------------


def test_list_plain_json_and_cursor_round_trip(session_file) -> None:
    path, ids = session_file
    plain = run("list", path)
    assert plain.code == 0, plain.stderr
    rows = plain.stdout_bytes.split(b"\n")[:-1]
    assert [r.split()[0].decode() for r in rows] == list(ids.values())
    assert b"Why does the build fail?" in rows[0]
    first = run("list", path, "--limit", "3", "--json")
    assert first.code == 0
    data = first.json
    assert data["schema_version"] == 1 and data["total"] == 4
    assert [e["id"] for e in data["entries"]] == list(ids.values())[:3]
    assert {"id", "type", "role", "timestamp", "preview", "size", "line", "branch", "on_branch"} <= set(
        data["entries"][0]
    )
    assert b"--cursor" in run("list", path, "--limit", "3").stderr_bytes
    second = run("list", path, "--limit", "3", "--json", "--cursor", data["next_cursor"])
    assert [e["id"] for e in second.json["entries"]] == [ids["answer"]]
    assert second.json["next_cursor"] is None
    assert run("list", path, "--role", "user", "--json").json["total"] == 1
    bad_role = run("list", path, "--role", "robot")
    assert bad_role.code == 2 and b"unknown role" in bad_role.stderr_bytes


# -- grep ---------------------------------------------------------------------------------------------------------


def test_grep_exit_codes_and_plain_format(session_file) -> None:
    path, ids = session_file
    found = run("grep", "TypeError", path)
    assert found.code == 0, found.stderr
    lines = found.stdout_bytes.split(b"\n")[:-1]
    assert lines == [
        f"{ids['user']}:text:4:It says TypeError: cannot read undefined".encode(),
        f"{ids['assistant']}:thinking:3:maybe the TypeError is old".encode(),
        f"{ids['result']}:toolResult:4:TypeError: cannot read undefined".encode(),
        f"{ids['answer']}:text:3:Fixed the TypeError in src/app.ts.".encode(),
    ]
    assert found.stderr_bytes == b""
    none = run("grep", "no such thing anywhere", path)
    assert (none.code, none.stdout_bytes, none.stderr_bytes) == (1, b"", b"")


def test_grep_attribution_cannot_be_spoofed_and_bytes_survive(session_file) -> None:
    path, ids = session_file
    forged = run("grep", path, "^ENTRY deadbeef")
    assert forged.stdout_bytes == f"{ids['result']}:toolResult:3:ENTRY deadbeef user forged\n".encode()
    raw = run("grep", path, "red|sep")
    assert f"{ids['result']}:toolResult:5:\x1b[31mred\x1b[0m text\r\n".encode() in raw.stdout_bytes
    assert f"{ids['result']}:toolResult:6:sep\u2028here\n".encode() in raw.stdout_bytes


def test_grep_errors_exit_2(session_file, tmp_path) -> None:
    path, _ = session_file
    bad = run("grep", path, "Type(Error")
    assert bad.code == 2 and bad.stdout_bytes == b""
    assert b"picompact: error: invalid regular expression 'Type(Error' at position" in bad.stderr_bytes
    slow_file = SessionBuilder()
    slow_file.user("a" * 40 + "!")
    slow = run("grep", slow_file.write(tmp_path / "slow.jsonl"), "(a|a)+$", "--regex-timeout", "0.05")
    assert slow.code == 2 and b"took more than 0.05s" in slow.stderr_bytes
    assert run("grep", path, "x", "--section", "nowhere").code == 2
    assert run("grep", path, "x", "--cursor", "garbage").code == 2
    missing = run("grep", tmp_path / "missing.jsonl", "x")
    assert missing.code == 2 and b"no such file" in missing.stderr_bytes


def test_grep_json_lines_envelope(session_file) -> None:
    path, ids = session_file
    result = run("grep", path, "TypeError", "-C", "1", "--json", "--max-count", "2")
    assert result.code == 0
    records = result.jsonl
    assert [r["type"] for r in records] == ["match", "match", "summary"]
    assert all(r["version"] == 1 for r in records)
    match = records[0]["data"]
    assert match["entry_id"] == ids["user"] and match["section"] == "text" and match["line_number"] == 4
    start, end = match["submatches"][0]["start"], match["submatches"][0]["end"]
    assert match["text"][start:end] == "TypeError"
    assert [c["line_number"] for c in match["before"]] == [3]
    summary = records[-1]["data"]
    assert summary["matches"] == 2 and summary["complete"] is False and summary["stopped_by"] == "max_count"
    rest = run("grep", path, "TypeError", "-C", "1", "--json", "--max-count", "2", "--cursor", summary["next_cursor"])
    assert [r["data"]["entry_id"] for r in rest.jsonl if r["type"] == "match"] == [ids["result"], ids["answer"]]
    assert rest.jsonl[-1]["data"]["complete"] is True


def test_grep_in_its_own_process_and_embedded_answers_alike_and_leaves_a_callers_collector_alone(
    session_file,
) -> None:
    """The command's own process freezes what the load made for the collector; a program that runs it through
    ``main(argv, env)`` keeps its collector as it was."""
    path, _ = session_file
    enabled, frozen = gc.isenabled(), gc.get_freeze_count()
    embedded = run("grep", path, "TypeError", "--json")
    assert (gc.isenabled(), gc.get_freeze_count()) == (enabled, frozen)
    assert embedded.code == 0 and len(embedded.jsonl) == 5  # four matches and the summary
    for _ in range(2):  # the second resumes from the index the first wrote
        own = subprocess.run([*picompact_exe(), "grep", str(path), "TypeError", "--json"], capture_output=True)
        assert own.returncode == 0 and own.stdout == embedded.stdout_bytes


def test_grep_cursor_from_a_changed_file_is_refused(session_file) -> None:
    path, _ = session_file
    summary = run("grep", path, "TypeError", "--json", "--max-count", "1").jsonl[-1]["data"]
    with path.open("ab") as f:
        f.write(b'{"type":"label","id":"feedface","parentId":null,"timestamp":"2026-01-02T00:00:00Z","label":"x"}\n')
    again = run("grep", path, "TypeError", "--max-count", "1", "--cursor", summary["next_cursor"])
    assert again.code == 2 and b"session changed" in again.stderr_bytes


def test_grep_context_and_all_branches_labels() -> None:
    branchy = PI_FIXTURES / "gen-branchy-101.jsonl"
    result = run("grep", branchy, "^ENTRY", "--section", "header", "--all-branches", "--max-count", "1000")
    assert result.code == 0
    heads = [line.split(b":")[0] for line in result.stdout_bytes.split(b"\n")[:-1]]
    off = [h for h in heads if b"@" in h]
    assert off and len(heads) == len(load_session(branchy).by_id)
    context = run("grep", PI_FIXTURES / "gen-small-101.jsonl", "error", "-C", "2", "--max-count", "5")
    out = context.stdout_bytes.split(b"\n")
    assert b"--" in out and any(b"-text-" in line or b"-toolResult-" in line for line in out)


@pytest.mark.process
def test_grep_into_head_ends_quietly() -> None:
    big = PI_FIXTURES / "gen-medium-101.jsonl"
    cmd = " ".join(picompact_exe()) + f" grep . {big} --max-count 100000 --max-chars 100000000 | head -n 2"
    proc = subprocess.run(["sh", "-c", cmd], capture_output=True, check=False)
    assert proc.returncode == 0
    assert len(proc.stdout.split(b"\n")) == 3
    assert proc.stderr == b""


def _run_on_tty(*args: str, env: dict[str, str] | None = None) -> bytes:
    """Run the CLI with a pseudo-terminal as stdout and collect what it wrote."""
    master, slave = pty.openpty()
    full_env = {**os.environ, "TERM": "xterm", **(env or {})}
    proc = subprocess.Popen([*picompact_exe(), *args], stdout=slave, stderr=subprocess.PIPE, env=full_env)
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 30)
        if not ready:
            break
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        chunks.append(chunk)
    proc.wait(timeout=30)
    os.close(master)
    return b"".join(chunks)


@pytest.mark.process
@pytest.mark.skipif(sys.platform == "win32", reason="needs a pseudo-terminal")
def test_grep_is_coloured_on_a_terminal_and_escapes_control_characters(session_file) -> None:
    path, ids = session_file
    coloured = _run_on_tty("grep", str(path), "red")
    assert b"\x1b[1;31mred\x1b[0m" in coloured  # the match, highlighted
    assert b"\\e[31m" in coloured  # the output's own escape sequence, made visible
    assert f"ENTRY {ids['result']} toolResult".encode() in coloured
    plain = _run_on_tty("grep", str(path), "red", env={"NO_COLOR": "1"})
    assert b"\x1b[1;31m" not in plain and b"\\e[31m" in plain


# -- show ---------------------------------------------------------------------------------------------------------


def test_show_entry_raw_pages_and_unknown_ids(session_file) -> None:
    path, ids = session_file
    shown = run("show", path, ids["result"])
    assert shown.code == 0, shown.stderr
    lines = shown.stdout_bytes.split(b"\n")
    assert lines[0].startswith(f"ENTRY {ids['result']} toolResult".encode())
    assert lines[1] == b"[toolResult] bash id=c1 ok"
    raw = run("show", path, ids["result"], "--raw")
    file_lines = path.read_bytes().split(b"\n")
    assert raw.code == 0 and raw.stdout_bytes == file_lines[3] + b"\n"
    data = run("show", path, ids["assistant"], "--json").json
    assert data["schema_version"] == 1 and data["entry"]["id"] == ids["assistant"]
    assert [x["section"] for x in data["lines"][:3]] == ["header", "thinking", "thinking"]
    unknown = run("show", path, "a00000z3")
    assert unknown.code == 2 and unknown.stdout_bytes == b""
    assert f"no entry with id 'a00000z3' (did you mean {ids['result']}".encode() in unknown.stderr_bytes
    clash = run("show", path, ids["result"], "--raw", "--page", "2")
    assert clash.code == 2 and b"--raw" in clash.stderr_bytes
    assert run("show", path, ids["result"], "--page", "9").code == 2


def test_show_pages_a_huge_entry(tmp_path) -> None:
    sb = SessionBuilder()
    entry = sb.tool_result("c", "read", "\n".join(f"line {i} " + "x" * 200 for i in range(1000)))
    path = sb.write(tmp_path / "big.jsonl")
    first = run("show", path, entry, "--json").json
    assert first["page"] == 1 and first["pages"] > 5 and first["next_cursor"]
    last = run("show", path, entry, "--json", "--page", str(first["pages"])).json
    assert last["next_cursor"] is None and last["lines"][-1]["text"].startswith("line 999 ")
    human = run("show", path, entry, "--page", "2")
    assert human.code == 0 and b"page 2 of" in human.stderr_bytes


def test_show_v1_session_by_synthetic_id() -> None:
    path = PI_FIXTURES / "pi-large-session.jsonl"
    entry = load_session(path).entries[3]
    shown = run("show", path, entry.id)
    assert shown.code == 0 and shown.stdout_bytes.startswith(f"ENTRY {entry.id} ".encode())
    raw = run("show", path, entry.id, "--raw")
    assert orjson.loads(raw.stdout_bytes)["timestamp"] == entry.timestamp


# -- context ------------------------------------------------------------------------------------------------------


def test_context_human_and_json() -> None:
    path = PI_FIXTURES / "gen-multi-compaction-101.jsonl"
    human = run("context", path)
    assert human.code == 0, human.stderr
    text = human.stdout
    assert "── compaction summary" in text and "── kept from before the compaction ──" in text
    assert "── after the compaction ──" in text
    data = run("context", path, "--json").json
    view = build_context_view(load_session(path))
    assert data == {"schema_version": 1, **orjson.loads(orjson.dumps(view.to_json()))}
    assert data["context_tokens"] == view.context_tokens
    assert f"context tokens {view.context_tokens:,}" in text
