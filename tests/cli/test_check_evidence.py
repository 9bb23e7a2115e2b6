"""``check --json`` reports the evidence-annotated file lists a verbatim checkpoint would carry."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.cli import run
from tests.helpers.sessions import SessionBuilder


def test_check_json_reports_annotated_file_lists(tmp_path: Path) -> None:
    sb = SessionBuilder(cwd="/repo")
    sb.user("edit the config " + "x" * 4000)
    sb.assistant(
        "editing",
        tool_calls=[("c1", "edit", {"path": "/repo/config.toml", "edits": [{"oldText": "a", "newText": "b"}]})],
    )
    sb.tool_result("c1", "edit", "ok")
    sb.assistant("done " + "y" * 4000, usage=3000)
    sb.user("now read the readme")
    sb.assistant("reading", tool_calls=[("c2", "read", {"path": "/repo/README.md"})])
    sb.tool_result("c2", "read", "# Title\nbody\n")
    sb.assistant("read it", usage=5000)
    path = sb.write(tmp_path / "s.jsonl")
    result = run(
        "check", path, "--context-window", "4000", "--reserve-tokens", "100", "--keep-recent-tokens", "50", "--json"
    )
    assert result.code == 1, result.stderr
    data = result.json
    assert data["modified_files"] == ["/repo/config.toml"]
    evidence = data["file_evidence"]
    labels = {item["displayPath"]: item["label"] for item in evidence["modifiedFiles"] + evidence["readFiles"]}
    assert labels["config.toml"] == "no read-tool output in tail"
    assert "unless annotated, no retained read-tool output identified" in evidence["header"]
    files = run(
        "check", path, "--context-window", "4000", "--reserve-tokens", "100", "--keep-recent-tokens", "50", "--files"
    )
    assert "config.toml  (no read-tool output in tail)" in files.stdout


def test_compact_dry_run_json_reports_the_same_annotations(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes((Path(__file__).parents[1] / "fixtures" / "pi" / "gen-small-101.jsonl").read_bytes())
    flags = ("--context-window", "32000")
    check = run("check", path, *flags, "--json").json["file_evidence"]
    compact = run("compact", path, "--mode", "verbatim", "--dry-run", "--json", *flags)
    assert compact.code == 0, compact.stderr
    assert compact.json["file_evidence"] == check
    assert any(item["label"] for item in check["modifiedFiles"])


def test_check_files_lists_one_file_once_under_two_spellings(tmp_path: Path) -> None:
    sb = SessionBuilder(cwd="/repo")
    calls = [("read", "/repo/src/b.py"), ("read", "src/b.py"), ("read", "src/a.py"), ("edit", "/repo/src/z.py")]
    calls += [("write", "src/z.py"), ("read", "/repo/src/a.py")]
    for i, (tool, path) in enumerate(calls):
        sb.user(f"turn {i} " + "x" * 3000)
        sb.assistant("ok", tool_calls=[(f"c{i}", tool, {"path": path, "content": "y", "oldText": "a", "newText": "b"})])
        sb.tool_result(f"c{i}", tool, "contents " + "z" * 3000)
        sb.assistant("done", usage=1000 * (i + 1))
    for i in range(3):
        sb.user("more " + "q" * 4000)
        sb.assistant("fine " + "r" * 4000, usage=9000 + i)
    path = sb.write(tmp_path / "files.jsonl")
    flags = ("--keep-recent-tokens", "2000", "--context-window", "100000")
    text = run("check", path, *flags, "--files").stdout.splitlines()
    listed = [line.split()[:2] for line in text if line.startswith("  ")]
    assert listed == [["read", "src/a.py"], ["read", "src/b.py"], ["modified", "src/z.py"]]
    assert any(line.split() == ["files", "2", "read,", "1", "modified"] for line in text)
    evidence = run("check", path, *flags, "--json").json["file_evidence"]
    paths = [item["paths"] for item in evidence["readFiles"]]
    assert paths == [["/repo/src/a.py", "src/a.py"], ["/repo/src/b.py", "src/b.py"]]
