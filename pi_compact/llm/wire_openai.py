"""OpenAI Chat Completions: request body and response parsing."""

from __future__ import annotations

import json
from typing import Any

from pi_compact.llm import wire_common
from pi_compact.llm.types import Message, Request, Response, StopReason, ToolCall

_STOP: dict[str, StopReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
}


def _message(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id or "", "content": message.text}
    if message.role == "assistant" and message.tool_calls:
        return {
            "role": "assistant",
            "content": message.text or None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {
                        "name": call.name,
                        "arguments": call.raw_arguments
                        if call.raw_arguments is not None
                        else json.dumps(call.arguments, ensure_ascii=False),
                    },
                }
                for call in message.tool_calls
            ],
        }
    return {"role": message.role, "content": message.text}


def build_body(request: Request, model_id: str, max_tokens: int, max_tokens_field: str) -> dict[str, Any]:
    messages = [{"role": "system", "content": request.system}] if request.system else []
    messages += [_message(m) for m in request.messages]
    body: dict[str, Any] = {"model": model_id, "messages": messages, max_tokens_field: max_tokens, "stream": False}
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
            }
            for t in request.tools
        ]
    if request.temperature is not None:
        body["temperature"] = request.temperature
    return body


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # some servers answer with content parts
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    raise ValueError("message content is neither text nor a list of parts")


def _tool_call(raw: Any, index: int) -> ToolCall:
    if not isinstance(raw, dict) or not isinstance(raw.get("function"), dict):
        raise ValueError("a tool call has no function")
    function = raw["function"]
    call_id, name = wire_common.call_identity(raw.get("id"), function.get("name"), index, "a tool call")
    return wire_common.tool_call(call_id, name, function.get("arguments"))


def parse_response(data: Any, requested_model: str) -> Response:
    data = wire_common.require_object(data)
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise ValueError("the body has no choices")
    choice = choices[0]
    message = choice.get("message")
    if not isinstance(message, dict):
        raise ValueError("the first choice has no message")
    raw_calls = message.get("tool_calls") or []
    if not isinstance(raw_calls, list):
        raise ValueError("tool_calls is not a list")
    calls = tuple(_tool_call(raw, i) for i, raw in enumerate(raw_calls))
    raw_reason = wire_common.text_or_none(choice.get("finish_reason"))
    reason = wire_common.stop_reason(raw_reason, _STOP, tool_calls=bool(calls))
    return wire_common.build_response(
        data.get("model"),
        requested_model,
        text=_text(message.get("content")),
        tool_calls=calls,
        stop_reason=reason,
        raw_stop_reason=raw_reason,
        usage=wire_common.cached_usage(
            data.get("usage"), "prompt_tokens", "completion_tokens", "prompt_tokens_details"
        ),
    )


def error_message(data: Any) -> str | None:
    """The provider's own error text from an error body, when it has one."""
    if (message := wire_common.error_field(data)) is not None:
        return message
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, str):
            return error
        if isinstance(data.get("message"), str):
            return data["message"]
        if isinstance(data.get("detail"), str):
            return data["detail"]
    return None
