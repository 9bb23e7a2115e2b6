"""A history larger than the summarising model's window is summarised in chunks, each folded into the summary so
far with the update prompt; one compaction entry, whose usage sums every call, that Pi loads and updates later."""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request as WRequest
from werkzeug import Response as WResponse

from pi_compact.checkpoint.summary import UPDATE_INSTRUCTIONS, request_input_tokens
from pi_compact.checkpoint.summary.serialize import serialize_messages
from pi_compact.ops.check import CheckOptions, check_session
from pi_compact.session import load_session
from tests.checkpoint.summary.conftest import (
    ANTHROPIC_KEY,
    GOOD_PREFIX,
    GOOD_SUMMARY,
    OPENAI_KEY,
    OPENAI_PATH,
    openai_reply,
)
from tests.helpers.cli import run
from tests.helpers.sessions import SessionBuilder
from tests.oracle import NOT_INSTALLED, ask_oracle, oracle_installed

ENV = {
    "PICOMPACT_FIXED_TIME": "2026-05-06T07:08:09.010Z",
    "PICOMPACT_ID_SEED": "chunks",
    "OPENAI_API_KEY": OPENAI_KEY,
    "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
}
WINDOW = 40_000  # gpt-4.1-mini judged (and so summarised) with --context-window 40000
KEEP = 2_000
needs_oracle = pytest.mark.skipif(not oracle_installed(), reason=NOT_INSTALLED)


def big_session(path: Path, turns: int = 60) -> Path:
    sb = SessionBuilder()
    sb.add({"type": "model_change", "provider": "openai", "modelId": "gpt-4.1-mini"})
    for i in range(turns):
        sb.user(
            f"Turn {i}: the requirement R{i} is " + f"detail{i} " * 300,
        )
        sb.assistant(
            f"Turn {i} done: R{i} implemented in src/m{i}.py. " + "note " * 200,
            usage=500 * (i + 1),
            model=("openai", "gpt-4.1-mini"),
        )
    return sb.write(path)


def _args(server: HTTPServer, path: Path, *extra: str) -> list[str]:
    return [
        "compact",
        str(path),
        "--mode",
        "summary",
        "--base-url",
        server.url_for("/v1"),
        "--context-window",
        str(WINDOW),
        "--keep-recent-tokens",
        str(KEEP),
        *extra,
    ]


class Numbered:
    """Answers every request with a valid summary that names its call number, and records the user messages."""

    def __init__(self, server: HTTPServer) -> None:
        self.users: list[str] = []
        self.bodies: list[dict[str, Any]] = []
        server.expect_request(OPENAI_PATH, method="POST").respond_with_handler(self)

    def __call__(self, request: WRequest) -> WResponse:
        body = json.loads(request.get_data())
        self.bodies.append(body)
        self.users.append(body["messages"][-1]["content"])
        n = len(self.users)
        if body["messages"][-1]["content"].startswith("# Conversation"):
            return openai_reply(GOOD_PREFIX)
        return openai_reply(GOOD_SUMMARY.replace("## Critical Context\n", f"## Critical Context\n- summary {n}\n"))


def _conversation(user: str) -> str:
    return re.search(r"<conversation>\n(.*)\n</conversation>", user, re.DOTALL).group(1)  # type: ignore[union-attr]


def test_dry_run_shows_the_plan(server: HTTPServer, tmp_path: Path) -> None:
    path = big_session(tmp_path / "s.jsonl")
    result = run(*_args(server, path, "--dry-run", "--json"), env=ENV)
    assert result.code == 0, result.stderr
    data = result.json
    assert server.log == []
    count = data["chunks"]["count"]
    assert count >= 3
    history = [r for r in data["requests"] if r["kind"] == "history"]
    assert [r["chunk"] for r in history] == list(range(1, count + 1))
    assert data["cost"]["input_tokens"] > sum(r["input_tokens_pi"] for r in data["requests"])  # carried summaries
    assert data["cost"]["max_output_tokens"] == sum(r["max_tokens"] for r in data["requests"])
    text = run(*_args(server, path, "--dry-run"), env=ENV)
    assert f"{count} chunks, cut at message boundaries".encode() in text.stderr_bytes
    total = len(data["requests"])
    assert f"request 2 of {total} (history summary, chunk 2 of {count}".encode() in text.stdout_bytes


def test_chunks_are_summarised_in_turn_and_written_as_one_entry(server: HTTPServer, tmp_path: Path) -> None:
    model = Numbered(server)
    path = big_session(tmp_path / "s.jsonl")
    plan = run(*_args(server, path, "--dry-run", "--json"), env=ENV).json
    count = plan["chunks"]["count"]
    sent = len(plan["requests"])  # the chunks, and the turn prefix when the cut splits a turn
    check = check_session(path, CheckOptions(context_window=WINDOW, keep_recent_tokens=KEEP))
    whole = serialize_messages(check.plan.messages_to_summarize)
    before = path.read_bytes()

    result = run(*_args(server, path), env=ENV)
    assert result.code == 0, result.stderr
    assert len(model.users) == sent
    history = [u for u in model.users if u.startswith("<conversation>")]
    assert len(history) == count
    # Chunk 1 with the initial prompt; each next one with the update prompt and the reply to the one before.
    assert "<previous-summary>" not in history[0]
    for previous, user in itertools.pairwise(history):
        reply = model.users.index(previous) + 1
        assert "<previous-summary>\n## Goal\n" in user
        assert f"- summary {reply}\n" in user and UPDATE_INSTRUCTIONS in user
    # Cut at message boundaries: the chunks joined give back the whole serialised history, nothing lost.
    assert "\n\n".join(_conversation(u) for u in history) == whole
    # Every request fits the window with Pi's margin and its output limit.
    for body in model.bodies:
        tokens = request_input_tokens(body["messages"][0]["content"], body["messages"][-1]["content"])
        assert tokens + max(4096, math.ceil(tokens * 0.15)) + body["max_completion_tokens"] <= WINDOW
    data = path.read_bytes()
    assert data.startswith(before)
    [entry] = [orjson.loads(line) for line in data[len(before) :].split(b"\n") if line.strip()]
    assert entry["type"] == "compaction"
    last = model.users.index(history[-1]) + 1
    assert f"- summary {last}\n" in entry["summary"]  # the last chunk's reply is the summary
    assert entry["usage"]["input"] == 1000 * sent and entry["usage"]["output"] == 300 * sent
    assert entry["usage"]["cacheRead"] == 200 * sent
    assert f"in {sent} requests".encode() in result.stderr_bytes
    assert f"summarised in {count} chunks".encode() in result.stderr_bytes


@needs_oracle
def test_pi_loads_the_result_and_updates_it_later(server: HTTPServer, tmp_path: Path) -> None:
    Numbered(server)
    path = big_session(tmp_path / "s.jsonl")
    assert run(*_args(server, path), env=ENV).code == 0
    summary = [json.loads(line) for line in path.read_bytes().split(b"\n") if line.strip()][-1]["summary"]
    context = ask_oracle("context", path)
    assert context.returncode == 0, context.stdout
    loaded = json.loads(context.stdout)
    assert loaded["summaryFirst"] is True and loaded["messages"][0]["summary"] == summary
    # More work, then Pi's next compaction would update this summary: its previous summary is ours.
    session = load_session(path)
    parent = session.entries[-1].id
    with path.open("ab") as f:
        for i in range(6):
            for role, text in (("user", f"Later {i} " + "z" * 2000), ("assistant", f"Later done {i}")):
                entry_id = f"e{i}{role[0]}000000"[:8]
                message: dict[str, Any] = {
                    "role": role,
                    "content": text if role == "user" else [{"type": "text", "text": text}],
                    "timestamp": 5,
                }
                if role == "assistant":
                    message.update(
                        {
                            "provider": "openai",
                            "model": "gpt-4.1-mini",
                            "api": "openai-completions",
                            "stopReason": "stop",
                        }
                    )
                f.write(
                    orjson.dumps(
                        {
                            "type": "message",
                            "id": entry_id,
                            "parentId": parent,
                            "timestamp": "2026-06-01T00:00:00.000Z",
                            "message": message,
                        }
                    )
                    + b"\n"
                )
                parent = entry_id
    analysis = ask_oracle("analyze", path, "--keep", "2000")
    assert analysis.returncode == 0, analysis.stdout
    previous = json.loads(analysis.stdout)["preparation"]["previousSummary"]
    assert previous["present"] is True
    assert previous["sha256"] == hashlib.sha256(summary.encode()).hexdigest()
