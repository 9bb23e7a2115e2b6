"""The client against a real HTTP server speaking the Anthropic Messages API."""

from __future__ import annotations

from typing import Any

import pytest
from pytest_httpserver import HTTPServer

from pi_compact.errors import ProviderError
from pi_compact.llm import Message, ModelRef, ProviderRequestError, Request, Tool, ToolCall, complete, resolve_model

KEY = "sk-ant-test-abcdef123456"


def _model(server: HTTPServer, base: str = "") -> ModelRef:
    return resolve_model(
        "anthropic/claude-haiku-4-5", base_url=server.url_for(base) if base else server.url_for("/").rstrip("/")
    )


def _reply(content: list[dict[str, Any]], stop: str = "end_turn") -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-haiku-4-5-20251001",
        "content": content,
        "stop_reason": stop,
        "usage": {
            "input_tokens": 50,
            "output_tokens": 9,
            "cache_read_input_tokens": 200,
            "cache_creation_input_tokens": 10,
        },
    }


def test_request_shape_headers_and_success(server: HTTPServer) -> None:
    expected = {
        "model": "claude-haiku-4-5",
        "max_tokens": 300,
        "system": "You summarise.",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Summarise this."}]}],
    }
    server.expect_request(
        "/v1/messages",
        method="POST",
        json=expected,
        headers={"x-api-key": KEY, "anthropic-version": "2023-06-01", "content-type": "application/json"},
    ).respond_with_json(_reply([{"type": "text", "text": "Sum"}, {"type": "text", "text": "mary."}]))
    response = complete(
        Request([Message.user("Summarise this.")], system="You summarise.", max_tokens=300),
        model=_model(server),
        api_key=KEY,
    )
    server.check_assertions()
    ((sent, _),) = server.log
    assert "Authorization" not in sent.headers
    assert response.text == "Summary."
    assert response.stop_reason == "stop"
    assert response.model == "claude-haiku-4-5-20251001"
    u = response.usage
    assert (u.input_tokens, u.output_tokens, u.cache_read_tokens, u.cache_write_tokens) == (50, 9, 200, 10)


def test_base_url_ending_in_v1_is_not_doubled(server: HTTPServer) -> None:
    server.expect_request("/v1/messages").respond_with_json(_reply([{"type": "text", "text": "ok"}]))
    complete(Request([Message.user("hi")], max_tokens=8), model=_model(server, "/v1"), api_key=KEY)
    server.check_assertions()


def test_max_tokens_stop_reason_is_length(server: HTTPServer) -> None:
    server.expect_request("/v1/messages").respond_with_json(
        _reply([{"type": "text", "text": "trunc"}], stop="max_tokens")
    )
    response = complete(Request([Message.user("hi")], max_tokens=8), model=_model(server), api_key=KEY)
    assert response.stop_reason == "length"


def test_unknown_stop_reason_is_other(server: HTTPServer) -> None:
    server.expect_request("/v1/messages").respond_with_json(_reply([], stop="refusal"))
    response = complete(Request([Message.user("hi")], max_tokens=8), model=_model(server), api_key=KEY)
    assert (response.stop_reason, response.raw_stop_reason, response.text) == ("other", "refusal", "")


def test_tool_call_round_trip_groups_results_in_one_user_turn(server: HTTPServer) -> None:
    show = Tool("show", "Show one entry", {"type": "object", "properties": {"id": {"type": "string"}}})
    tools_wire = [{"name": "show", "description": "Show one entry", "input_schema": show.parameters}]
    first: dict[str, Any] = {
        "model": "claude-haiku-4-5",
        "max_tokens": 200,
        "system": "Look things up.",
        "tools": tools_wire,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "What happened?"}]}],
    }
    calls: list[dict[str, Any]] = [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "toolu_1", "name": "show", "input": {"id": "a1"}},
        {"type": "tool_use", "id": "toolu_2", "name": "show", "input": {"id": "b2"}},
    ]
    server.expect_ordered_request("/v1/messages", json=first).respond_with_json(_reply(calls, stop="tool_use"))
    second = {
        **first,
        "messages": [
            *first["messages"],
            {"role": "assistant", "content": calls},
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "entry a1"},
                    {"type": "tool_result", "tool_use_id": "toolu_2", "content": "no such entry", "is_error": True},
                ],
            },
        ],
    }
    server.expect_ordered_request("/v1/messages", json=second).respond_with_json(
        _reply([{"type": "text", "text": "It was a1."}])
    )

    messages = [Message.user("What happened?")]
    response = complete(
        Request(messages, system="Look things up.", tools=[show], max_tokens=200), model=_model(server), api_key=KEY
    )
    assert response.stop_reason == "tool_calls"
    assert response.text == "Let me look."
    assert response.tool_calls == (ToolCall("toolu_1", "show", {"id": "a1"}), ToolCall("toolu_2", "show", {"id": "b2"}))
    messages += [
        response.to_message(),
        Message.tool_result(response.tool_calls[0], "entry a1"),
        Message.tool_result(response.tool_calls[1], "no such entry", is_error=True),
    ]
    final = complete(
        Request(messages, system="Look things up.", tools=[show], max_tokens=200), model=_model(server), api_key=KEY
    )
    server.check_assertions()
    assert final.text == "It was a1."


def test_overloaded_then_success(server: HTTPServer, sleeps: list[float], fake_sleep) -> None:
    server.expect_ordered_request("/v1/messages").respond_with_json(
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, status=529
    )
    server.expect_ordered_request("/v1/messages").respond_with_json(
        {"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}},
        status=429,
        headers={"retry-after": "3"},
    )
    server.expect_ordered_request("/v1/messages").respond_with_json(_reply([{"type": "text", "text": "ok"}]))
    response = complete(
        Request([Message.user("hi")], max_tokens=8), model=_model(server), api_key=KEY, sleep=fake_sleep
    )
    assert response.text == "ok"
    assert sleeps == [1.0, 3.0]


def test_error_message_comes_from_the_anthropic_error_body(server: HTTPServer) -> None:
    server.expect_request("/v1/messages").respond_with_json(
        {"type": "error", "error": {"type": "invalid_request_error", "message": "max_tokens: too large"}}, status=400
    )
    with pytest.raises(ProviderRequestError, match="HTTP 400: max_tokens: too large"):
        complete(Request([Message.user("hi")], max_tokens=8), model=_model(server), api_key=KEY)


def test_malformed_json(server: HTTPServer) -> None:
    server.expect_request("/v1/messages").respond_with_data('{"content": [', content_type="application/json")
    with pytest.raises(ProviderError, match="not JSON"):
        complete(Request([Message.user("hi")], max_tokens=8), model=_model(server), api_key=KEY)


def test_missing_content_is_unexpected(server: HTTPServer) -> None:
    server.expect_request("/v1/messages").respond_with_json({"type": "message", "stop_reason": "end_turn"})
    with pytest.raises(ProviderError, match="unexpected response"):
        complete(Request([Message.user("hi")], max_tokens=8), model=_model(server), api_key=KEY)
