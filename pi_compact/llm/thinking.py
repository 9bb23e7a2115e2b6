"""Reasoning ("thinking") for a request, as Pi 1.6 turns it on for its summary requests.

Pi sends its compaction requests with the session's thinking level when the model can reason: the level of the
latest ``thinking_level_change`` on the branch, else ``defaultThinkingLevel`` from its settings, else ``medium``
(pi-coding-agent's ``DEFAULT_THINKING_LEVEL``), clamped to what the model supports. pi-ai then writes it into the
request per protocol:

- OpenAI Chat Completions: ``reasoning_effort`` (OpenRouter: ``reasoning: {effort}``; DeepSeek also
  ``thinking: {type: enabled}``; Z.ai ``thinking``; Together ``reasoning: {enabled}``); xAI and Moonshot take none.
  A reasoning model whose map names a value for ``off`` (``none``) gets that value when thinking is off.
- Anthropic Messages: adaptive models get ``thinking: {type: adaptive}`` and ``output_config: {effort}``; the others
  a thinking budget (minimal 1,024, low 2,048, medium 8,192, high and above 16,384 tokens) added to the output
  limit up to the model's maximum, with at least 1,024 tokens left for the answer. Thinking off on a reasoning
  model sends ``thinking: {type: disabled}``.
- Gemini: ``thinkingConfig`` with a ``thinkingLevel`` (Gemini 3 and later) or a ``thinkingBudget`` (2.5).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pi_compact.llm.providers import ModelRef

LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh", "max")
DEFAULT_THINKING_LEVEL = "medium"
THINKING_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384}
MIN_ANSWER_TOKENS = 1024


@dataclass(frozen=True)
class ThinkingChoice:
    """The level asked for and where it came from (for messages and the dry run)."""

    level: str
    source: str  # "session", "settings", "Pi's default", "--thinking"


def session_thinking_level(branch_entries: Any, settings: dict[str, Any] | None = None) -> ThinkingChoice:
    """The level Pi runs a resumed session with: the branch's latest change, else the settings default, else medium."""
    level: str | None = None
    for entry in branch_entries:
        if getattr(entry, "type", None) == "thinking_level_change":
            value = entry.raw.get("thinkingLevel")
            level = value if isinstance(value, str) else level
    if level is not None:
        return ThinkingChoice(level, "session")
    configured = (settings or {}).get("defaultThinkingLevel")
    if isinstance(configured, str) and configured:
        return ThinkingChoice(configured, "settings")
    return ThinkingChoice(DEFAULT_THINKING_LEVEL, "Pi's default")


@lru_cache(maxsize=1)
def _table() -> dict[str, dict[str, Any]]:
    import orjson

    from pi_compact.bundled import data_bytes

    data = orjson.loads(data_bytes("pi-thinking.json"))
    return data if isinstance(data, dict) else {}


def _row(model: ModelRef) -> dict[str, Any]:
    return _table().get(model.ref, {})


def level_map(model: ModelRef) -> dict[str, Any]:
    """The model's thinkingLevelMap (level -> provider value, None: unsupported), empty when Pi has none."""
    value = _row(model).get("map")
    return value if isinstance(value, dict) else {}


def is_adaptive(model: ModelRef) -> bool:
    return _row(model).get("adaptive") is True


def reasons(model: ModelRef) -> bool:
    """Whether Pi's table says the model can reason (unknown models cannot, as in Pi)."""
    return bool(model.info is not None and model.info.reasoning)


def supported_levels(model: ModelRef) -> list[str]:
    """pi-ai's getSupportedThinkingLevels: xhigh and max only when mapped; a null mapping removes a level."""
    if not reasons(model):
        return ["off"]
    mapping = level_map(model)
    out = []
    for level in LEVELS:
        if level in mapping and mapping[level] is None:
            continue
        if level in ("xhigh", "max") and level not in mapping:
            continue
        out.append(level)
    return out


def clamp(model: ModelRef, level: str) -> str:
    """pi-ai's clampThinkingLevel: the level, else the next supported one up, else down."""
    available = supported_levels(model)
    if level in available:
        return level
    if level not in LEVELS:
        return available[0] if available else "off"
    index = LEVELS.index(level)
    for candidate in LEVELS[index:]:
        if candidate in available:
            return candidate
    for candidate in reversed(LEVELS[:index]):
        if candidate in available:
            return candidate
    return available[0] if available else "off"


def effective_level(model: ModelRef, level: str | None) -> str:
    """The level a request to model is sent with ("off": no reasoning), as Pi's createSummarizationOptions."""
    if not level or level == "off" or not reasons(model):
        return "off"
    return clamp(model, level)


def _mapped(model: ModelRef, level: str) -> Any:
    mapping = level_map(model)
    return mapping[level] if level in mapping and mapping[level] is not None else level


# ---------------------------------------------------------------------------------------------------------------
# Per protocol


def budget_limits(level: str, base_max_tokens: int, model_max_tokens: int) -> tuple[int, int]:
    """pi-ai's adjustMaxTokensForThinking: (output limit with the budget added, thinking budget)."""
    budget = THINKING_BUDGETS["high" if level in ("xhigh", "max") else level]
    max_tokens = min(base_max_tokens + budget, model_max_tokens)
    if max_tokens <= budget:
        budget = min(budget, max(0, max_tokens - MIN_ANSWER_TOKENS))
    return max_tokens, budget


def uses_budget(model: ModelRef, level: str) -> bool:
    """Whether the request carries a token budget that Pi adds to the output limit (Anthropic, not adaptive)."""
    return model.protocol == "anthropic" and level != "off" and not is_adaptive(model)


_EFFORT = {"minimal": "low", "low": "low", "medium": "medium", "high": "high"}


def anthropic_fields(model: ModelRef, level: str, budget: int | None) -> dict[str, Any]:
    if not reasons(model):
        return {}
    if level == "off":
        return {} if level_map(model).get("off", "") is None else {"thinking": {"type": "disabled"}}
    if is_adaptive(model):
        mapped = level_map(model).get(level)
        effort = mapped if isinstance(mapped, str) else _EFFORT.get(level, "high")
        return {"thinking": {"type": "adaptive", "display": "summarized"}, "output_config": {"effort": effort}}
    return {"thinking": {"type": "enabled", "budget_tokens": budget or MIN_ANSWER_TOKENS, "display": "summarized"}}


def _openai_format(model: ModelRef) -> str:
    base = model.base_url.lower()
    provider = model.provider
    if provider == "deepseek" or "deepseek.com" in base:
        return "deepseek"
    if provider in ("zai", "zai-coding-cn") or "api.z.ai" in base:
        return "zai"
    if provider == "together" or "api.together." in base:
        return "together"
    if provider == "openrouter" or "openrouter.ai" in base:
        return "openrouter"
    if provider == "xai" or "api.x.ai" in base or provider.startswith("moonshotai") or "api.moonshot." in base:
        return "none"
    return "openai"


def openai_fields(model: ModelRef, level: str) -> dict[str, Any]:
    if not reasons(model):
        return {}
    fmt = _openai_format(model)
    on = level != "off"
    mapping = level_map(model)
    if fmt == "openrouter":
        if on:
            return {"reasoning": {"effort": _mapped(model, level)}}
        return {} if mapping.get("off", "") is None else {"reasoning": {"effort": mapping.get("off") or "none"}}
    if fmt == "deepseek":
        if on:
            return {"thinking": {"type": "enabled"}, "reasoning_effort": _mapped(model, level)}
        return {} if mapping.get("off", "") is None else {"thinking": {"type": "disabled"}}
    if fmt == "zai":
        return {"thinking": {"type": "enabled", "clear_thinking": False} if on else {"type": "disabled"}}
    if fmt == "together":
        return {"reasoning": {"enabled": on}}
    if fmt == "none":
        return {}
    if on:
        return {"reasoning_effort": _mapped(model, level)}
    off = mapping.get("off")
    return {"reasoning_effort": off} if isinstance(off, str) else {}


def responses_fields(model: ModelRef, level: str) -> dict[str, Any]:
    """pi-ai's reasoning fields for the Responses API: an effort with a reasoning summary and the encrypted
    reasoning, or the model's "off" effort (none unless its map says otherwise or has no off)."""
    if not reasons(model):
        return {}
    if level != "off":
        return {
            "reasoning": {"effort": _mapped(model, level), "summary": "auto"},
            "include": ["reasoning.encrypted_content"],
        }
    mapping = level_map(model)
    fields: dict[str, Any] = {}
    if model.provider != "github-copilot" and not ("off" in mapping and mapping["off"] is None):
        fields["reasoning"] = {"effort": mapping.get("off") or "none"}
    if model.provider == "xai":
        fields["include"] = ["reasoning.encrypted_content"]
    return fields


_GOOGLE_LEVEL = re.compile(r"gemini-3(?:\.\d+)?-(?:pro|flash)|gemini-(?:[4-9]|[1-9]\d)|gemma-?4")
_GOOGLE_BUDGETS = {
    "2.5-pro": {"minimal": 128, "low": 2048, "medium": 8192, "high": 32768},
    "2.5-flash-lite": {"minimal": 512, "low": 2048, "medium": 8192, "high": 24576},
    "2.5-flash": {"minimal": 128, "low": 2048, "medium": 8192, "high": 24576},
}


def _google_uses_level(model: ModelRef) -> bool:
    model_id = model.model_id.lower()
    return bool(_GOOGLE_LEVEL.search(model_id)) or model_id in ("gemini-flash-latest", "gemini-flash-lite-latest")


def google_thinking_config(model: ModelRef, level: str) -> dict[str, Any] | None:
    """Gemini's ``generationConfig.thinkingConfig`` for the level, or None to leave it out."""
    if not reasons(model):
        return None
    if level == "off":
        if not _google_uses_level(model):
            return {"thinkingBudget": 0}
        fallback = clamp(model, "off")
        if fallback == "off":
            return {"thinkingBudget": 0}
        return {"thinkingLevel": str(_mapped(model, fallback)).upper()}  # cannot be off: its lowest level
    resolved = str(_mapped(model, level)).lower()
    if resolved not in ("minimal", "low", "medium", "high"):
        resolved = "high"
    if _google_uses_level(model):
        return {"includeThoughts": True, "thinkingLevel": resolved.upper()}
    for marker, budgets in _GOOGLE_BUDGETS.items():
        if marker in model.model_id:
            return {"includeThoughts": True, "thinkingBudget": budgets[resolved]}
    return {"includeThoughts": True, "thinkingBudget": -1}


__all__ = [
    "DEFAULT_THINKING_LEVEL",
    "LEVELS",
    "ThinkingChoice",
    "anthropic_fields",
    "budget_limits",
    "clamp",
    "effective_level",
    "google_thinking_config",
    "openai_fields",
    "session_thinking_level",
    "supported_levels",
    "uses_budget",
]
