"""V16: the instruction files found for a cwd are exactly the ones Pi 1.6 loads (its own loadProjectContextFiles,
run with node on the same directory tree). Skips without the Pi oracle."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pi_compact.checkpoint.context_files import context_files_for
from tests.oracle import run_pi_script

SCRIPT = """
const [pkg, jobsFile] = process.argv.slice(2);
const fs = await import("node:fs");
const { loadProjectContextFiles } = await import(pkg + "/dist/core/resource-loader.js");
const jobs = JSON.parse(fs.readFileSync(jobsFile, "utf-8"));
process.stdout.write(JSON.stringify(jobs.map((job) => loadProjectContextFiles(job))));
"""


def pi_context_files(tmp_path: Path, jobs: list[dict[str, str]]) -> list[list[dict[str, Any]]]:
    return run_pi_script(
        tmp_path, "context.mjs", SCRIPT, "dist/core/resource-loader.js", jobs, "Pi's context-file discovery"
    )


def test_v16_context_files_agree_with_pi(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    files = {
        "agent/AGENTS.md": "global",
        "agent2/CLAUDE.MD": "global, upper-case name",
        "repo/CLAUDE.md": "\ufeffrepo claude, with a BOM",
        "repo/app/AGENTS.override.md": "override",
        "repo/app/AGENTS.md": "loses to the override",
        "repo/app/sub/CLAUDE.md": "sub",
        "main/AGENTS.md": "main checkout, shadowed by the worktree's own",
        "main/.git/HEAD": "ref: refs/heads/main\n",
        "main/.git/worktrees/wt/HEAD": "ref: refs/heads/wt\n",
        "main/.git/worktrees/wt/commondir": "../..\n",
        "main/wt/AGENTS.md": "worktree",
        "plain/AGENTS.md": "plain repo",
        "plain/.git/HEAD": "ref: refs/heads/main\n",
        "plain/inner/AGENTS.md": "inner",
    }
    for name, text in files.items():
        (tree / name).parent.mkdir(parents=True, exist_ok=True)
        (tree / name).write_text(text)
    (tree / "repo/app/sub/AGENTS.md").mkdir()  # a directory with a candidate name is skipped
    (tree / "main/wt/.git").write_text(f"gitdir: {tree / 'main/.git/worktrees/wt'}\n")
    (tree / "main/wt/src").mkdir()
    jobs = [
        {"cwd": str(tree / "repo/app/sub"), "agentDir": str(tree / "agent")},
        {"cwd": str(tree / "repo"), "agentDir": str(tree / "agent2")},
        {"cwd": str(tree / "main/wt/src"), "agentDir": str(tree / "no-agent-dir")},
        {"cwd": str(tree / "plain/inner"), "agentDir": str(tree / "agent")},
        {"cwd": str(tree / "missing/dir"), "agentDir": str(tree / "agent")},
    ]
    expected = pi_context_files(tmp_path, jobs)
    for job, pi_files in zip(jobs, expected, strict=True):
        ours = context_files_for(job["cwd"], Path(job["agentDir"]), [])
        assert [(f.path, f.content) for f in ours] == [(f["path"], f["content"]) for f in pi_files], job
    assert any(len(found) >= 3 for found in expected)  # the tree really exercised discovery
