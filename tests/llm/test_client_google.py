"""The Gemini API (generateContent) against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request as WRequest
from werkzeug import Response as WResponse

from pi_compact.llm import Message, ProviderRequestError, Request, Tool, complete, resolve_model

KEY = "AIza-test-gemini-key-000000000000000000"
PATH = "/v1beta/models/gemini-2.5-flash:generateContent"


def _reply(parts: list[dict[str, Any]], finish: str = "STOP", **usage: int) -> dict[str, Any]:
    return {
        "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": finish}],
        "usageMetadata": {
            "promptTokenCount": usage.get("prompt", 120),
            "candidatesTokenCount": usage.get("candidates", 30),
            "thoughtsTokenCount": usage.get("thoughts", 10),
            "cachedContentTokenCount": usage.get("cached", 20),
        },
        "modelVersion": "gemini-2.5-flash",
    }


def _model(server: HTTPServer):
    return resolve_model("google/gemini-2.5-flash", base_url=server.url_for("/v1beta"))


def test_resolves_to_the_gemini_api_with_pis_key_variable() -> None:
    model = resolve_model("google/gemini-2.5-flash")
    assert model.protocol == "google"
    assert model.base_url == "https://generativelanguage.googleapis.com/v1beta"
    assert model.key_env == ("GEMINI_API_KEY",)


def test_request_shape_headers_and_success(server: HTTPServer) -> None:
    seen: list[WRequest] = []

    def handler(request: WRequest) -> WResponse:
        seen.append(request)
        parts = [{"text": "thinking about it", "thought": True}, {"text": "Hello "}, {"text": "there"}]
        return WResponse(json.dumps(_reply(parts)), content_type="application/json")

    server.expect_request(PATH, method="POST").respond_with_handler(handler)
    response = complete(
        Request([Message.user("hi")], system="be brief", max_tokens=64), model=_model(server), api_key=KEY
    )
    assert response.text == "Hello there"  # thought parts are not the answer
    assert response.stop_reason == "stop" and response.model == "gemini-2.5-flash"
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.cache_read_tokens) == (
        100,
        40,
        20,
    )
    [request] = seen
    assert request.headers["x-goog-api-key"] == KEY
    assert "authorization" not in request.headers
    body = json.loads(request.get_data())
    assert body == {
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "generationConfig": {"maxOutputTokens": 64},
        "systemInstruction": {"parts": [{"text": "be brief"}]},
    }


def test_tool_call_round_trip_echoes_the_thought_signature(server: HTTPServer) -> None:
    bodies: list[dict[str, Any]] = []

    def handler(request: WRequest) -> WResponse:
        bodies.append(json.loads(request.get_data()))
        if len(bodies) == 1:
            parts = [
                {"functionCall": {"name": "grep", "args": {"pattern": "error"}}, "thoughtSignature": "c2lnbmF0dXJl"}
            ]
            return WResponse(json.dumps(_reply(parts)), content_type="application/json")
        return WResponse(json.dumps(_reply([{"text": "found it"}])), content_type="application/json")

    server.expect_request(PATH, method="POST").respond_with_handler(handler)
    model = _model(server)
    tool = Tool("grep", "search", {"type": "object", "properties": {"pattern": {"type": "string"}}})
    messages = [Message.user("find the error")]
    first = complete(Request(messages, tools=[tool], max_tokens=64), model=model, api_key=KEY)
    assert first.stop_reason == "tool_calls"
    [call] = first.tool_calls
    assert call.name == "grep" and call.arguments == {"pattern": "error"} and call.signature == "c2lnbmF0dXJl"
    messages += [first.to_message(), Message.tool_result(call, "ENTRY a1 error: boom")]
    second = complete(Request(messages, tools=[tool], max_tokens=64), model=model, api_key=KEY)
    assert second.text == "found it"
    assert bodies[0]["tools"] == [
        {"functionDeclarations": [{"name": "grep", "description": "search", "parametersJsonSchema": tool.parameters}]}
    ]
    assert bodies[1]["contents"][1:] == [
        {
            "role": "model",
            "parts": [
                {"functionCall": {"name": "grep", "args": {"pattern": "error"}}, "thoughtSignature": "c2lnbmF0dXJl"}
            ],
        },
        {
            "role": "user",
            "parts": [{"functionResponse": {"name": "grep", "response": {"output": "ENTRY a1 error: boom"}}}],
        },
    ]


def test_max_tokens_finish_is_length(server: HTTPServer) -> None:
    server.expect_request(PATH).respond_with_json(_reply([{"text": "cut"}], finish="MAX_TOKENS"))
    response = complete(Request([Message.user("hi")], max_tokens=8), model=_model(server), api_key=KEY)
    assert response.stop_reason == "length"


def test_error_message_comes_from_googles_error_body(server: HTTPServer) -> None:
    error = {
        "error": {
            "code": 400,
            "message": "API key not valid. Please pass a valid API key.",
            "status": "INVALID_ARGUMENT",
        }
    }
    server.expect_request(PATH).respond_with_json(error, status=400)
    with pytest.raises(ProviderRequestError, match="API key not valid") as info:
        complete(Request([Message.user("hi")], max_tokens=8), model=_model(server), api_key=KEY)
    assert KEY not in str(info.value)


def test_a_blocked_prompt_is_an_unexpected_response(server: HTTPServer) -> None:
    server.expect_request(PATH).respond_with_json({"promptFeedback": {"blockReason": "SAFETY"}})
    with pytest.raises(ProviderRequestError, match="prompt blocked: SAFETY"):
        complete(Request([Message.user("hi")], max_tokens=8), model=_model(server), api_key=KEY)


def test_key_from_gemini_api_key(server: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str] = []

    def handler(request: WRequest) -> WResponse:
        seen.append(request.headers.get("x-goog-api-key", ""))
        return WResponse(json.dumps(_reply([{"text": "ok"}])), content_type="application/json")

    server.expect_request(PATH).respond_with_handler(handler)
    monkeypatch.setenv("GEMINI_API_KEY", KEY)
    complete(Request([Message.user("hi")], max_tokens=8), model=_model(server))
    assert seen == [KEY]


def test_gemini_3_gets_call_ids_echoed(server: HTTPServer) -> None:
    path = "/v1beta/models/gemini-3-pro-preview:generateContent"
    bodies: list[dict[str, Any]] = []

    def handler(request: WRequest) -> WResponse:
        bodies.append(json.loads(request.get_data()))
        if len(bodies) == 1:
            call = {
                "functionCall": {"id": "fc_1", "name": "grep", "args": {"pattern": "x"}},
                "thoughtSignature": "c2ln",
            }
            return WResponse(json.dumps(_reply([call])), content_type="application/json")
        return WResponse(json.dumps(_reply([{"text": "done"}])), content_type="application/json")

    server.expect_request(path, method="POST").respond_with_handler(handler)
    model = resolve_model("google/gemini-3-pro-preview", base_url=server.url_for("/v1beta"))
    tool = Tool("grep", "search")
    messages = [Message.user("find x")]
    first = complete(Request(messages, tools=[tool], max_tokens=64), model=model, api_key=KEY)
    [call] = first.tool_calls
    assert call.id == "fc_1"
    messages += [first.to_message(), Message.tool_result(call, "no match", is_error=True)]
    complete(Request(messages, tools=[tool], max_tokens=64), model=model, api_key=KEY)
    model_part, result_part = bodies[1]["contents"][1]["parts"][0], bodies[1]["contents"][2]["parts"][0]
    assert model_part["functionCall"]["id"] == "fc_1" and model_part["thoughtSignature"] == "c2ln"
    assert result_part == {"functionResponse": {"name": "grep", "response": {"error": "no match"}, "id": "fc_1"}}
