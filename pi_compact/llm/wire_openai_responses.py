"""OpenAI Responses API: request body and response parsing, as Pi 1.6 (pi-ai) speaks to OpenAI's own models.

Stateless, like pi-ai: ``store`` is false and every request carries the whole conversation. Earlier tool calls are
sent back without their item ids (pi-ai does the same for calls it cannot pair with a reasoning item), so the API
does not ask for reasoning items picompact does not keep.
"""

from __future__ import annotations

import json
from typing import Any

from pi_compact.llm import wire_common
from pi_compact.llm.types import Message, Request, Response, StopReason, ToolCall

# The API rejects a max_output_tokens below 16 (pi-ai raises smaller limits to it too).
MIN_OUTPUT_TOKENS = 16


def _arguments(call: ToolCall) -> str:
    if call.raw_arguments is not None:
        return call.raw_arguments
    return json.dumps(call.arguments, ensure_ascii=False, separators=(",", ":"))


def _items(message: Message, index: int) -> list[dict[str, Any]]:
    if message.role == "tool":
        return [{"type": "function_call_output", "call_id": message.tool_call_id or "", "output": message.text}]
    if message.role == "user":
        return [{"role": "user", "content": [{"type": "input_text", "text": message.text}]}]
    items: list[dict[str, Any]] = []
    if message.text:
        items.append(
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": message.text, "annotations": []}],
                "status": "completed",
                "id": f"msg_pi_{index}",
            }
        )
    items += [
        {"type": "function_call", "call_id": call.id, "name": call.name, "arguments": _arguments(call)}
        for call in message.tool_calls
    ]
    return items


def build_body(request: Request, model_id: str, max_tokens: int, *, reasoning_model: bool) -> dict[str, Any]:
    """The request body; the system prompt goes first as a developer message for reasoning models (a system
    message otherwise), as pi-ai sends it."""
    items: list[dict[str, Any]] = []
    if request.system:
        items.append({"role": "developer" if reasoning_model else "system", "content": request.system})
    for index, message in enumerate(request.messages):
        items += _items(message, index)
    body: dict[str, Any] = {
        "model": model_id,
        "input": items,
        "store": False,
        "max_output_tokens": max(max_tokens, MIN_OUTPUT_TOKENS),
    }
    if request.tools:
        body["tools"] = [
            # Not strict: the Responses API makes function tools strict unless told otherwise, and strict schemas
            # may not have optional properties (pi-ai sends false too).
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
                "strict": False,
            }
            for t in request.tools
        ]
    if request.temperature is not None:
        body["temperature"] = request.temperature
    return body


def _call(item: dict[str, Any], index: int) -> ToolCall:
    call_id, name = wire_common.call_identity(item.get("call_id"), item.get("name"), index, "a function call")
    return wire_common.tool_call(call_id, name, item.get("arguments"))


def parse_response(data: Any, requested_model: str) -> Response:
    data = wire_common.require_object(data)
    status = wire_common.text_or_none(data.get("status"))
    if status == "failed":
        raise ValueError(f"the response failed: {wire_common.error_field(data) or 'no reason given'}")
    output = data.get("output")
    if not isinstance(output, list):
        raise ValueError("the body has no output list")
    texts: list[str] = []
    refusals: list[str] = []
    calls: list[ToolCall] = []
    for item in output:
        if not isinstance(item, dict):
            continue
        if item.get("type") == "message":
            for part in item.get("content") or []:
                if isinstance(part, dict) and part.get("type") == "output_text" and isinstance(part.get("text"), str):
                    texts.append(part["text"])
                elif isinstance(part, dict) and part.get("type") == "refusal" and isinstance(part.get("refusal"), str):
                    refusals.append(part["refusal"])
        elif item.get("type") == "function_call":
            calls.append(_call(item, len(calls)))
    incomplete = wire_common.json_object(data.get("incomplete_details")).get("reason")
    reason: StopReason
    if status == "incomplete":
        raw_reason: str | None = f"incomplete:{incomplete}" if isinstance(incomplete, str) else "incomplete"
        reason = "length" if incomplete == "max_output_tokens" else "other"
    else:
        raw_reason = status
        reason = "tool_calls" if calls else "stop" if status in ("completed", None) else "other"
    return wire_common.build_response(
        data.get("model"),
        requested_model,
        text="".join(texts) or "".join(refusals),
        tool_calls=tuple(calls),
        stop_reason=reason,
        raw_stop_reason=raw_reason,
        usage=wire_common.cached_usage(data.get("usage"), "input_tokens", "output_tokens", "input_tokens_details"),
    )


def error_message(data: Any) -> str | None:
    """The provider's own error text from an error body, when it has one."""
    return wire_common.error_field(data)
