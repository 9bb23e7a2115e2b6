"""V15: the read contract as Pi 1.6's own read tool produces it. Real files go through Pi's read tool (node), and
the recorded output must be judged complete exactly when it shows the whole file. Skips without the Pi oracle."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pi_compact.checkpoint.readtool import ReadArgs, parse_read_result
from tests.oracle import run_pi_script

SCRIPT = """
const [pkg, jobsFile] = process.argv.slice(2);
const fs = await import("node:fs");
const { createReadToolDefinition } = await import(pkg + "/dist/core/tools/read.js");
const jobs = JSON.parse(fs.readFileSync(jobsFile, "utf-8"));
const tool = createReadToolDefinition(process.cwd());
const out = [];
for (const args of jobs) {
  try {
    const r = await tool.execute("call", args);
    out.push({ content: r.content, details: r.details ?? null, error: null });
  } catch (e) {
    out.push({ content: null, details: null, error: String(e.message) });
  }
}
process.stdout.write(JSON.stringify(out));
"""

FILES = {
    "three.txt": "a\nb\nc\n",
    "no-eol.txt": "a\nb\nc",
    "empty.txt": "",
    "many-lines.txt": "".join(f"line {i}\n" for i in range(1, 2501)),
    "wide.txt": "".join(f"{i:05d} " + "w" * 60 + "\n" for i in range(1, 1201)),
    "long-first-line.txt": "x" * 60_000 + "\nsecond\n",
}
ARGS: list[dict[str, Any]] = [
    {},
    {"offset": 1},
    {"offset": 0},
    {"offset": 1, "limit": 1},
    {"offset": 1, "limit": 2},
    {"offset": 1, "limit": 3},
    {"offset": 1, "limit": 4},
    {"offset": 1, "limit": 5000},
    {"limit": 0},
    {"offset": 2},
    {"offset": 2, "limit": 1},
    {"offset": 2001},
    {"offset": 1, "limit": 2000},
    {"offset": 4000},
]


def run_pi_reads(tmp_path: Path, jobs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return run_pi_script(tmp_path, "read.mjs", SCRIPT, "dist/core/tools/read.js", jobs, "Pi's read tool")


def notice_kind(notice: str) -> str:
    if notice.startswith("[Showing lines"):
        return "byte cap" if "KB limit)" in notice else "lines cap"
    if notice.startswith("[Line "):
        return "long line"
    return "more lines" if " more lines in file" in notice else notice


def test_v15_completeness_agrees_with_pis_read_tool(tmp_path: Path) -> None:
    for name, text in FILES.items():
        (tmp_path / name).write_text(text)
    jobs = [{"path": name, **args} for name in FILES for args in ARGS]
    results = run_pi_reads(tmp_path, jobs)
    seen = {"full": 0, "partial": 0, "error": 0}
    notices = set()
    for job, result in zip(jobs, results, strict=True):
        args = ReadArgs(job["path"], job.get("offset"), job.get("limit"))
        if result["error"] is not None:
            message = {"content": [{"type": "text", "text": result["error"]}], "isError": True}
            assert parse_read_result(args, message).status == "error", job
            seen["error"] += 1
            continue
        message = {"content": result["content"], "details": result["details"], "isError": False}
        judged = parse_read_result(args, message)
        output = result["content"][0]["text"]
        whole = output == FILES[job["path"]]
        assert judged.ok, job
        assert judged.completeness == ("full" if whole else "partial"), (job, output[-120:])
        if judged.notice is not None:
            notices.add(notice_kind(judged.notice))
            assert judged.body in FILES[job["path"]] or judged.body == "", job
        seen[judged.completeness] += 1
    assert seen["full"] and seen["partial"] and seen["error"]
    assert notices == {"lines cap", "byte cap", "more lines", "long line"}


def test_v15_image_read_through_pi_is_not_text(tmp_path: Path) -> None:
    png = bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
    )
    (tmp_path / "dot.png").write_bytes(png)
    [result] = run_pi_reads(tmp_path, [{"path": "dot.png"}])
    assert result["error"] is None
    message = {"content": result["content"], "details": result["details"], "isError": False}
    assert parse_read_result(ReadArgs("dot.png"), message).status == "image"
