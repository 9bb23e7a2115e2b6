"""Summary-mode fixtures: answers of OpenAI or Anthropic for the server on 127.0.0.1, fake keys, sessions."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Response as WResponse

from pi_compact.checkpoint.entry import fixed_clock, seeded_ids
from pi_compact.checkpoint.mode import CheckpointMode
from pi_compact.ops.check import CheckOptions
from pi_compact.ops.compact import CompactOptions, CompactResult, compact_session
from tests.helpers.providers import set_provider_keys
from tests.helpers.sessions import SessionBuilder, simple_session

OPENAI_KEY = "sk-test-openai-0123456789abcdef"
ANTHROPIC_KEY = "sk-ant-test-0123456789abcdef"
OPENAI_MODEL = "openai/gpt-4.1-mini"  # Pi's table: 1,047,576-token window, 32,768 output tokens
ANTHROPIC_MODEL = "anthropic/claude-sonnet-4-5"  # 200,000-token window, 64,000 output tokens
OPENAI_PATH = "/v1/chat/completions"
ANTHROPIC_PATH = "/v1/messages"
KEEP = 400

GOOD_SUMMARY = """## Goal
Refactor the modules under src/ one by one.

## Constraints & Preferences
- Keep the public API stable

## Progress
### Done
- [x] Read src/mod0.py and src/mod1.py

### In Progress
- [ ] Reviewing src/mod2.py

### Blocked
- (none)

## Key Decisions
- **Read before editing**: the modules share helpers

## Next Steps
1. Finish src/mod2.py
2. Run the tests

## Critical Context
- The tests live in tests/"""

GOOD_PREFIX = """## Original Request
Go through every module and fix the failing tests.

## Early Progress
- Read the first modules

## Context for Suffix
- The remaining modules are next"""


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    """Fake provider keys in the environment (the server never checks them; the tests check they never leak)."""
    return set_provider_keys(monkeypatch, OPENAI_KEY, ANTHROPIC_KEY)


def openai_reply(
    text: str | None,
    *,
    finish: str = "stop",
    usage: tuple[int, int, int] = (1200, 300, 200),
    tool_calls: list[dict[str, Any]] | None = None,
) -> WResponse:
    """A Chat Completions answer; usage is (prompt tokens, completion tokens, cached prompt tokens)."""
    message: dict[str, Any] = {"role": "assistant", "content": text}
    if tool_calls:
        message["tool_calls"] = tool_calls
    body = {
        "id": "chatcmpl-test",
        "model": "gpt-4.1-mini",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "prompt_tokens_details": {"cached_tokens": usage[2]},
        },
    }
    return WResponse(json.dumps(body), content_type="application/json")


def anthropic_reply(
    text: str, *, stop: str = "end_turn", usage: tuple[int, int, int, int] = (1000, 300, 100, 50)
) -> WResponse:
    """A Messages answer; usage is (input, output, cache read, cache write)."""
    body = {
        "id": "msg_test",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": text}],
        "stop_reason": stop,
        "usage": {
            "input_tokens": usage[0],
            "output_tokens": usage[1],
            "cache_read_input_tokens": usage[2],
            "cache_creation_input_tokens": usage[3],
        },
    }
    return WResponse(json.dumps(body), content_type="application/json")


def settle(server: HTTPServer, requests: int) -> None:
    """Wait until the server has logged ``requests`` requests, so a late handler cannot leak into the next test."""
    deadline = time.monotonic() + 30
    while len(server.log) < requests and time.monotonic() < deadline:
        time.sleep(0.01)


def bodies(server: HTTPServer) -> list[dict[str, Any]]:
    """The JSON bodies the server received, in order."""
    return [json.loads(request.get_data()) for request, _ in server.log]


def user_text(body: dict[str, Any]) -> str:
    """The one user message of a summary request, either protocol."""
    content = body["messages"][-1]["content"]
    return content if isinstance(content, str) else "".join(block["text"] for block in content)


def system_text(body: dict[str, Any]) -> str:
    if "system" in body:
        return body["system"]
    return next(m["content"] for m in body["messages"] if m["role"] == "system")


def history_session(tmp_path: Path, name: str = "s.jsonl") -> Path:
    """Six plain turns: with keepRecentTokens 300 the cut falls at a turn start (no split)."""
    return simple_session(turns=6, size=400).write(tmp_path / name)


def split_turn_session(tmp_path: Path, *, earlier_turns: int = 2, name: str = "split.jsonl") -> Path:
    """Earlier turns, then one long turn of many tool calls: the cut falls inside that turn."""
    sb = SessionBuilder()
    sb.add({"type": "model_change", "provider": "anthropic", "modelId": "claude-sonnet-4-5"})
    for i in range(earlier_turns):
        sb.user(f"Earlier turn {i}: explain src/old{i}.py " + "e" * 300)
        sb.assistant(f"Reading old{i}", tool_calls=[(f"old_{i}", "read", {"path": f"src/old{i}.py"})])
        sb.tool_result(f"old_{i}", "read", "old contents " + "o" * 300)
        sb.assistant(f"old{i} explained")
    sb.user("Fix every failing test, module by module. " + "u" * 300)
    for i in range(8):
        sb.assistant(f"Step {i}", tool_calls=[(f"fix_{i}", "edit", {"path": f"src/fix{i}.py", "old": "a", "new": "b"})])
        sb.tool_result(f"fix_{i}", "edit", f"edited fix{i} " + "r" * 400)
    sb.assistant("All green now", usage=5000)
    return sb.write(tmp_path / name)


def summary_args(server: HTTPServer, path: Path, *extra: str, keep: int | str = KEEP) -> list[str]:
    """``picompact compact PATH --mode summary`` with ``OPENAI_MODEL`` served by ``server``."""
    return [
        "compact",
        str(path),
        "--mode",
        "summary",
        "--model",
        OPENAI_MODEL,
        "--base-url",
        server.url_for("/v1"),
        "--keep-recent-tokens",
        str(keep),
        *extra,
    ]


def compact(
    path: Path, mode: CheckpointMode, *, model: str = OPENAI_MODEL, keep: int = KEEP, **kw: Any
) -> CompactResult:
    """compact_session with fixed time and ids, judged by (and summarised with) ``model``."""
    options = CompactOptions(
        check=CheckOptions(model=model, keep_recent_tokens=keep),
        clock=fixed_clock("2026-05-06T07:08:09.010Z"),
        new_id=seeded_ids("summary-tests"),
        **kw,
    )
    return compact_session(path, mode, options)
