"""The client against a real HTTP server speaking OpenAI Chat Completions."""

from __future__ import annotations

import json
import socket
import threading
from typing import Any

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request as WRequest
from werkzeug import Response as WResponse

from pi_compact.errors import ExitCode, ProviderError, UsageError
from pi_compact.llm import Message, ModelRef, ProviderRequestError, Request, Tool, complete, resolve_model
from tests.helpers.providers import await_logged

KEY = "sk-test-openai-0123456789"


def _model(server: HTTPServer, ref: str = "openai/gpt-4.1-mini") -> ModelRef:
    return resolve_model(ref, base_url=server.url_for("/v1"))


def _reply(text: str | None = "ok", finish: str = "stop", **message: object) -> dict[str, Any]:
    return {
        "id": "chatcmpl-1",
        "model": "gpt-4.1-mini-2025-04-14",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text, **message}, "finish_reason": finish}
        ],
        "usage": {"prompt_tokens": 120, "completion_tokens": 7, "prompt_tokens_details": {"cached_tokens": 20}},
    }


def test_request_shape_and_success(server: HTTPServer) -> None:
    expected = {
        "model": "gpt-4.1-mini",
        "messages": [
            {"role": "system", "content": "You summarise."},
            {"role": "user", "content": "Summarise this."},
        ],
        "max_completion_tokens": 512,
        "temperature": 0.2,
        "stream": False,
    }
    server.expect_ordered_request(
        "/v1/chat/completions",
        method="POST",
        json=expected,
        headers={"Authorization": f"Bearer {KEY}", "Content-Type": "application/json"},
    ).respond_with_json(_reply("Done."))
    request = Request(
        messages=[Message.user("Summarise this.")], system="You summarise.", max_tokens=512, temperature=0.2
    )
    response = complete(request, model=_model(server), api_key=KEY)
    server.check_assertions()
    assert response.text == "Done."
    assert response.stop_reason == "stop"
    assert response.model == "gpt-4.1-mini-2025-04-14"
    assert (response.usage.input_tokens, response.usage.cache_read_tokens, response.usage.output_tokens) == (100, 20, 7)
    assert response.usage.total_input_tokens == 120


def test_other_providers_send_max_tokens_and_no_key_when_none_needed(server: HTTPServer) -> None:
    server.expect_request(
        "/v1/chat/completions",
        json={
            "model": "qwen3:8b",
            "messages": [{"role": "user", "content": "hi"}],
            "max_tokens": 64,
            "stream": False,
        },
    ).respond_with_json(_reply())
    complete(Request([Message.user("hi")], max_tokens=64), model=_model(server, "ollama/qwen3:8b"))
    server.check_assertions()
    ((sent, _),) = server.log
    assert "Authorization" not in sent.headers


def test_max_tokens_defaults_to_the_model_table_limit(server: HTTPServer) -> None:
    model = _model(server, "openai/gpt-4.1-mini")
    assert model.info is not None and model.info.max_tokens
    server.expect_request("/v1/chat/completions").respond_with_json(_reply())
    complete(Request([Message.user("hi")]), model=model, api_key=KEY)
    ((sent, _),) = server.log
    assert sent.get_json()["max_completion_tokens"] == model.info.max_tokens


def test_length_stop_reason(server: HTTPServer) -> None:
    server.expect_request("/v1/chat/completions").respond_with_json(_reply("cut off", finish="length"))
    response = complete(Request([Message.user("hi")], max_tokens=5), model=_model(server), api_key=KEY)
    assert response.stop_reason == "length"
    assert response.raw_stop_reason == "length"


def test_key_from_environment_is_sent(server: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-key-42")
    server.expect_request("/v1/chat/completions", headers={"Authorization": "Bearer sk-env-key-42"}).respond_with_json(
        _reply()
    )
    complete(Request([Message.user("hi")], max_tokens=8), model=_model(server))
    server.check_assertions()


def test_key_from_auth_file_is_sent(server: HTTPServer, agent_dir) -> None:
    (agent_dir / "auth.json").write_text(json.dumps({"openrouter": {"type": "api_key", "key": "sk-or-file"}}))
    server.expect_request("/v1/chat/completions", headers={"Authorization": "Bearer sk-or-file"}).respond_with_json(
        _reply()
    )
    complete(Request([Message.user("hi")], max_tokens=8), model=_model(server, "openrouter/qwen/qwen3-32b"))
    server.check_assertions()


def test_missing_key_is_a_usage_error_before_any_request(server: HTTPServer) -> None:
    with pytest.raises(UsageError, match="OPENAI_API_KEY"):
        complete(Request([Message.user("hi")], max_tokens=8), model=_model(server))
    assert server.log == []


def test_tool_call_round_trip(server: HTTPServer) -> None:
    grep = Tool(
        "grep",
        "Search the history",
        {"type": "object", "properties": {"pattern": {"type": "string"}}, "required": ["pattern"]},
    )
    tools_wire = [
        {
            "type": "function",
            "function": {"name": "grep", "description": "Search the history", "parameters": grep.parameters},
        }
    ]
    first: dict[str, Any] = {
        "model": "gpt-4.1-mini",
        "messages": [{"role": "system", "content": "Find things."}, {"role": "user", "content": "Where is X?"}],
        "max_completion_tokens": 100,
        "stream": False,
        "tools": tools_wire,
    }
    call = {"id": "call_abc", "type": "function", "function": {"name": "grep", "arguments": '{"pattern": "X"}'}}
    server.expect_ordered_request("/v1/chat/completions", json=first).respond_with_json(
        _reply(None, finish="tool_calls", tool_calls=[call])
    )
    second = {
        **first,
        "messages": [
            *first["messages"],
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_abc",
                        "type": "function",
                        "function": {"name": "grep", "arguments": '{"pattern": "X"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_abc", "content": "entry 12: X is here"},
        ],
    }
    server.expect_ordered_request("/v1/chat/completions", json=second).respond_with_json(_reply("In entry 12."))

    messages = [Message.user("Where is X?")]
    request = Request(messages, system="Find things.", tools=[grep], max_tokens=100)
    response = complete(request, model=_model(server), api_key=KEY)
    assert response.stop_reason == "tool_calls"
    assert response.text == ""
    (tool_call,) = response.tool_calls
    assert (tool_call.id, tool_call.name, tool_call.arguments) == ("call_abc", "grep", {"pattern": "X"})
    messages += [response.to_message(), Message.tool_result(tool_call, "entry 12: X is here")]
    final = complete(
        Request(messages, system="Find things.", tools=[grep], max_tokens=100), model=_model(server), api_key=KEY
    )
    server.check_assertions()
    assert final.text == "In entry 12."
    assert final.tool_calls == ()


def test_unparsable_tool_arguments_are_kept_for_the_caller(server: HTTPServer) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "show", "arguments": "{not json"}}
    server.expect_request("/v1/chat/completions").respond_with_json(_reply("", tool_calls=[call]))
    response = complete(Request([Message.user("hi")], max_tokens=8), model=_model(server), api_key=KEY)
    (tool_call,) = response.tool_calls
    assert tool_call.arguments == {}
    assert tool_call.raw_arguments == "{not json"
    assert response.stop_reason == "tool_calls"


def test_429_then_success_honours_retry_after(server: HTTPServer, sleeps: list[float], fake_sleep) -> None:
    server.expect_ordered_request("/v1/chat/completions").respond_with_json(
        {"error": {"message": "Rate limit reached"}}, status=429, headers={"Retry-After": "7"}
    )
    server.expect_ordered_request("/v1/chat/completions").respond_with_json(_reply("after wait"))
    response = complete(
        Request([Message.user("hi")], max_tokens=8), model=_model(server), api_key=KEY, sleep=fake_sleep
    )
    assert response.text == "after wait"
    assert sleeps == [7.0]
    assert len(server.log) == 2


def test_retry_after_as_http_date_is_capped(server: HTTPServer, sleeps: list[float], fake_sleep) -> None:
    server.expect_ordered_request("/v1/chat/completions").respond_with_data(
        "busy", status=503, headers={"Retry-After": "Fri, 31 Dec 2100 23:59:59 GMT"}
    )
    server.expect_ordered_request("/v1/chat/completions").respond_with_json(_reply())
    complete(Request([Message.user("hi")], max_tokens=8), model=_model(server), api_key=KEY, sleep=fake_sleep)
    assert sleeps == [60.0]


def test_500s_until_give_up(server: HTTPServer, sleeps: list[float], fake_sleep) -> None:
    server.expect_request("/v1/chat/completions").respond_with_json(
        {"error": {"message": "upstream exploded"}}, status=502
    )
    with pytest.raises(ProviderRequestError) as info:
        complete(
            Request([Message.user("hi")], max_tokens=8),
            model=_model(server),
            api_key=KEY,
            max_retries=3,
            sleep=fake_sleep,
        )
    err = info.value
    assert len(server.log) == 4
    assert sleeps == [1.0, 2.0, 4.0]
    assert err.status == 502 and err.attempts == 4
    assert err.exit_code == ExitCode.EXTERNAL
    assert "502" in str(err) and "upstream exploded" in str(err) and "4 attempts" in str(err)


def test_timeout(server: HTTPServer, sleeps: list[float], fake_sleep) -> None:
    release = threading.Event()

    def slow(_: WRequest) -> WResponse:
        release.wait(5)
        return WResponse(json.dumps(_reply()), content_type="application/json")

    server.expect_request("/v1/chat/completions").respond_with_handler(slow)
    try:
        with pytest.raises(ProviderRequestError) as info:
            complete(
                Request([Message.user("hi")], max_tokens=8),
                model=_model(server),
                api_key=KEY,
                timeout=0.05,
                max_retries=1,
                sleep=fake_sleep,
            )
    finally:
        release.set()
        await_logged(server, 2)  # both timed-out requests
    assert info.value.status is None
    assert "within 0.05 s" in str(info.value)
    assert sleeps == [1.0]


def test_connection_refused_is_retried_then_reported(sleeps: list[float], fake_sleep) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    model = resolve_model("vllm/m", base_url=f"http://127.0.0.1:{port}/v1")
    with pytest.raises(ProviderRequestError, match=f"cannot reach http://127.0.0.1:{port}"):
        complete(Request([Message.user("hi")], max_tokens=8), model=model, max_retries=2, sleep=fake_sleep)
    assert sleeps == [1.0, 2.0]


def test_malformed_json_is_a_provider_error(server: HTTPServer) -> None:
    server.expect_request("/v1/chat/completions").respond_with_data("<html>oops", content_type="application/json")
    with pytest.raises(ProviderError, match="not JSON"):
        complete(Request([Message.user("hi")], max_tokens=8), model=_model(server), api_key=KEY)
    assert len(server.log) == 1


def test_unexpected_shape_is_a_provider_error(server: HTTPServer) -> None:
    server.expect_request("/v1/chat/completions").respond_with_json({"choices": []})
    with pytest.raises(ProviderError, match="unexpected response"):
        complete(Request([Message.user("hi")], max_tokens=8), model=_model(server), api_key=KEY)


def test_client_error_fails_at_once_with_provider_message(server: HTTPServer, fake_sleep) -> None:
    long_tail = "x" * 2000
    server.expect_request("/v1/chat/completions").respond_with_json(
        {"error": {"message": f"Invalid value for 'max_tokens' {long_tail}"}}, status=400
    )
    with pytest.raises(ProviderRequestError) as info:
        complete(Request([Message.user("hi")], max_tokens=8), model=_model(server), api_key=KEY, sleep=fake_sleep)
    assert len(server.log) == 1
    assert info.value.status == 400
    assert "Invalid value for 'max_tokens'" in str(info.value)
    assert len(str(info.value)) < 500


def test_not_found_hints_at_base_url(server: HTTPServer) -> None:
    server.expect_request("/v1/chat/completions").respond_with_data("Not Found", status=404)
    with pytest.raises(ProviderRequestError, match="/v1"):
        complete(Request([Message.user("hi")], max_tokens=8), model=_model(server), api_key=KEY)


def test_bad_base_url_is_a_usage_error() -> None:
    model = resolve_model("vllm/m", base_url="localhost:8000/v1")
    with pytest.raises(UsageError, match="http"):
        complete(Request([Message.user("hi")], max_tokens=8), model=model)


def test_keyboard_interrupt_propagates(server: HTTPServer) -> None:
    server.expect_request("/v1/chat/completions").respond_with_data("slow down", status=429)

    def interrupted(_: float) -> None:
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        complete(Request([Message.user("hi")], max_tokens=8), model=_model(server), api_key=KEY, sleep=interrupted)
