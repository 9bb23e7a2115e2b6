"""A pruned session in Pi 1.6 itself: Pi's loader and projection (the oracle) and the real Pi CLI resuming it.

What is checked here is what a user relies on: Pi loads every file ``picompact prune`` wrote, the model is sent the
stubs in place of the outputs (and everything else as before), Pi's own context estimate after pruning is the one
``check`` reports, and Pi's threshold decision sees what pruning freed: a session over the threshold, pruned below
it, is resumed without a compaction (Pi counts a context edit appended after the last reply by estimating the
whole projected context, the recorded usage being stale). Skips cleanly without Pi.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.helpers.cli import run
from tests.helpers.real_pi import QUIET, local_model, logged_requests, pi_env
from tests.oracle import NODE22, NOT_INSTALLED, PACKAGE, ask_oracle, oracle_installed, pi_installed

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "pi"
MARK = "[picompact pruned this tool output"
FIXED = {"PICOMPACT_FIXED_TIME": "2026-01-02T03:04:05.678Z", "PICOMPACT_ID_SEED": "prune-pi"}

pytestmark = pytest.mark.skipif(not pi_installed(), reason=NOT_INSTALLED)


def _pruned(tmp_path: Path, fixture: str, *args: str) -> tuple[Path, dict[str, Any]]:
    path = tmp_path / fixture
    shutil.copyfile(FIXTURES / fixture, path)
    result = run("prune", path, "--json", *args, env=FIXED)
    assert result.code == 0, result.stderr
    return path, result.json


@pytest.mark.skipif(not oracle_installed(), reason=NOT_INSTALLED)
@pytest.mark.parametrize(
    "fixture",
    ["gen-medium-101.jsonl", "gen-context-edits-101.jsonl", "pi-large-session.jsonl", "gen-multi-compaction-101.jsonl"],
)
def test_pi_loads_the_pruned_file_and_its_estimate_is_checks(tmp_path: Path, fixture: str) -> None:
    path, pruned = _pruned(tmp_path, fixture)
    assert pruned["pruned"], "the fixture has old tool output to prune"
    context = ask_oracle("context", path, "--full").json
    assert context["load"]["headerValid"] and not context["load"]["piRewroteFile"]
    analysis = ask_oracle("analyze", path, "--brief").json
    check = run("check", path, "--json").json
    assert analysis["contextEstimate"]["tokens"] == check["context_tokens"] == pruned["tokens_after"]
    # Pi's projection: each pruned result is the stub, as one text block, and nothing else changed.
    messages = context["messages"]
    stubs = {e["targetId"]: e["replacement"]["content"][0]["text"] for e in pruned["entries"]}
    sent = [m for m in messages if m.get("role") == "toolResult" and _text(m).startswith(MARK)]
    assert sorted(_text(m) for m in sent) == sorted(stubs.values())
    assert context["count"] == ask_oracle("context", FIXTURES / fixture).json["count"]


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or [] if isinstance(b, dict) and b.get("type") == "text")


def _resume(
    root: Path,
    session: Path,
    window: int,
    prompt: str = "continue",
    extension: Path | None = None,
    environ: dict[str, str] | None = None,
) -> dict[str, Any]:
    """The real Pi CLI resumes a copy of ``session`` in print mode, compaction on, against the local model whose
    window is ``window`` (with ``extension`` loaded, if given): the requests it sent and the entries it appended."""
    for name in ("agent", "home", "run", "sessions", "work"):
        (root / name).mkdir(parents=True, exist_ok=True)
    copy = root / "sessions" / session.name
    lines = session.read_bytes().split(b"\n")
    header = orjson.loads(lines[0])
    header["cwd"] = str(root / "work")
    copy.write_bytes(b"\n".join([orjson.dumps(header), *lines[1:]]))
    before = copy.read_bytes()
    with local_model(root / "run") as port:
        model = {
            "id": "fake-model",
            "name": "Fake Model",
            "reasoning": False,
            "input": ["text"],
            "contextWindow": window,
            "maxTokens": 4096,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        }
        provider = {
            "baseUrl": f"http://127.0.0.1:{port}/v1",
            "api": "openai-completions",
            "apiKey": "local-test-key",
            "models": [model],
        }
        (root / "agent" / "models.json").write_text(json.dumps({"providers": {"fake": provider}}))
        settings = {"compaction": {"enabled": True, "reserveTokens": 16384, "keepRecentTokens": 20000}}
        (root / "agent" / "settings.json").write_text(json.dumps(settings))
        argv = [
            str(NODE22),
            str(PACKAGE / "dist" / "bundle" / "cli.js"),
            "-p",
            "--session",
            str(copy),
            "--session-dir",
            str(root / "sessions"),
            "--no-tools",
            *(["-e", str(extension)] if extension is not None else ["--no-extensions"]),
            "--provider",
            "fake",
            "--model",
            "fake-model",
            "--thinking",
            "off",
            *QUIET,
            "--offline",
            "--",
            prompt,
        ]
        proc = subprocess.run(
            argv,
            cwd=root / "work",
            env={**pi_env(root), **(environ or {})},
            capture_output=True,
            timeout=120,
            check=False,
        )
    after = copy.read_bytes()
    assert after.startswith(before), "Pi rewrote the file instead of appending"
    appended = [orjson.loads(line) for line in after[len(before) :].split(b"\n") if line.strip()]
    return {"code": proc.returncode, "stderr": proc.stderr, "requests": logged_requests(root / "run"), "new": appended}


def _is_summary_request(request: dict[str, Any]) -> bool:
    body = request.get("body") or request
    text = json.dumps(body.get("messages") or [])
    return "summar" in text.lower() and "<conversation>" in text


def test_pi_resumes_a_pruned_session_sends_the_stubs_and_does_not_compact(tmp_path: Path) -> None:
    # gen-medium's last reply recorded ~170k tokens: over a 150k window's threshold (150,000 - 16,384), so Pi
    # compacts before it sends the next prompt; pruned, Pi's own estimate of the context is about half that.
    fixture = FIXTURES / "gen-medium-101.jsonl"
    plain = _resume(tmp_path / "plain", fixture, 150_000)
    assert plain["code"] == 0, plain["stderr"][-2000:]
    assert [e["type"] for e in plain["new"]].count("compaction") == 1

    path, pruned = _pruned(tmp_path, "gen-medium-101.jsonl")
    assert pruned["tokens_before"] > 150_000 - 16_384 > pruned["tokens_after"]
    resumed = _resume(tmp_path / "pruned", path, 150_000)
    assert resumed["code"] == 0, resumed["stderr"][-2000:]
    assert "compaction" not in [e["type"] for e in resumed["new"]]
    chat = [r for r in resumed["requests"] if not _is_summary_request(r)]
    assert len(chat) == 1
    messages = (chat[0].get("body") or chat[0])["messages"]
    sent = "\n".join(_wire_text(m) for m in messages if m.get("role") == "tool")
    for entry in pruned["entries"]:
        assert entry["replacement"]["content"][0]["text"] in sent
    tool_messages = [m for m in messages if m.get("role") == "tool"]
    assert sum(_wire_text(m).startswith(MARK) for m in tool_messages) == len(pruned["entries"])
    if oracle_installed():  # every other tool output is sent as it is
        context = ask_oracle("context", path, "--full").json
        results = [_text(m) for m in context["messages"] if m.get("role") == "toolResult"]
        assert [_wire_text(m) for m in tool_messages] == results


def _wire_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content or [] if isinstance(b, dict))


# A minimal extension that proposes the drafts of `picompact prune --dry-run --json` at one boundary, once.
DRAFTING_EXTENSION = """
import { readFileSync } from "node:fs";

export default function (pi: any) {
	const hook = process.env.PRUNE_HOOK ?? "turn_end";
	const planned = JSON.parse(readFileSync(process.env.PRUNE_DRAFTS ?? "", "utf8"));
	const drafts = planned.entries.map((e: any) => ({
		type: e.type,
		targetId: e.targetId,
		replacement: e.replacement,
	}));
	let done = false;
	pi.on(hook, async (event: any) => {
		if (done) return;
		done = true;
		return { entries: [...event.entries, ...drafts] };
	});
}
"""


@pytest.mark.parametrize(("hook", "compacts"), [("turn_end", False), ("agent_before_settle", True)])
def test_pis_post_run_threshold_check_sees_a_prune_drafted_at_turn_end_only(
    tmp_path: Path, hook: str, compacts: bool
) -> None:
    # The session's last reply recorded 170,427 tokens, under this window's threshold (196,384 - 16,384): Pi does
    # not compact before the prompt. The reply to it records ~191,800: over. Drafted at the run's last turn_end,
    # the edits are in the file when Pi checks the threshold after the run, and Pi, counting the projected
    # context by estimate (the reply's usage predates the edits), does not compact. Drafted at
    # agent_before_settle, they come after that check: Pi compacts first.
    fixture = FIXTURES / "gen-medium-101.jsonl"
    drafts = tmp_path / "drafts.json"
    planned = run("prune", fixture, "--dry-run", "--json")
    assert planned.code == 0, planned.stderr
    drafts.write_bytes(planned.stdout_bytes)
    extension = tmp_path / "drafting.ts"
    extension.write_text(DRAFTING_EXTENSION)
    environ = {"PRUNE_HOOK": hook, "PRUNE_DRAFTS": str(drafts)}
    resumed = _resume(tmp_path / "pi", fixture, 196_384, extension=extension, environ=environ)
    assert resumed["code"] == 0, resumed["stderr"][-2000:]
    types = [e["type"] for e in resumed["new"]]
    assert types.count("context_edit") == len(planned.json["entries"])
    assert types.count("compaction") == (1 if compacts else 0)
    # Pi appended the drafts exactly as picompact writes them: same target, same replacement.
    written = [(e["targetId"], e["replacement"]) for e in resumed["new"] if e["type"] == "context_edit"]
    assert written == [(e["targetId"], e["replacement"]) for e in planned.json["entries"]]
