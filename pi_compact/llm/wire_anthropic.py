"""Anthropic Messages API: request body and response parsing."""

from __future__ import annotations

from typing import Any

from pi_compact.llm import wire_common
from pi_compact.llm.types import Message, Request, Response, StopReason, ToolCall, Usage

API_VERSION = "2023-06-01"

_STOP: dict[str, StopReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
}


def _blocks(message: Message) -> tuple[str, list[dict[str, Any]]]:
    if message.role == "tool":
        block: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": message.tool_call_id or "",
            "content": message.text,
        }
        if message.is_error:
            block["is_error"] = True
        return "user", [block]
    blocks: list[dict[str, Any]] = []
    if message.text or not message.tool_calls:
        blocks.append({"type": "text", "text": message.text})
    for call in message.tool_calls:
        blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": call.arguments})
    return message.role, blocks


def build_body(request: Request, model_id: str, max_tokens: int) -> dict[str, Any]:
    """Tool results become user turns; consecutive turns of one role are merged, as the API expects."""
    messages: list[dict[str, Any]] = []
    for message in request.messages:
        role, blocks = _blocks(message)
        if messages and messages[-1]["role"] == role:
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": role, "content": blocks})
    body: dict[str, Any] = {"model": model_id, "max_tokens": max_tokens, "messages": messages}
    if request.system:
        body["system"] = request.system
    if request.tools:
        body["tools"] = [
            {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in request.tools
        ]
    if request.temperature is not None:
        body["temperature"] = request.temperature
    return body


def parse_response(data: Any, requested_model: str) -> Response:
    data = wire_common.require_object(data)
    content = data.get("content")
    if not isinstance(content, list):
        raise ValueError("the body has no content list")
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in content:
        if not isinstance(block, dict):
            raise ValueError("a content block is not an object")
        if block.get("type") == "text" and isinstance(block.get("text"), str):
            texts.append(block["text"])
        elif block.get("type") == "tool_use":
            calls.append(_tool_call(block))
    raw_reason = wire_common.text_or_none(data.get("stop_reason"))
    usage = wire_common.json_object(data.get("usage"))
    return wire_common.build_response(
        data.get("model"),
        requested_model,
        text="".join(texts),
        tool_calls=tuple(calls),
        stop_reason=wire_common.stop_reason(raw_reason, _STOP),
        raw_stop_reason=raw_reason,
        usage=Usage(
            input_tokens=wire_common.count(usage.get("input_tokens")),
            output_tokens=wire_common.count(usage.get("output_tokens")),
            cache_read_tokens=wire_common.count(usage.get("cache_read_input_tokens")),
            cache_write_tokens=wire_common.count(usage.get("cache_creation_input_tokens")),
        ),
    )


def _tool_call(block: dict[str, Any]) -> ToolCall:
    call_id, name, arguments = block.get("id"), block.get("name"), block.get("input")
    if not isinstance(call_id, str) or not isinstance(name, str) or not name:
        raise ValueError("a tool_use block has no id or name")
    if isinstance(arguments, dict):
        return ToolCall(call_id, name, arguments)
    return ToolCall(call_id, name, {}, raw_arguments=repr(arguments))


def error_message(data: Any) -> str | None:
    if (message := wire_common.error_field(data)) is not None:
        return message
    if isinstance(data, dict) and isinstance(data.get("message"), str):
        return data["message"]
    return None
