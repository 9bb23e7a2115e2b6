"""What ``lint`` says Pi does (each finding's ``pi``) is what Pi 1.6 does: every finding has it, and the claims
that are easy to get wrong are checked against Pi itself (the oracle, or Pi's own SessionManager)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from pi_compact.ops.lint import lint_file
from pi_compact.ops.lint_report import Finding
from tests.acceptance.test_hostile_corpus import KINDS
from tests.ops.test_lint import DAMAGES
from tests.oracle import NOT_INSTALLED, ask_oracle, oracle_installed, run_pi_script


def oracle(command: str, path: Path) -> dict[str, Any]:
    if not oracle_installed():
        pytest.skip(NOT_INSTALLED)
    return orjson.loads(ask_oracle(command, path).stdout)


def findings(path: Path, code: str) -> list[Finding]:
    found = [f for f in lint_file(path).findings if f.code == code]
    assert found, (code, [f.code for f in lint_file(path).findings])
    return found


@pytest.mark.parametrize("kind", [k for k in KINDS if k.regular], ids=[k.name for k in KINDS if k.regular])
def test_every_finding_on_the_hostile_corpus_says_what_pi_does(tmp_path: Path, kind) -> None:
    path, _ = kind.make(tmp_path)
    for finding in lint_file(path).findings:
        assert finding.pi, (finding.code, finding.message)


@pytest.mark.parametrize("code", sorted(DAMAGES))
def test_every_finding_on_the_lint_damages_says_what_pi_does(tmp_path: Path, code: str) -> None:
    data, _ = DAMAGES[code][0]()
    path = tmp_path / "s.jsonl"
    path.write_bytes(data)
    for finding in lint_file(path).findings:
        assert finding.pi, (finding.code, finding.message)


def session_lines() -> list[bytes]:
    from tests.acceptance.test_hostile_corpus import base_lines

    return base_lines()


def write(tmp_path: Path, lines: list[bytes], end: bytes = b"\n") -> Path:
    path = tmp_path / "session.jsonl"
    path.write_bytes(b"\n".join(lines) + end)
    return path


LIST_SCRIPT = """
import path from "node:path";
import fs from "node:fs";
import { pathToFileURL } from "node:url";
const [pkg, jobsFile] = process.argv.slice(2);
const { SessionManager } = await import(pathToFileURL(path.join(pkg, "dist/core/session-manager.js")).href);
const jobs = JSON.parse(fs.readFileSync(jobsFile, "utf8"));
const listed = await SessionManager.list(jobs.cwd, jobs.dir);
console.log(JSON.stringify(listed.map((s) => path.basename(s.path))));
"""


def test_a_message_entry_without_a_message_is_one_pi_throws_on_and_does_not_list(tmp_path: Path) -> None:
    lines = session_lines()
    parent = orjson.loads(lines[-1])["id"]
    lines.append(orjson.dumps({"type": "message", "id": "c0ffee01", "parentId": parent, "timestamp": "x"}))
    path = write(tmp_path, lines)
    (finding,) = findings(path, "message-missing")
    assert finding.severity == "error" and finding.line == len(lines)
    assert "keeps the message" not in (finding.pi or "") and "throws" in (finding.pi or "")
    assert not [f for f in lint_file(path).findings if f.code in ("unknown-role", "pi-throws")]
    assert "reading 'role'" in str(oracle("analyze", path).get("error"))
    # Pi's session list leaves the session out; a sound copy beside it is listed
    listing = tmp_path / "listing"
    listing.mkdir()
    (listing / "broken.jsonl").write_bytes(path.read_bytes())
    (listing / "sound.jsonl").write_bytes(b"\n".join(session_lines()) + b"\n")
    cwd = orjson.loads(lines[0])["cwd"]
    listed = run_pi_script(
        tmp_path, "list.mjs", LIST_SCRIPT, "dist/core/session-manager.js", {"cwd": cwd, "dir": str(listing)}, "list"
    )
    assert listed == ["sound.jsonl"]


def test_a_usage_whose_total_is_negative_is_passed_over_as_pi_does(tmp_path: Path) -> None:
    lines = session_lines()
    last = max(i for i, raw in enumerate(lines) if b'"usage"' in raw)
    value = orjson.loads(lines[last])
    value["message"]["usage"] = {"input": -900000, "output": 10, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0}
    lines[last] = orjson.dumps(value)
    path = write(tmp_path, lines)
    (finding,) = findings(path, "negative-usage")
    assert "passed over" in (finding.pi or "") and "as is to" not in (finding.pi or "")
    pi = oracle("context", path)["estimateContextTokens"]
    assert pi["usageTokens"] > 0  # an earlier reply's usage, not this one's


def test_a_non_object_line_is_an_entry_for_pi_not_a_skipped_line(tmp_path: Path) -> None:
    lines = session_lines()
    lines.insert(4, b"[1,2]")
    path = write(tmp_path, lines)
    (finding,) = findings(path, "non-object-line")
    assert "skip" not in (finding.pi or "") and "skip" not in finding.message
    pi = oracle("analyze", path)
    assert pi["entryCount"] == len(lines) - 1  # every line but the header, the array included
    assert pi["file"]["falsyLines"] == [] and pi["file"]["malformedLines"] == []


@pytest.mark.parametrize("torn", [False, True])
def test_a_missing_final_newline_is_added_when_pi_opens_the_file(tmp_path: Path, torn: bool) -> None:
    lines = session_lines()
    if torn:
        lines.append(b'{"type":"message","id":"t0rn0001","parentId":"a0')
    path = write(tmp_path, lines, end=b"")
    code = "truncated-last-line" if torn else "no-final-newline"
    (finding,) = findings(path, code)
    assert "when it opens the file" in (finding.pi or "")
    assert oracle("analyze", path)["load"]["loaderAppendedFinalNewline"] is True


def test_an_unknown_role_stays_in_the_context_but_is_not_sent(tmp_path: Path) -> None:
    lines = session_lines()
    parent = orjson.loads(lines[-1])["id"]
    message = {"role": "wizard", "content": "spell"}
    lines.append(
        orjson.dumps({"type": "message", "id": "w1", "parentId": parent, "timestamp": "x", "message": message})
    )
    path = write(tmp_path, lines)
    (finding,) = findings(path, "unknown-role")
    assert "leaves it out of what it sends" in (finding.pi or "")
    pi = oracle("context", path)
    assert "wizard" in pi["roles"] and "wizard" not in pi["llmRoles"]


def test_entries_under_a_missing_parent_are_on_a_branch_that_starts_there(tmp_path: Path) -> None:
    lines = session_lines()
    for i in range(1, len(lines)):
        value = orjson.loads(lines[i])
        value["parentId"] = "nowhere0"
        lines[i] = orjson.dumps(value)
    path = write(tmp_path, lines)
    (finding,) = findings(path, "off-branch")
    assert "in no branch's context" not in (finding.pi or "") and "starts their branch" in (finding.pi or "")
    assert oracle("analyze", path)["branchLength"] == 1  # Pi's branch is the leaf alone, whose parent is missing


OPEN_SCRIPT = """
import path from "node:path";
import fs from "node:fs";
import { pathToFileURL } from "node:url";
const [pkg, jobsFile] = process.argv.slice(2);
const { SessionManager } = await import(pathToFileURL(path.join(pkg, "dist/core/session-manager.js")).href);
const jobs = JSON.parse(fs.readFileSync(jobsFile, "utf8"));
const out = {};
for (const file of jobs.files) {
  SessionManager.open(file, jobs.dir);
  out[path.basename(file)] = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : null;
}
console.log(JSON.stringify(out));
"""


def test_an_empty_file_gets_a_header_and_a_missing_one_is_written_later(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"")
    missing = tmp_path / "missing.jsonl"
    assert "writing a session header" in (lint_file(empty).findings[0].pi or "")
    assert "first message" in (lint_file(missing).findings[0].pi or "")
    opened = run_pi_script(
        tmp_path,
        "open.mjs",
        OPEN_SCRIPT,
        "dist/core/session-manager.js",
        {"files": [str(empty), str(missing)], "dir": str(tmp_path)},
        "SessionManager.open",
    )
    assert orjson.loads(opened["empty.jsonl"].split("\n")[0])["type"] == "session"
    assert opened["missing.jsonl"] is None
