"""Google Gemini API (generateContent): request body and response parsing.

Roles: user turns and tool results are ``user`` contents (a tool result as a ``functionResponse`` part), assistant
turns ``model`` contents; consecutive contents of one role are merged. A function call's ``thoughtSignature``
(Gemini 3 sends one and wants it back with the call) is kept on the ToolCall and echoed.
"""

from __future__ import annotations

import re
from typing import Any

from pi_compact.llm import wire_common
from pi_compact.llm.types import Message, Request, Response, StopReason, ToolCall, Usage

_STOP: dict[str, StopReason] = {"STOP": "stop", "MAX_TOKENS": "length"}
_MAJOR = re.compile(r"^gemini(?:-live)?-(\d+)")


def requires_call_ids(model_id: str) -> bool:
    """pi-ai's requiresToolCallId: Gemini 3 and later (and Claude, gpt-oss behind Google) want call ids echoed."""
    lowered = model_id.lower()
    major = _MAJOR.match(lowered)
    return lowered.startswith(("claude-", "gpt-oss-")) or (major is not None and int(major.group(1)) >= 3)


def _parts(message: Message, ids: bool) -> tuple[str, list[dict[str, Any]]]:
    if message.role == "tool":
        key = "error" if message.is_error else "output"
        response: dict[str, Any] = {"name": message.tool_name or "", "response": {key: message.text}}
        if ids:
            response["id"] = message.tool_call_id or ""
        return "user", [{"functionResponse": response}]
    if message.role == "user":
        return "user", [{"text": message.text}]
    parts: list[dict[str, Any]] = [{"text": message.text}] if message.text or not message.tool_calls else []
    for call in message.tool_calls:
        function: dict[str, Any] = {"name": call.name, "args": call.arguments}
        if ids:
            function["id"] = call.id
        part: dict[str, Any] = {"functionCall": function}
        if call.signature:
            part["thoughtSignature"] = call.signature
        parts.append(part)
    return "model", parts


def build_body(
    request: Request, max_tokens: int, thinking_config: dict[str, Any] | None = None, *, call_ids: bool = False
) -> dict[str, Any]:
    contents: list[dict[str, Any]] = []
    for message in request.messages:
        role, parts = _parts(message, call_ids)
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"].extend(parts)
        else:
            contents.append({"role": role, "parts": parts})
    generation: dict[str, Any] = {"maxOutputTokens": max_tokens}
    if request.temperature is not None:
        generation["temperature"] = request.temperature
    if thinking_config is not None:
        generation["thinkingConfig"] = thinking_config
    body: dict[str, Any] = {"contents": contents, "generationConfig": generation}
    if request.system:
        body["systemInstruction"] = {"parts": [{"text": request.system}]}
    if request.tools:
        body["tools"] = [
            {
                "functionDeclarations": [
                    {"name": t.name, "description": t.description, "parametersJsonSchema": t.parameters}
                    for t in request.tools
                ]
            }
        ]
    return body


def parse_response(data: Any, requested_model: str) -> Response:
    data = wire_common.require_object(data)
    candidates = data.get("candidates")
    if not isinstance(candidates, list) or not candidates or not isinstance(candidates[0], dict):
        feedback = wire_common.json_object(data.get("promptFeedback"))
        blocked = feedback.get("blockReason")
        raise ValueError(f"no candidates (prompt blocked: {blocked})" if blocked else "the body has no candidates")
    candidate = candidates[0]
    parts = wire_common.json_object(candidate.get("content")).get("parts") or []
    if not isinstance(parts, list):
        raise ValueError("content.parts is not a list")
    texts: list[str] = []
    calls: list[ToolCall] = []
    for part in parts:
        if not isinstance(part, dict) or part.get("thought") is True:
            continue
        if isinstance(part.get("text"), str):
            texts.append(part["text"])
        call = part.get("functionCall")
        if isinstance(call, dict):
            call_id, name = wire_common.call_identity(call.get("id"), call.get("name"), len(calls), "a functionCall")
            args = call.get("args")
            signature = part.get("thoughtSignature")
            calls.append(
                ToolCall(
                    call_id,
                    name,
                    args if isinstance(args, dict) else {},
                    raw_arguments=None if args is None or isinstance(args, dict) else repr(args),
                    signature=signature if isinstance(signature, str) else None,
                )
            )
    raw_reason = wire_common.text_or_none(candidate.get("finishReason"))
    reason = wire_common.stop_reason(raw_reason, _STOP, tool_calls=bool(calls))
    usage = wire_common.json_object(data.get("usageMetadata"))
    cached = wire_common.count(usage.get("cachedContentTokenCount"))
    return wire_common.build_response(
        data.get("modelVersion"),
        requested_model,
        text="".join(texts),
        tool_calls=tuple(calls),
        stop_reason=reason,
        raw_stop_reason=raw_reason,
        usage=Usage(
            input_tokens=max(wire_common.count(usage.get("promptTokenCount")) - cached, 0),
            output_tokens=wire_common.count(usage.get("candidatesTokenCount"))
            + wire_common.count(usage.get("thoughtsTokenCount")),
            cache_read_tokens=cached,
        ),
    )


def error_message(data: Any) -> str | None:
    if isinstance(data, list) and data:  # some Google endpoints wrap the error in a list
        data = data[0]
    return wire_common.error_field(data)
