"""Response parsing shared by the wire protocols: lenient counts, stop reasons, error text, the final shape."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from pi_compact.llm.types import Response, StopReason, ToolCall, Usage


def json_object(value: Any) -> dict[str, Any]:
    """value when it is a JSON object, else an empty one, so optional fields read as absent."""
    return value if isinstance(value, dict) else {}


def count(value: Any) -> int:
    """A token count; anything but a positive integer (bools, floats, nulls) counts as 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def require_object(data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ValueError("the body is not a JSON object")
    return data


def stop_reason(raw: str | None, table: Mapping[str, StopReason], *, tool_calls: bool = False) -> StopReason:
    """The normalised stop reason; a "stop" beside tool calls (Gemini, several local servers) reads as tool calls."""
    reason = table.get(raw, "other") if raw is not None else "other"
    return "tool_calls" if tool_calls and reason == "stop" else reason


def error_field(data: Any) -> str | None:
    """The ``{"error": {"message": ...}}`` text every protocol's error bodies carry, when present."""
    error = data.get("error") if isinstance(data, dict) else None
    return error["message"] if isinstance(error, dict) and isinstance(error.get("message"), str) else None


def text_or_none(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def call_identity(raw_id: Any, name: Any, index: int, what: str) -> tuple[str, str]:
    """A call's id (``call_<index>`` when the provider gave none) and its name, which it must have."""
    if not isinstance(name, str) or not name:
        raise ValueError(f"{what} has no name")
    return (raw_id if isinstance(raw_id, str) and raw_id else f"call_{index}"), name


def tool_call(call_id: str, name: str, arguments: Any) -> ToolCall:
    """A call whose arguments came as a JSON string (or an object): arguments that are not a JSON object are kept
    raw, so the caller can answer with an error result."""
    if isinstance(arguments, dict):
        return ToolCall(call_id, name, arguments)
    if arguments is None or (isinstance(arguments, str) and not arguments.strip()):
        return ToolCall(call_id, name, {})
    try:
        parsed = json.loads(arguments) if isinstance(arguments, str) else None
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        return ToolCall(call_id, name, parsed)
    return ToolCall(call_id, name, {}, raw_arguments=str(arguments))


def cached_usage(usage: Any, input_key: str, output_key: str, details_key: str) -> Usage:
    """OpenAI's usage (both APIs): an input count that includes the cached tokens given in ``details_key``, which
    Pi counts apart."""
    usage = json_object(usage)
    cached = count(json_object(usage.get(details_key)).get("cached_tokens"))
    return Usage(
        input_tokens=max(count(usage.get(input_key)) - cached, 0),
        output_tokens=count(usage.get(output_key)),
        cache_read_tokens=cached,
    )


def build_response(
    model: Any,
    requested_model: str,
    *,
    text: str,
    tool_calls: tuple[ToolCall, ...],
    stop_reason: StopReason,
    raw_stop_reason: str | None,
    usage: Usage,
) -> Response:
    """The normalised response; ``model`` (the body's) falls back to the requested one when it names none."""
    return Response(
        text=text,
        tool_calls=tool_calls,
        stop_reason=stop_reason,
        usage=usage,
        model=model if isinstance(model, str) and model else requested_model,
        raw_stop_reason=raw_stop_reason,
    )
