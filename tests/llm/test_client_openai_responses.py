"""The client against a real HTTP server speaking OpenAI's Responses API, the API Pi 1.6 uses for OpenAI's own
models (reached here through a models.json baseUrl, as a proxy would be)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer

from pi_compact.llm import Message, ModelRef, ProviderRequestError, Request, Tool, complete, resolve_model
from pi_compact.llm.client import _body
from pi_compact.llm.types import Response, ToolCall, Usage
from tests.oracle import run_pi_script

KEY = "sk-test-openai-responses-0123"


@pytest.fixture
def gpt5(server: HTTPServer, agent_dir: Path, monkeypatch: pytest.MonkeyPatch) -> ModelRef:
    (agent_dir / "models.json").write_text(json.dumps({"providers": {"openai": {"baseUrl": server.url_for("/v1")}}}))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    model = resolve_model("openai/gpt-5.1")
    assert (model.protocol, model.base_url) == ("openai-responses", server.url_for("/v1"))
    return model


def _reply(*output: dict[str, Any], status: str = "completed", **extra: Any) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "status": status,
        "model": "gpt-5.1-2025-11-13",
        "output": list(output),
        "usage": {"input_tokens": 120, "input_tokens_details": {"cached_tokens": 20}, "output_tokens": 7},
        **extra,
    }


def _text(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def test_request_shape_and_success(server: HTTPServer, gpt5: ModelRef) -> None:
    expected = {
        "model": "gpt-5.1",
        "input": [
            {"role": "developer", "content": "You summarise."},
            {"role": "user", "content": [{"type": "input_text", "text": "Summarise this."}]},
        ],
        "store": False,
        "max_output_tokens": 512,
        "reasoning": {"effort": "low", "summary": "auto"},
        "include": ["reasoning.encrypted_content"],
    }
    server.expect_oneshot_request(
        "/v1/responses", method="POST", json=expected, headers={"Authorization": f"Bearer {KEY}"}
    ).respond_with_json(_reply({"type": "reasoning", "id": "rs_1", "summary": []}, _text("Done.")))
    request = Request(
        messages=[Message.user("Summarise this.")], system="You summarise.", max_tokens=512, reasoning="low"
    )
    response = complete(request, model=gpt5)
    server.check_assertions()
    assert (response.text, response.stop_reason, response.model) == ("Done.", "stop", "gpt-5.1-2025-11-13")
    assert (response.usage.input_tokens, response.usage.cache_read_tokens, response.usage.output_tokens) == (100, 20, 7)


def test_a_tool_round_trip(server: HTTPServer, gpt5: ModelRef) -> None:
    grep = Tool("grep", "Search the history.", {"type": "object", "properties": {"pattern": {"type": "string"}}})
    call = {"type": "function_call", "id": "fc_9", "call_id": "call_9", "name": "grep", "arguments": '{"pattern":"x"}'}
    server.expect_ordered_request("/v1/responses", method="POST").respond_with_json(_reply(_text("Looking."), call))
    server.expect_ordered_request("/v1/responses", method="POST").respond_with_json(_reply(_text("Found it.")))
    first = complete(Request(messages=[Message.user("find x")], tools=[grep]), model=gpt5)
    assert first.stop_reason == "tool_calls"
    assert [(c.id, c.name, c.arguments) for c in first.tool_calls] == [("call_9", "grep", {"pattern": "x"})]
    messages = [Message.user("find x"), first.to_message(), Message.tool_result(first.tool_calls[0], "1 match")]
    second = complete(Request(messages=messages, tools=[grep]), model=gpt5)
    assert second.text == "Found it."
    sent = json.loads(server.log[1][0].get_data())
    assert sent["tools"] == [
        {
            "type": "function",
            "name": "grep",
            "description": "Search the history.",
            "parameters": grep.parameters,
            "strict": False,
        }
    ]
    assert sent["input"][1:] == [
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Looking.", "annotations": []}],
            "status": "completed",
            "id": "msg_pi_1",
        },
        {"type": "function_call", "call_id": "call_9", "name": "grep", "arguments": '{"pattern":"x"}'},
        {"type": "function_call_output", "call_id": "call_9", "output": "1 match"},
    ]


def test_an_answer_cut_at_the_output_limit_reads_as_length(server: HTTPServer, gpt5: ModelRef) -> None:
    server.expect_oneshot_request("/v1/responses").respond_with_json(
        _reply(_text("Partial"), status="incomplete", incomplete_details={"reason": "max_output_tokens"})
    )
    response = complete(Request(messages=[Message.user("go")]), model=gpt5)
    assert (response.text, response.stop_reason) == ("Partial", "length")


def test_errors_carry_the_providers_message(server: HTTPServer, gpt5: ModelRef) -> None:
    server.expect_oneshot_request("/v1/responses").respond_with_json(
        {"error": {"message": "Unsupported parameter: 'temperature'", "type": "invalid_request_error"}}, status=400
    )
    with pytest.raises(ProviderRequestError, match=r"HTTP 400: Unsupported parameter: 'temperature'"):
        complete(Request(messages=[Message.user("go")], temperature=0.2), model=gpt5, max_retries=0)
    server.expect_oneshot_request("/v1/responses").respond_with_json(
        _reply(status="failed", error={"code": "server_error", "message": "The model failed."})
    )
    with pytest.raises(ProviderRequestError, match="The model failed"):
        complete(Request(messages=[Message.user("go")]), model=gpt5, max_retries=0)


def test_a_base_url_given_on_the_command_line_still_means_chat_completions(agent_dir: Path) -> None:
    assert resolve_model("openai/gpt-5.1", base_url="http://127.0.0.1:9/v1").protocol == "openai"


PI_INPUT_SCRIPT = r"""
import { readFileSync } from "node:fs";
const [pkg, jobsFile] = process.argv.slice(2);
const base = pkg + "/../pi-ai/dist/";
const { getModel } = await import(base + "compat.js");
const [job] = JSON.parse(readFileSync(jobsFile, "utf8"));
const model = getModel("openai", job.id);
const mod = await import(base + "api/" + model.api + ".js");
let payload = null;
const onPayload = (p) => { payload = p; throw new Error("captured"); };
const options = { apiKey: "sk-k", cacheRetention: "none", onPayload };
try {
  for await (const e of mod.streamSimple(model, { messages: job.messages }, options)) {
    if (e.type === "error" || e.type === "done") break;
  }
} catch {}
console.log(JSON.stringify(payload));
"""


def test_a_tool_conversation_is_sent_as_pi_ai_sends_it(tmp_path: Path, agent_dir: Path) -> None:
    """The ``input`` items of a conversation with a system prompt, a tool call and its result, against the body
    pi-ai 1.6 builds for the same conversation (its payload builder; nothing is sent)."""
    zero = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0}
    call = {"type": "toolCall", "id": "call_1", "name": "grep", "arguments": {"pattern": "x"}}
    assistant = {
        "role": "assistant",
        "content": [{"type": "text", "text": "looking"}, call],
        "api": "openai-responses",
        "provider": "openai",
        "model": "gpt-5.1",
        "usage": {**zero, "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
        "stopReason": "toolUse",
        "timestamp": 0,
    }
    messages = [
        {"role": "system", "content": "You search.", "timestamp": 0},
        {"role": "user", "content": [{"type": "text", "text": "find x"}], "timestamp": 0},
        assistant,
        {
            "role": "toolResult",
            "toolCallId": "call_1",
            "toolName": "grep",
            "content": [{"type": "text", "text": "1 match"}],
            "isError": False,
            "timestamp": 0,
        },
    ]
    jobs = [{"id": "gpt-5.1", "messages": messages}]
    theirs = run_pi_script(tmp_path, "input.mjs", PI_INPUT_SCRIPT, "package.json", jobs, "pi-ai's request builder")
    first = Response("looking", (ToolCall("call_1", "grep", {"pattern": "x"}),), "tool_calls", Usage(), "gpt-5.1")
    ours = Request(
        messages=[Message.user("find x"), first.to_message(), Message.tool_result(first.tool_calls[0], "1 match")],
        system="You search.",
    )
    model = resolve_model("openai/gpt-5.1")
    assert json.loads(_body(ours, model))["input"] == theirs["input"]
