"""Provider-neutral request and response shapes.

Callers build a `Request` from these; the wire modules translate to each protocol, so a
tool-calling loop looks the same whichever provider answers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

StopReason = Literal["stop", "length", "tool_calls", "other"]


@dataclass(frozen=True)
class Tool:
    """A function the model may call; `parameters` is a JSON schema object."""

    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})


@dataclass(frozen=True)
class ToolCall:
    """One call the model asked for.

    `raw_arguments` is set only when the model sent arguments that are not a JSON object;
    `arguments` is then empty and the caller can answer with an error result.
    """

    id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    raw_arguments: str | None = None
    signature: str | None = None  # Gemini's thoughtSignature, sent back with the call


@dataclass(frozen=True)
class Message:
    """A user turn, an assistant turn (text and/or tool calls), or one tool result."""

    role: Literal["user", "assistant", "tool"]
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    tool_name: str | None = None
    is_error: bool = False

    @classmethod
    def user(cls, text: str) -> Message:
        return cls("user", text)

    @classmethod
    def assistant(cls, text: str = "", tool_calls: tuple[ToolCall, ...] | list[ToolCall] = ()) -> Message:
        return cls("assistant", text, tuple(tool_calls))

    @classmethod
    def tool_result(cls, call: ToolCall, text: str, *, is_error: bool = False) -> Message:
        return cls("tool", text, tool_call_id=call.id, tool_name=call.name, is_error=is_error)


@dataclass(frozen=True)
class Request:
    """One completion request. max_tokens None means the model table's limit (or 4096)."""

    messages: tuple[Message, ...] | list[Message]
    system: str = ""
    tools: tuple[Tool, ...] | list[Tool] = ()
    max_tokens: int | None = None
    temperature: float | None = None
    # Pi's thinking level for this request, already clamped to the model (llm.thinking.effective_level): "off"
    # sends what Pi sends with thinking off; None leaves reasoning out of the request (the provider's default).
    reasoning: str | None = None
    thinking_budget: int | None = None  # Anthropic budget-based thinking: tokens of max_tokens it may use


@dataclass(frozen=True)
class Usage:
    """Token counts; `input_tokens` excludes cache reads and writes, as Pi counts them."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def total_input_tokens(self) -> int:
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens


@dataclass(frozen=True)
class Response:
    """What the model said, normalised across protocols."""

    text: str
    tool_calls: tuple[ToolCall, ...]
    stop_reason: StopReason
    usage: Usage
    model: str
    raw_stop_reason: str | None = None

    def to_message(self) -> Message:
        """The assistant turn to append to the conversation before sending tool results."""
        return Message.assistant(self.text, self.tool_calls)
