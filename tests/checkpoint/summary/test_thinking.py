"""The summary request carries the session's thinking level, as Pi sends its own compaction requests."""

from __future__ import annotations

import json
import os
from pathlib import Path

from pytest_httpserver import HTTPServer

from tests.checkpoint.summary.conftest import ANTHROPIC_KEY, GOOD_SUMMARY, OPENAI_KEY, anthropic_reply, bodies
from tests.helpers.cli import run
from tests.helpers.sessions import SessionBuilder

ENV = {
    "PICOMPACT_FIXED_TIME": "2026-05-06T07:08:09.010Z",
    "PICOMPACT_ID_SEED": "thinking",
    "OPENAI_API_KEY": OPENAI_KEY,
    "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
}
MODEL = ("anthropic", "claude-sonnet-4-5")


def _session(path: Path, *, level: str | None = None) -> Path:
    sb = SessionBuilder()
    sb.add({"type": "model_change", "provider": MODEL[0], "modelId": MODEL[1]})
    if level is not None:
        sb.add({"type": "thinking_level_change", "thinkingLevel": level})
    for i in range(6):
        sb.user(f"Turn {i}: look at src/mod{i}.py " + "x" * 400)
        sb.assistant(f"Done {i} " + "y" * 400, usage=1000 * (i + 1))
    return sb.write(path)


def _dry(path: Path, *extra: str) -> dict:
    result = run(
        "compact", path, "--mode", "summary", "--dry-run", "--json", "--keep-recent-tokens", "400", *extra, env=ENV
    )
    assert result.code == 0, result.stderr
    return result.json


def test_the_session_level_applies(tmp_path: Path) -> None:
    data = _dry(_session(tmp_path / "s.jsonl", level="high"))
    assert data["thinking"] == {"requested": "high", "source": "session", "sent": "high"}
    [request] = data["requests"]
    assert request["thinking"] == "high" and request["thinking_budget_tokens"] == 16384


def test_without_a_session_level_pi_default_medium_applies(tmp_path: Path) -> None:
    data = _dry(_session(tmp_path / "s.jsonl"))
    assert data["thinking"] == {"requested": "medium", "source": "Pi's default", "sent": "medium"}
    assert data["requests"][0]["thinking_budget_tokens"] == 8192


def test_settings_default_thinking_level_applies(tmp_path: Path) -> None:
    agent = Path(os.environ["PI_CODING_AGENT_DIR"])
    agent.mkdir(parents=True, exist_ok=True)
    (agent / "settings.json").write_text(json.dumps({"defaultThinkingLevel": "low"}))
    data = _dry(_session(tmp_path / "s.jsonl"))
    assert data["thinking"]["source"] == "settings" and data["thinking"]["sent"] == "low"
    assert data["requests"][0]["thinking_budget_tokens"] == 2048


def test_a_level_the_model_lacks_is_clamped(tmp_path: Path) -> None:
    data = _dry(_session(tmp_path / "s.jsonl", level="xhigh"))
    assert data["thinking"] == {"requested": "xhigh", "source": "session", "sent": "high"}


def test_thinking_off_flag(tmp_path: Path) -> None:
    data = _dry(_session(tmp_path / "s.jsonl", level="high"), "--thinking", "off")
    assert data["thinking"] == {"requested": "off", "source": "--thinking", "sent": "off"}
    assert data["requests"][0]["thinking_budget_tokens"] is None


def test_a_bad_level_is_a_usage_error(tmp_path: Path) -> None:
    result = run("compact", _session(tmp_path / "s.jsonl"), "--mode", "summary", "--thinking", "huge", env=ENV)
    assert result.code == 2
    assert b"--thinking must be one of off, minimal" in result.stderr_bytes


def test_thinking_flag_belongs_to_summary_mode(tmp_path: Path) -> None:
    result = run("compact", _session(tmp_path / "s.jsonl"), "--thinking", "off", env=ENV)
    assert result.code == 2 and b"--thinking applies only to --mode summary" in result.stderr_bytes


def test_the_request_sent_carries_the_thinking_budget(server: HTTPServer, tmp_path: Path) -> None:
    server.expect_request("/v1/messages").respond_with_response(anthropic_reply(GOOD_SUMMARY))
    path = _session(tmp_path / "s.jsonl", level="low")
    args = ["--mode", "summary", "--base-url", server.url_for("/"), "--keep-recent-tokens", "400"]
    result = run("compact", path, *args, env=ENV)
    assert result.code == 0, result.stderr
    [body] = bodies(server)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048, "display": "summarized"}
    assert body["max_tokens"] == 64000


def test_thinking_off_on_a_reasoning_model_disables_it(server: HTTPServer, tmp_path: Path) -> None:
    server.expect_request("/v1/messages").respond_with_response(anthropic_reply(GOOD_SUMMARY))
    path = _session(tmp_path / "s.jsonl", level="high")
    args = ["--mode", "summary", "--base-url", server.url_for("/"), "--keep-recent-tokens", "400", "--thinking", "off"]
    result = run("compact", path, *args, env=ENV)
    assert result.code == 0, result.stderr
    [body] = bodies(server)
    assert body["thinking"] == {"type": "disabled"}
