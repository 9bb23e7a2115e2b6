"""``picompact lint``: each code from a session damaged on purpose, agreement with the loader, ``--all``."""

from __future__ import annotations

import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_compact.errors import PiCompactError
from pi_compact.ops.lint import lint_file
from pi_compact.session import get_branch, load_session
from tests.helpers.cli import run
from tests.helpers.fixtures import PI_FIXTURES
from tests.helpers.sessions import SessionBuilder, simple_session

FIXTURES = sorted(PI_FIXTURES.glob("*.jsonl"))

# ---------------------------------------------------------------------------------------------------------------
# A small generator of damaged sessions: each damage takes the lines of a healthy session (header first) and
# returns the bytes to write, plus the 1-based line the finding must name (None for a file-wide finding).


def healthy() -> SessionBuilder:
    return simple_session(turns=3, size=50)


def lines_of(sb: SessionBuilder) -> list[bytes]:
    return sb.lines()


def join(lines: list[bytes]) -> bytes:
    return b"".join(line + b"\n" for line in lines)


def entry_line(sb: SessionBuilder, entry_id: str) -> int:
    return next(i for i, e in enumerate(sb.entries) if e["id"] == entry_id) + 2


def damage_malformed() -> tuple[bytes, int]:
    lines = lines_of(healthy())
    lines[4] = lines[4][:25]
    return join(lines), 5


def damage_truncated() -> tuple[bytes, int]:
    lines = lines_of(healthy())
    return join(lines) + b'{"type":"message","id":"torn', len(lines) + 1


def damage_non_object() -> tuple[bytes, int]:
    lines = lines_of(healthy())
    lines.insert(3, b"[1, 2, 3]")
    return join(lines), 4


def damage_null() -> tuple[bytes, int]:
    lines = lines_of(healthy())
    lines.insert(3, b"null")
    return join(lines), 4


def damage_no_newline() -> tuple[bytes, int]:
    lines = lines_of(healthy())
    return join(lines)[:-1], len(lines)


def damage_invalid_utf8() -> tuple[bytes, int]:
    sb = healthy()
    lines = lines_of(sb)
    at = next(i for i, line in enumerate(lines) if b"Turn 0" in line)
    lines[at] = lines[at].replace(b"Turn 0", b"Turn \xff0")
    return join(lines), at + 1


def damage_duplicate_id() -> tuple[bytes, int]:
    sb = healthy()
    target = sb.entries[3]["id"]
    sb.add(
        {"type": "label", "id": target, "targetId": sb.entries[1]["id"], "label": "again"}, parent=sb.entries[2]["id"]
    )
    return join(sb.lines()), len(sb.entries) + 1


def damage_dangling_parent() -> tuple[bytes, int]:
    sb = healthy()
    sb.entries[5]["parentId"] = "deadbeef"
    sb.user("on a side branch", parent=sb.entries[2]["id"])  # the leaf is elsewhere: not the orphaned-branch case
    return join(sb.lines()), 7


def damage_orphaned_branch() -> tuple[bytes, int]:
    sb = healthy()
    sb.entries[5]["parentId"] = "deadbeef"
    return join(sb.lines()), 7


def damage_cycle() -> tuple[bytes, int]:
    sb = healthy()
    sb.user("side", parent=sb.entries[1]["id"])
    sb.entries[2]["parentId"] = sb.entries[3]["id"]  # 2 -> 3 -> 2
    return join(sb.lines()), 4


def damage_off_branch() -> tuple[bytes, int]:
    sb = healthy()
    sb.entries[3]["parentId"] = "deadbeef"
    sb.user("back on the root branch", parent=sb.entries[2]["id"])
    return join(sb.lines()), 5


def damage_orphan_result() -> tuple[bytes, int]:
    sb = healthy()
    sb.tool_result("call_nobody", "bash", "stray output")
    return join(sb.lines()), len(sb.entries) + 1


def damage_missing_result() -> tuple[bytes, int]:
    sb = healthy()
    call = sb.assistant("let me look", tool_calls=[("call_x", "read", {"path": "/repo/a.py"})])
    sb.user("never mind")
    return join(sb.lines()), entry_line(sb, call)


def damage_pending_result() -> tuple[bytes, int]:
    sb = healthy()
    call = sb.assistant("let me look", tool_calls=[("call_x", "read", {"path": "/repo/a.py"})])
    return join(sb.lines()), entry_line(sb, call)


def damage_compaction_kept() -> tuple[bytes, int]:
    sb = healthy()
    side = sb.user("side", parent=sb.entries[1]["id"])
    sb.add(
        {"type": "compaction", "summary": "s", "firstKeptEntryId": side, "tokensBefore": 1}, parent=sb.entries[8]["id"]
    )
    return join(sb.lines()), len(sb.entries) + 1


def damage_edit_missing() -> tuple[bytes, int]:
    sb = healthy()
    sb.add({"type": "context_edit", "targetId": "feedf00d", "replacement": None})
    return join(sb.lines()), len(sb.entries) + 1


def damage_edit_off_branch() -> tuple[bytes, int]:
    sb = healthy()
    side = sb.user("side", parent=sb.entries[1]["id"])
    sb.add({"type": "context_edit", "targetId": side, "replacement": None}, parent=sb.entries[8]["id"])
    return join(sb.lines()), len(sb.entries) + 1


def damage_negative_usage() -> tuple[bytes, int]:
    sb = healthy()
    reply = sb.assistant("done", usage=100)
    sb.entries[-1]["message"]["usage"]["input"] = -5
    return join(sb.lines()), entry_line(sb, reply)


def damage_usage_over_window() -> tuple[bytes, int]:
    sb = healthy()
    reply = sb.assistant("done", usage=90_000_000)
    return join(sb.lines()), entry_line(sb, reply)


def damage_time_backwards() -> tuple[bytes, int]:
    sb = healthy()
    sb.entries[6]["timestamp"] = "2025-06-01T00:00:00.000Z"
    sb.entries[6]["message"]["timestamp"] = 1  # a message's inner timestamp does not count
    return join(sb.lines()), 8


def damage_unknown_type() -> tuple[bytes, int]:
    sb = healthy()
    sb.add({"type": "hologram", "data": 1})
    return join(sb.lines()), len(sb.entries) + 1


def damage_unknown_role() -> tuple[bytes, int]:
    sb = healthy()
    sb.message({"role": "oracle", "content": "hm", "timestamp": 5})
    return join(sb.lines()), len(sb.entries) + 1


def damage_old_version() -> tuple[bytes, None]:
    sb = healthy()
    sb.header["version"] = 2
    return join(sb.lines()), None


def damage_big_line() -> tuple[bytes, int]:
    sb = healthy()
    sb.user("z" * (16 * 1024 * 1024 + 10))
    return join(sb.lines()), len(sb.entries) + 1


def _reminder(compaction: str) -> dict:
    return {
        "type": "custom_message",
        "customType": "picompact.reorientation",
        "content": "Picking up after a compaction.",
        "display": False,
        "details": {"compactionId": compaction},
    }


def damage_duplicate_reminder() -> tuple[bytes, int]:
    """Two copies of the extension loaded: one compaction, two re-orientation messages on the branch."""
    sb = healthy()
    kept = sb.entries[-2]["id"]
    compaction = sb.add({"type": "compaction", "summary": "s", "firstKeptEntryId": kept, "tokensBefore": 1})
    sb.add(_reminder(compaction))
    sb.add(_reminder(compaction))
    return join(sb.lines()), len(sb.entries) + 1


DAMAGES: dict[str, tuple[Callable[[], tuple[bytes, int | None]], str]] = {
    "malformed-line": (damage_malformed, "warning"),
    "truncated-last-line": (damage_truncated, "warning"),
    "non-object-line": (damage_non_object, "warning"),
    "null-line": (damage_null, "warning"),
    "no-final-newline": (damage_no_newline, "info"),
    "invalid-utf8": (damage_invalid_utf8, "warning"),
    "duplicate-id": (damage_duplicate_id, "warning"),
    "dangling-parent": (damage_dangling_parent, "warning"),
    "orphaned-branch": (damage_orphaned_branch, "warning"),
    "parent-cycle": (damage_cycle, "error"),
    "off-branch": (damage_off_branch, "warning"),
    "orphan-tool-result": (damage_orphan_result, "warning"),
    "missing-tool-result": (damage_missing_result, "warning"),
    "pending-tool-result": (damage_pending_result, "info"),
    "compaction-kept-missing": (damage_compaction_kept, "error"),
    "edit-target-missing": (damage_edit_missing, "warning"),
    "edit-target-off-branch": (damage_edit_off_branch, "info"),
    "negative-usage": (damage_negative_usage, "error"),
    "usage-over-window": (damage_usage_over_window, "warning"),
    "time-backwards": (damage_time_backwards, "warning"),
    "unknown-type": (damage_unknown_type, "info"),
    "unknown-role": (damage_unknown_role, "warning"),
    "old-version": (damage_old_version, "info"),
    "big-line": (damage_big_line, "info"),
    "duplicate-reminder": (damage_duplicate_reminder, "warning"),
}


def test_a_healthy_session_is_clean(tmp_path: Path) -> None:
    path = tmp_path / "ok.jsonl"
    path.write_bytes(join(lines_of(healthy())))
    result = run("lint", path, "--level", "info")
    assert result.code == 0, result.stdout + result.stderr
    assert result.stdout.startswith(f"{path}: clean (")  # on stdout, as lint --all prints it
    assert result.stderr == ""
    every = run("lint", "--all", tmp_path)
    assert f"{path}: clean" in every.stdout and every.stderr == ""


@pytest.mark.parametrize("code", sorted(DAMAGES))
def test_each_damage_gives_its_code_at_its_line(tmp_path: Path, code: str) -> None:
    make, severity = DAMAGES[code]
    data, line = make()
    path = tmp_path / f"{code}.jsonl"
    path.write_bytes(data)
    result = run("lint", path, "--json", "--level", "info")
    report = result.json["files"][0]
    found = [f for f in report["findings"] if f["code"] == code]
    assert found, report["findings"]
    assert found[0]["severity"] == severity
    assert found[0]["line"] == line
    assert result.code == 1
    # The text form names FILE:LINE, severity and code on one line.
    text = run("lint", path, "--level", "info")
    where = f"{path}:{line}: " if line is not None else f"{path}: "
    assert any(ln.startswith(where) and f"{severity} {code}" in ln for ln in text.stdout.splitlines()), text.stdout


def test_one_reminder_per_compaction_and_branch_is_clean(tmp_path: Path) -> None:
    """Reminders of successive compactions, or of one compaction on two branches, are no duplicates."""
    sb = healthy()
    first = sb.add({"type": "compaction", "summary": "s", "firstKeptEntryId": sb.entries[-2]["id"], "tokensBefore": 1})
    one = sb.add(_reminder(first))
    sb.user("more work")
    second = sb.add({"type": "compaction", "summary": "s", "firstKeptEntryId": sb.leaf, "tokensBefore": 1})
    sb.add(_reminder(second))
    sb.add(_reminder(first), parent=first)  # another branch from the first compaction (after /tree)
    assert one
    path = tmp_path / "s.jsonl"
    path.write_bytes(join(sb.lines()))
    assert not [f for f in lint_file(path).findings if f.code == "duplicate-reminder"]


def test_findings_name_the_entry_and_what_pi_does(tmp_path: Path) -> None:
    sb = healthy()
    sb.add({"type": "context_edit", "id": "ed170001", "targetId": "feedf00d", "replacement": None})
    path = tmp_path / "s.jsonl"
    sb.write(path)
    finding = next(f for f in run("lint", path, "--json").json["files"][0]["findings"])
    assert finding["entry_id"] == "ed170001"
    assert finding["pi"]
    assert "(entry ed170001)" in run("lint", path).stdout


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (b"\xef\xbb\xbf" + join(lines_of(healthy())), "bom"),
        (join(lines_of(healthy())[1:]), "missing-header"),
        (b"hello\nworld\n", "missing-header"),
    ],
)
def test_unreadable_files_exit_2_with_a_finding(tmp_path: Path, data: bytes, code: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_bytes(data)
    result = run("lint", path, "--json")
    assert result.code == 2
    report = result.json["files"][0]
    assert report["readable"] is False
    assert report["findings"][0]["code"] == code
    assert report["findings"][0]["severity"] == "error"
    text = run("lint", path)
    assert text.code == 2 and f"error {code}" in text.stdout


def test_level_decides_the_exit_code(tmp_path: Path) -> None:
    data, _ = damage_unknown_type()  # info only
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    assert run("lint", path).code == 0
    assert run("lint", path, "--level", "info").code == 1
    data, _ = damage_malformed()  # warnings, no error
    path.write_bytes(data)
    assert run("lint", path, "--level", "warning").code == 1
    assert run("lint", path, "--level", "error").code == 0
    assert run("lint", path, "--level", "loud").code == 2


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda p: p.name)
def test_lint_and_the_loader_never_disagree(fixture: Path) -> None:
    """Every loader and branch diagnostic is a finding with the same code and line, and `check` reports the same."""
    session = load_session(fixture)
    branch = get_branch(session)
    expected = sorted((d.code, d.line) for d in [*session.diagnostics, *branch.diagnostics])
    report = lint_file(fixture)
    loader_codes = {d.code for d in [*session.diagnostics, *branch.diagnostics]}
    got = sorted((f.code, f.line) for f in report.findings if f.code in loader_codes)
    assert got == expected
    checked = run("check", fixture, "--json", "--context-window", "1000000")
    assert sorted((d["code"], d["line"]) for d in checked.json["diagnostics"]) == expected


def test_damaged_files_agree_with_check_too(tmp_path: Path) -> None:
    for code in ("malformed-line", "duplicate-id", "orphaned-branch", "truncated-last-line", "null-line"):
        data, _ = DAMAGES[code][0]()
        path = tmp_path / f"{code}.jsonl"
        path.write_bytes(data)
        checked = {(d["code"], d["line"]) for d in run("check", path, "--json").json["diagnostics"]}
        linted = {(f["code"], f["line"]) for f in run("lint", path, "--json").json["files"][0]["findings"]}
        assert checked <= linted, (code, checked - linted)


def test_leaf_changes_the_branch_linted(tmp_path: Path) -> None:
    sb = healthy()
    main_tip = sb.leaf
    sb.entries[5]["parentId"] = "deadbeef"  # the main branch is orphaned at line 7
    sb.user("side", parent=sb.entries[1]["id"])
    path = sb.write(tmp_path / "s.jsonl")
    default = run("lint", path, "--json").json["files"][0]["codes"]
    assert "orphaned-branch" not in default and "dangling-parent" in default
    on_main = run("lint", path, "--json", "--leaf", main_tip).json["files"][0]["codes"]
    assert "orphaned-branch" in on_main and "dangling-parent" not in on_main
    assert run("lint", path, "--leaf", "nope0000").code == 2


def test_default_session_is_the_newest_for_the_directory(tmp_path: Path, agent: Path) -> None:
    project = tmp_path / "proj"
    project.mkdir()
    from pi_compact.pi.sessions import session_dir_for_cwd

    directory = session_dir_for_cwd(project)
    directory.mkdir(parents=True)
    data, _ = damage_null()
    (directory / "2026-01-01T00-00-00-000Z_x.jsonl").write_bytes(data)
    result = run("lint", "--json", cwd=project)
    assert result.code == 1
    assert "null-line" in result.json["files"][0]["codes"]


# ---------------------------------------------------------------------------------------------------------------
# --all


def _many(root: Path, count: int) -> dict[Path, str | None]:
    """``count`` small sessions in project directories; every 7th damaged with a known code."""
    made: dict[Path, str | None] = {}
    damages = ["malformed-line", "null-line", "orphan-tool-result", "unknown-role", "duplicate-id"]
    for n in range(count):
        project = root / f"--proj{n % 5}--"
        project.mkdir(parents=True, exist_ok=True)
        path = project / f"2026-01-01T00-00-{n:04d}_s.jsonl"
        code = damages[(n // 7) % len(damages)] if n % 7 == 0 else None
        if code is None:
            path.write_bytes(join(simple_session(turns=1, size=10).lines()))
        else:
            path.write_bytes(DAMAGES[code][0]()[0])
        made[path] = code
    (root / "--proj0--" / "notes.txt").write_text("not a session")
    (root / "--proj1--" / "junk.jsonl").write_bytes(b"not json at all\n")
    made[root / "--proj1--" / "junk.jsonl"] = "missing-header"
    return made


def test_all_streams_one_record_per_file_in_order_and_a_total(tmp_path: Path) -> None:
    made = _many(tmp_path / "sessions", 240)
    result = run("lint", "--all", tmp_path / "sessions", "--json", "--jobs", "2")
    assert result.code == 2  # one file is not a session
    records = result.jsonl
    files = [r for r in records if r["type"] == "file"]
    assert records[-1]["type"] == "summary"
    assert all(r["version"] == 1 for r in records)
    assert [Path(r["data"]["path"]) for r in files] == sorted(made, key=lambda p: (p.parent.name, p.name))
    for record in files:
        code = made[Path(record["data"]["path"])]
        codes = record["data"]["codes"]
        assert (code in codes) if code else codes == {}, record
    summary = records[-1]["data"]
    damaged = sum(1 for c in made.values() if c and c != "missing-header")
    assert summary == {
        "files": len(made),
        "clean": len(made) - damaged - 1,
        "with_findings": damaged,
        "unreadable": 1,
        "counts": summary["counts"],
    }
    assert summary["counts"]["warning"] >= damaged


def test_all_text_one_line_per_file_and_the_exit_code(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    made = _many(root, 30)
    junk = root / "--proj1--" / "junk.jsonl"
    junk.unlink()
    del made[junk]
    result = run("lint", "--all", root)
    lines = result.stdout.splitlines()
    assert len(lines) == len(made) + 1
    assert lines[-1].startswith(f"{len(made)} files: ")
    assert result.code == 1
    assert run("lint", "--all", root, "--level", "error").code == 0


def test_all_defaults_to_pis_sessions_directory(tmp_path: Path, agent: Path) -> None:
    made = _many(agent / "sessions", 8)
    result = run("lint", "--all", "--json", "--jobs", "1")
    files = [r["data"]["path"] for r in result.jsonl if r["type"] == "file"]
    assert sorted(map(Path, files)) == sorted(made)


def test_all_and_in_process_give_the_same_reports(tmp_path: Path) -> None:
    made = _many(tmp_path / "s", 20)
    parallel = run("lint", "--all", tmp_path / "s", "--json", "--jobs", "2").jsonl
    serial = run("lint", "--all", tmp_path / "s", "--json", "--jobs", "1").jsonl
    assert parallel == serial and len(parallel) == len(made) + 1


def test_all_caps_the_findings_kept_per_file_but_counts_them_all(tmp_path: Path) -> None:
    sb = healthy()
    lines = lines_of(sb) + [b"{broken"] * 120
    root = tmp_path / "s"
    root.mkdir()
    (root / "a.jsonl").write_bytes(join(lines))
    record = run("lint", "--all", root, "--json").jsonl[0]["data"]
    assert record["counts"]["warning"] == 120
    assert len(record["findings"]) + record["findings_omitted"] == 120
    assert record["findings_omitted"] > 0


@pytest.mark.parametrize(
    "args",
    [("--all", "--leaf", "abc"), ("--jobs", "2"), ("--all", "--jobs", "0")],
)
def test_flag_clashes_are_usage_errors(tmp_path: Path, args: tuple[str, ...]) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(join(lines_of(healthy())))
    result = run("lint", path, *args)
    assert result.code == 2
    assert result.stderr.startswith("picompact: error: ")


def test_json_document_schema(tmp_path: Path) -> None:
    data, _ = damage_duplicate_id()
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    doc = orjson.loads(run("lint", path, "--json").stdout_bytes)
    assert doc["schema_version"] == 1 and doc["level"] == "warning"
    report = doc["files"][0]
    assert set(report) == {"path", "readable", "entries", "counts", "codes", "findings", "findings_omitted"}
    assert set(report["findings"][0]) == {"code", "severity", "line", "entry_id", "message", "pi"}
    assert doc["total"]["files"] == 1 and doc["total"]["with_findings"] == 1


# ---------------------------------------------------------------------------------------------------------------
# Properties: any damage, no crash, and the loader's diagnostics are always findings


_BASE_LINES = lines_of(simple_session(turns=3, size=20))


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["drop", "cut", "swap", "dup", "junk"]),
            st.integers(0, len(_BASE_LINES) - 1),
            st.integers(0, 200),
        ),
        max_size=6,
    ),
    st.booleans(),
)
def test_any_damage_lints_without_crashing_and_agrees_with_the_loader(
    ops: list[tuple[str, int, int]], final_newline: bool
) -> None:
    lines = list(_BASE_LINES)
    for op, at, n in ops:
        if not lines:
            break
        at %= len(lines)
        if op == "drop":
            del lines[at]
        elif op == "cut":
            lines[at] = lines[at][: n % (len(lines[at]) + 1)]
        elif op == "swap":
            other = n % len(lines)
            lines[at], lines[other] = lines[other], lines[at]
        elif op == "dup":
            lines.insert(at, lines[n % len(lines)])
        else:
            lines.insert(at, bytes([n % 256]) * (n % 7))
    data = join(lines)
    if not final_newline:
        data = data[:-1]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "s.jsonl"
        path.write_bytes(data)
        report = lint_file(path)
        try:
            session = load_session(path)
        except PiCompactError as exc:
            assert not report.readable
            assert report.findings[0].code == (exc.code or "unreadable")
            return
        assert report.readable
        got = Counter((f.code, f.line) for f in report.findings)
        for diag in session.diagnostics:
            assert got[(diag.code, diag.line)] >= 1, diag


def test_json_documents_and_records_have_the_declared_keys(tmp_path: Path) -> None:
    from pi_compact.cli.schema import DOCUMENTS, RECORDS, keys

    data, _ = damage_null()
    root = tmp_path / "s"
    root.mkdir()
    (root / "a.jsonl").write_bytes(data)
    assert list(run("lint", root / "a.jsonl", "--json").json) == keys(DOCUMENTS["lint"])
    records = run("lint", "--all", root, "--json").jsonl
    assert [r["type"] for r in records] == ["file", "summary"]
    for record in records:
        assert list(record) == ["type", "version", "data"]
        assert list(record["data"]) == keys(RECORDS["lint --all"][record["type"]])
