"""Sessions on Google's Gemini models: summary and lookup speak the Gemini API (a real server on 127.0.0.1)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
from pytest_httpserver import HTTPServer
from werkzeug import Request as WRequest
from werkzeug import Response as WResponse

from tests.checkpoint.summary.conftest import GOOD_SUMMARY
from tests.helpers.cli import run
from tests.helpers.sessions import SessionBuilder

KEY = "AIza-test-gemini-0000000000000000000000"
MODEL = ("google", "gemini-2.5-flash")
PATH = "/v1beta/models/gemini-2.5-flash:generateContent"
ENV = {"PICOMPACT_FIXED_TIME": "2026-05-06T07:08:09.010Z", "PICOMPACT_ID_SEED": "gemini", "GEMINI_API_KEY": KEY}


def _session(path: Path) -> Path:
    sb = SessionBuilder()
    sb.add({"type": "model_change", "provider": MODEL[0], "modelId": MODEL[1]})
    for i in range(6):
        sb.user(f"Turn {i}: fix the parser bug in src/p{i}.py " + "x" * 400)
        sb.assistant(f"Reading p{i}", tool_calls=[(f"c{i}", "read", {"path": f"src/p{i}.py"})], model=MODEL)
        sb.tool_result(f"c{i}", "read", f"def parse{i}(): raise ValueError('bad token {i}')")
        sb.assistant(f"Fixed p{i} " + "y" * 400, usage=1000 * (i + 1), model=MODEL)
    return sb.write(path)


def _reply(parts: list[dict[str, Any]]) -> WResponse:
    body = {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP"}],
        "usageMetadata": {"promptTokenCount": 900, "candidatesTokenCount": 250, "thoughtsTokenCount": 50},
    }
    return WResponse(json.dumps(body), content_type="application/json")


def test_summary_of_a_gemini_session(server: HTTPServer, tmp_path: Path) -> None:
    seen: list[WRequest] = []

    def handler(request: WRequest) -> WResponse:
        seen.append(request)
        return _reply([{"text": "pondering", "thought": True}, {"text": GOOD_SUMMARY}])

    server.expect_request(PATH, method="POST").respond_with_handler(handler)
    path = _session(tmp_path / "s.jsonl")
    before = path.read_bytes()
    args = ["--mode", "summary", "--base-url", server.url_for("/v1beta"), "--keep-recent-tokens", "400"]
    result = run("compact", path, *args, env=ENV)
    assert result.code == 0, result.stderr
    [request] = seen
    assert request.headers["x-goog-api-key"] == KEY
    body = json.loads(request.get_data())
    assert body["contents"][0]["role"] == "user"
    assert "<conversation>" in body["contents"][0]["parts"][0]["text"]
    assert body["systemInstruction"]["parts"][0]["text"].startswith("You write context checkpoints.")
    # Pi's default thinking level (medium) as Pi sends it to Gemini 2.5 Flash.
    assert body["generationConfig"]["thinkingConfig"] == {"includeThoughts": True, "thinkingBudget": 8192}
    [entry] = [orjson.loads(line) for line in path.read_bytes()[len(before) :].split(b"\n") if line.strip()]
    assert entry["type"] == "compaction" and entry["summary"].startswith(GOOD_SUMMARY)
    assert "pondering" not in entry["summary"]
    assert entry["usage"]["input"] == 900 and entry["usage"]["output"] == 300
    assert KEY.encode() not in result.stderr_bytes + result.stdout_bytes


def test_dry_run_of_a_gemini_session_sends_nothing(server: HTTPServer, tmp_path: Path) -> None:
    path = _session(tmp_path / "s.jsonl")
    result = run("compact", path, "--mode", "summary", "--dry-run", "--json", "--keep-recent-tokens", "400", env=ENV)
    assert result.code == 0, result.stderr
    data = result.json
    assert data["model"]["protocol"] == "google" and data["model"]["api_key_source"] == "GEMINI_API_KEY"
    assert server.log == []


def test_lookup_on_a_gemini_session(server: HTTPServer, tmp_path: Path) -> None:
    bodies: list[dict[str, Any]] = []

    def handler(request: WRequest) -> WResponse:
        bodies.append(json.loads(request.get_data()))
        if len(bodies) == 1:
            call = {"functionCall": {"name": "grep", "args": {"pattern": "bad token 3"}}, "thoughtSignature": "c2ln"}
            return _reply([call])
        return _reply([{"text": "The parser raised `ValueError('bad token 3')` (ENTRY a0000012)."}])

    server.expect_request(PATH, method="POST").respond_with_handler(handler)
    path = _session(tmp_path / "s.jsonl")
    result = run("lookup", path, "Which error did p3 raise?", "--base-url", server.url_for("/v1beta"), env=ENV)
    assert len(bodies) == 2, result.stderr
    assert bodies[0]["tools"][0]["functionDeclarations"]
    echoed = bodies[1]["contents"][1]["parts"][0]
    assert echoed["thoughtSignature"] == "c2ln" and echoed["functionCall"]["name"] == "grep"
    response = bodies[1]["contents"][2]["parts"][0]["functionResponse"]
    assert response["name"] == "grep" and "bad token 3" in response["response"]["output"]
    assert b"bad token 3" in result.stdout_bytes
