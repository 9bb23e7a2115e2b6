"""Providers defined or rerouted in Pi's models.json: where requests go, which key and headers they carry, in
Pi's order (PICOMPACT_API_KEY, auth.json, the entry's apiKey, then the provider's variable), against a real
server on 127.0.0.1."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer

from pi_compact.errors import UsageError
from pi_compact.llm import Message, Request, complete, resolve_model
from pi_compact.llm.choice import find_api_key, require_api_key


def _models_json(agent_dir: Path, providers: dict[str, Any]) -> None:
    (agent_dir / "models.json").write_text(json.dumps({"providers": providers}))


def _local(server: HTTPServer, **entry: Any) -> dict[str, Any]:
    return {
        "baseUrl": server.url_for("/v1"),
        "api": "openai-completions",
        "models": [{"id": "coder-7b", "contextWindow": 32000}],
        **entry,
    }


def _chat_reply(text: str = "ok") -> dict[str, Any]:
    return {
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1},
    }


def _messages_reply(model: str, text: str) -> dict[str, Any]:
    """An Anthropic Messages answer."""
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": text}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 3, "output_tokens": 2},
    }


def _ask(ref: str) -> str:
    model = resolve_model(ref)
    return complete(Request(messages=[Message.user("hi")], max_tokens=16), model=model, max_retries=0).text


def test_a_custom_provider_is_called_at_its_url_with_its_key_and_headers(
    server: HTTPServer, agent_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LOCAL_KEY", "k-from-env-123")
    monkeypatch.setenv("TEAM", "blue")
    _models_json(agent_dir, {"local": _local(server, apiKey="$LOCAL_KEY", headers={"X-Team": "${TEAM}-1"})})
    server.expect_oneshot_request(
        "/v1/chat/completions",
        method="POST",
        headers={"Authorization": "Bearer k-from-env-123", "X-Team": "blue-1"},
    ).respond_with_json(_chat_reply("from local"))
    model = resolve_model("local/coder-7b")
    assert (model.protocol, model.base_url) == ("openai", server.url_for("/v1"))
    assert model.info is not None and model.info.context_window == 32000
    assert _ask("local/coder-7b") == "from local"
    server.check_assertions()
    key = find_api_key(model)
    assert key is not None and "models.json" in key.source


@pytest.mark.parametrize(
    ("api_key", "expected"),
    [("plain-literal-key", "plain-literal-key"), ("pa$$word$!", "pa$word!"), ("!printf 'cmd-key\\n'", "cmd-key")],
)
def test_api_key_values_use_pis_syntax(agent_dir: Path, server: HTTPServer, api_key: str, expected: str) -> None:
    _models_json(agent_dir, {"local": _local(server, apiKey=api_key)})
    key = find_api_key(resolve_model("local/coder-7b"))
    assert key is not None and key.reveal() == expected


def test_the_key_order_is_pis(agent_dir: Path, server: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    _models_json(agent_dir, {"local": _local(server, apiKey="from-models-json")})
    model = resolve_model("local/coder-7b")
    (agent_dir / "auth.json").write_text(json.dumps({"local": {"type": "api_key", "key": "from-auth-json"}}))
    assert find_api_key(model).reveal() == "from-auth-json"  # type: ignore[union-attr]
    monkeypatch.setenv("PICOMPACT_API_KEY", "for-the-run")
    assert find_api_key(model).reveal() == "for-the-run"  # type: ignore[union-attr]


def test_an_api_key_that_does_not_resolve_is_named_and_the_provider_variable_is_not_read(
    agent_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Pi: once models.json sets apiKey, the provider's own variable is not consulted.
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env-not-used")
    _models_json(agent_dir, {"openai": {"apiKey": "${PROXY_KEY}"}})
    model = resolve_model("openai/gpt-4.1-mini")
    assert find_api_key(model) is None
    with pytest.raises(UsageError, match=r"apiKey of openai in .*models\.json.*set PROXY_KEY"):
        require_api_key(model)


def test_a_built_in_provider_routed_by_base_url_keeps_its_protocol_and_key(
    server: HTTPServer, agent_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-env-key")
    _models_json(agent_dir, {"anthropic": {"baseUrl": server.url_for("/proxy/v1")}})
    server.expect_oneshot_request(
        "/proxy/v1/messages", method="POST", headers={"x-api-key": "sk-ant-env-key"}
    ).respond_with_json(_messages_reply("claude-haiku-4-5", "via proxy"))
    assert _ask("anthropic/claude-haiku-4-5") == "via proxy"
    server.check_assertions()


def test_auth_header_sends_the_key_as_a_bearer_token(
    server: HTTPServer, agent_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    entry = _local(server, apiKey="gateway-key-1", authHeader=True, api="anthropic-messages")
    _models_json(agent_dir, {"gateway": entry})
    server.expect_oneshot_request(
        "/v1/messages", method="POST", headers={"Authorization": "Bearer gateway-key-1", "x-api-key": "gateway-key-1"}
    ).respond_with_json(_messages_reply("coder-7b", "gateway"))
    assert resolve_model("gateway/coder-7b").protocol == "anthropic"
    assert _ask("gateway/coder-7b") == "gateway"
    server.check_assertions()


def test_a_header_that_does_not_resolve_stops_the_request(agent_dir: Path, server: HTTPServer) -> None:
    _models_json(agent_dir, {"local": _local(server, apiKey="k", headers={"X-Org": "$ORG_ID"})})
    with pytest.raises(UsageError, match=r'header "X-Org".*ORG_ID not set'):
        _ask("local/coder-7b")
    assert server.log == []


def test_an_api_picompact_does_not_speak_and_an_unknown_model_are_refused(agent_dir: Path, server: HTTPServer) -> None:
    _models_json(agent_dir, {"local": _local(server, apiKey="k", api="bedrock-converse-stream")})
    with pytest.raises(UsageError, match="bedrock-converse-stream"):
        resolve_model("local/coder-7b")
    _models_json(agent_dir, {"local": {"baseUrl": server.url_for("/v1"), "models": [{"id": "a", "api": "x"}]}})
    with pytest.raises(UsageError, match="not defined"):
        resolve_model("local/other-model")


def test_a_provider_in_a_models_json_pi_ignores_is_unknown_and_the_message_says_why(agent_dir: Path) -> None:
    (agent_dir / "models.json").write_text('{"providers": {"local": {"baseUrl": "http://127.0.0.1:9/v1",')
    with pytest.raises(UsageError, match=r"unknown provider 'local'.*not valid JSON.*Pi ignores it"):
        resolve_model("local/coder-7b")
