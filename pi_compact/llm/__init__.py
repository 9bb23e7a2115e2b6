"""LLM provider client: model resolution, API keys, and completions over three wire protocols.

A tool-calling loop::

    model = choose_model(session_model, cli_model, os.environ, base_url=cli_base_url)
    messages = [Message.user(question)]
    while True:
        response = complete(Request(messages, system=prompt, tools=tools, max_tokens=2000), model=model)
        if not response.tool_calls:
            break
        messages.append(response.to_message())
        messages += [Message.tool_result(call, run_tool(call)) for call in response.tool_calls]
"""

from pi_compact.llm.choice import (
    choose_model,
    choose_model_and_key,
    find_api_key,
    has_api_key,
    key_source,
    model_available,
    require_api_key,
)
from pi_compact.llm.client import ProviderRequestError, complete, complete_many
from pi_compact.llm.keys import Secret
from pi_compact.llm.providers import MODEL_ENV_VAR, PROVIDERS, ModelRef, resolve_model, supported_providers
from pi_compact.llm.types import Message, Request, Response, StopReason, Tool, ToolCall, Usage
from pi_compact.pi.catalog import ModelInfo, estimate_cost, find_model, parse_model_ref

__all__ = [
    "MODEL_ENV_VAR",
    "PROVIDERS",
    "Message",
    "ModelInfo",
    "ModelRef",
    "ProviderRequestError",
    "Request",
    "Response",
    "Secret",
    "StopReason",
    "Tool",
    "ToolCall",
    "Usage",
    "choose_model",
    "choose_model_and_key",
    "complete",
    "complete_many",
    "estimate_cost",
    "find_api_key",
    "find_model",
    "has_api_key",
    "key_source",
    "model_available",
    "parse_model_ref",
    "require_api_key",
    "resolve_model",
    "supported_providers",
]
