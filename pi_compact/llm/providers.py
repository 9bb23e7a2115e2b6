"""Which endpoint, wire protocol and key a "provider/model-id" reference means.

picompact speaks four protocols: OpenAI Chat Completions ("openai"), OpenAI's Responses API ("openai-responses",
for the models Pi's table sends through it when no --base-url is given), Anthropic Messages ("anthropic") and the
Gemini API ("google"). Every provider below maps to one of them; a provider in the user's models.json to the one
its ``api`` names.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Literal

from pi_compact.errors import UsageError
from pi_compact.pi.catalog import (
    ModelInfo,
    find_model,
    models_json_path,
    models_json_warnings,
    parse_model_ref,
    provider_config,
    provider_models,
)

# "openai" is Chat Completions, "openai-responses" the Responses API (OpenAI's own models, as Pi speaks to them).
Protocol = Literal["openai", "openai-responses", "anthropic", "google"]

MODEL_ENV_VAR = "PICOMPACT_MODEL"


@dataclass(frozen=True)
class ProviderSpec:
    """Defaults for one provider; `base_url` None means the user must pass --base-url."""

    name: str
    protocol: Protocol
    base_url: str | None
    key_env: tuple[str, ...]
    key_required: bool = True
    # OpenAI's own API wants max_completion_tokens; most compatible servers only know max_tokens.
    max_tokens_field: str = "max_tokens"


PROVIDERS: dict[str, ProviderSpec] = {
    spec.name: spec
    for spec in (
        ProviderSpec(
            "openai",
            "openai",
            "https://api.openai.com/v1",
            ("OPENAI_API_KEY",),
            max_tokens_field="max_completion_tokens",
        ),
        ProviderSpec("anthropic", "anthropic", "https://api.anthropic.com", ("ANTHROPIC_API_KEY",)),
        ProviderSpec("google", "google", "https://generativelanguage.googleapis.com/v1beta", ("GEMINI_API_KEY",)),
        ProviderSpec("openrouter", "openai", "https://openrouter.ai/api/v1", ("OPENROUTER_API_KEY",)),
        ProviderSpec(
            "groq",
            "openai",
            "https://api.groq.com/openai/v1",
            ("GROQ_API_KEY",),
            max_tokens_field="max_completion_tokens",
        ),
        ProviderSpec(
            "xai", "openai", "https://api.x.ai/v1", ("XAI_API_KEY",), max_tokens_field="max_completion_tokens"
        ),
        ProviderSpec("deepseek", "openai", "https://api.deepseek.com", ("DEEPSEEK_API_KEY",)),
        ProviderSpec("mistral", "openai", "https://api.mistral.ai/v1", ("MISTRAL_API_KEY",)),
        ProviderSpec(
            "cerebras",
            "openai",
            "https://api.cerebras.ai/v1",
            ("CEREBRAS_API_KEY",),
            max_tokens_field="max_completion_tokens",
        ),
        ProviderSpec("together", "openai", "https://api.together.xyz/v1", ("TOGETHER_API_KEY",)),
        ProviderSpec("fireworks", "openai", "https://api.fireworks.ai/inference/v1", ("FIREWORKS_API_KEY",)),
        ProviderSpec("ollama", "openai", "http://localhost:11434/v1", ("OLLAMA_API_KEY",), key_required=False),
        ProviderSpec("lmstudio", "openai", "http://localhost:1234/v1", ("LMSTUDIO_API_KEY",), key_required=False),
        ProviderSpec("llama.cpp", "openai", None, ("LLAMA_API_KEY",), key_required=False),
        ProviderSpec("vllm", "openai", None, ("VLLM_API_KEY",), key_required=False),
    )
}

# Providers that Pi's model table describes with a usable endpoint; their key variables as Pi names them.
_TABLE_KEY_ENV: dict[str, str] = {
    "huggingface": "HF_TOKEN",
    "moonshotai": "MOONSHOT_API_KEY",
    "moonshotai-cn": "MOONSHOT_API_KEY",
    "zai": "ZAI_API_KEY",
    "minimax": "MINIMAX_API_KEY",
    "minimax-cn": "MINIMAX_CN_API_KEY",
    "kimi-coding": "KIMI_API_KEY",
    "opencode-go": "OPENCODE_API_KEY",
    "xiaomi": "XIAOMI_API_KEY",
    "xiaomi-token-plan-cn": "XIAOMI_TOKEN_PLAN_CN_API_KEY",
    "xiaomi-token-plan-ams": "XIAOMI_TOKEN_PLAN_AMS_API_KEY",
    "xiaomi-token-plan-sgp": "XIAOMI_TOKEN_PLAN_SGP_API_KEY",
}
_TABLE_APIS: dict[str, Protocol] = {"openai-completions": "openai", "anthropic-messages": "anthropic"}
# The APIs a models.json provider can name that picompact speaks.
_CONFIG_APIS: dict[str, Protocol] = {
    "openai-completions": "openai",
    "openai-responses": "openai-responses",
    "anthropic-messages": "anthropic",
    "google-generative-ai": "google",
}


@dataclass(frozen=True)
class ModelRef:
    """A resolved model: where to send requests, how, and which key to look for."""

    provider: str
    model_id: str
    protocol: Protocol
    base_url: str
    key_env: tuple[str, ...] = ()
    key_required: bool = True
    max_tokens_field: str = "max_tokens"
    info: ModelInfo | None = field(default=None, compare=False)  # from the model catalogue (pi_compact.pi.catalog)
    # From the provider's models.json entry, in Pi's config syntax ("$VAR", "!command", literal), resolved when
    # used: its ``apiKey``, its ``headers`` and the model's, and ``authHeader`` (send the key as a Bearer token).
    config_key: str | None = None
    config_headers: tuple[tuple[str, str], ...] = ()
    auth_header: bool = False
    # Where the choice came from ("--model", "session", PICOMPACT_MODEL), for messages only.
    source: str = field(default="", compare=False)

    @property
    def ref(self) -> str:
        return f"{self.provider}/{self.model_id}"


def supported_providers() -> list[str]:
    """Provider names that work without --base-url, then those that need it."""
    return sorted(PROVIDERS) + sorted(_TABLE_KEY_ENV)


def _default_key_env(provider: str) -> tuple[str, ...]:
    return (re.sub(r"[^A-Za-z0-9]+", "_", provider).upper().strip("_") + "_API_KEY",)


def _table_spec(provider: str, exact: ModelInfo | None) -> ProviderSpec | None:
    """A provider Pi's table knows with an OpenAI- or Anthropic-style endpoint (``exact``: the model asked for)."""
    if provider not in _TABLE_KEY_ENV:
        return None
    candidates = [exact] if exact is not None else []
    candidates += provider_models(provider)
    for entry in candidates:
        protocol = _TABLE_APIS.get(entry.api)
        if protocol and entry.base_url and "{" not in entry.base_url:
            return ProviderSpec(provider, protocol, entry.base_url, (_TABLE_KEY_ENV[provider],))
    return None


def _unknown_provider(provider: str) -> UsageError:
    local = [name for name, spec in PROVIDERS.items() if spec.base_url is None]
    message = (
        f"unknown provider {provider!r}; use one of {', '.join(supported_providers())}, a provider of "
        f"{models_json_path()} (pass --base-url for {', '.join(local)} or any other OpenAI-compatible server)"
    )
    if problems := models_json_warnings():  # the user's provider may be in a file Pi ignores
        message += " (note: " + "; ".join(problems) + ")"
    return UsageError(message)


def _config_spec(provider: str, model_id: str, info: ModelInfo | None, config: dict[str, Any]) -> ProviderSpec:
    """A provider that only models.json defines: its endpoint and API from the model's definition (``info``) or the
    provider's, its key from the entry's ``apiKey`` (Pi reads no environment variable for it)."""
    api = info.api if info is not None else config.get("api")
    url = info.base_url if info is not None else config.get("baseUrl")
    where = models_json_path()
    if not url or not api:
        raise UsageError(
            f"model {provider}/{model_id} is not defined in {where} (provider {provider!r} lists "
            f"{', '.join(m.id for m in provider_models(provider)) or 'no models'})"
        )
    protocol = _CONFIG_APIS.get(str(api))
    if protocol is None:
        raise UsageError(
            f"{provider}/{model_id} uses the {api!r} API ({where}); picompact speaks {', '.join(sorted(_CONFIG_APIS))}"
        )
    return ProviderSpec(provider, protocol, url, ())


def _config_headers(model_id: str, config: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    """The headers Pi sends for a models.json provider's model: the provider's, then the model's override, then
    the model's definition (later wins)."""
    headers: dict[str, str] = {}
    override = (config.get("modelOverrides") or {}).get(model_id) or {}
    definition = next((d for d in config.get("models") or [] if d.get("id") == model_id), None) or {}
    for source in (config.get("headers"), override.get("headers"), definition.get("headers")):
        if isinstance(source, dict):
            headers.update((k, v) for k, v in source.items() if isinstance(v, str))
    return tuple(headers.items())


def resolve_model(model: str | tuple[str, str], *, base_url: str | None = None, source: str = "") -> ModelRef:
    """Turn "provider/model-id" (and an optional user --base-url) into a `ModelRef`.

    A user base URL overrides the default and means the OpenAI protocol, unless the provider
    is anthropic or google (which keep their own).
    """
    provider, model_id = parse_model_ref(model) if isinstance(model, str) else model
    if not provider or not model_id:
        raise UsageError("a model needs both a provider and a model id (provider/model-id)")
    config = provider_config(provider)
    info = find_model(provider, model_id)
    spec = PROVIDERS.get(provider) or _table_spec(provider, info)
    if spec is None and config is not None:
        spec = _config_spec(provider, model_id, info, config)
    elif spec is not None and config is not None and isinstance(config.get("baseUrl"), str) and config["baseUrl"]:
        # models.json routes a built-in provider elsewhere (a proxy); its models and keys stay the same.
        spec = ProviderSpec(
            spec.name, spec.protocol, config["baseUrl"], spec.key_env, spec.key_required, spec.max_tokens_field
        )
    user_url = base_url.strip() if base_url and base_url.strip() else None
    if spec is None:
        if user_url is None:
            raise _unknown_provider(provider)
        spec = ProviderSpec(provider, "openai", None, _default_key_env(provider), key_required=False)
    if user_url is not None:
        protocol: Protocol = "anthropic" if provider == "anthropic" else "google" if provider == "google" else "openai"
        if provider not in PROVIDERS and config is not None:
            protocol = spec.protocol  # a models.json provider keeps the API it names
        url = user_url
        field_name = spec.max_tokens_field if protocol == spec.protocol else "max_tokens"
    elif spec.base_url is None:
        raise UsageError(
            f"provider {provider!r} needs --base-url (the address of your server, e.g. http://localhost:8000/v1)"
        )
    else:
        protocol, url, field_name = spec.protocol, spec.base_url, spec.max_tokens_field
        if protocol == "openai" and info is not None and info.api == "openai-responses":
            protocol = "openai-responses"  # as Pi sends it: OpenAI's own models, a few of xAI's
    return ModelRef(
        provider=provider,
        model_id=model_id,
        protocol=protocol,
        base_url=url.rstrip("/"),
        key_env=spec.key_env,
        key_required=spec.key_required,
        max_tokens_field=field_name,
        info=info,
        source=source,
        config_key=config["apiKey"] if config is not None and isinstance(config.get("apiKey"), str) else None,
        config_headers=_config_headers(model_id, config) if config is not None else (),
        auth_header=config.get("authHeader") is True if config is not None else False,
    )
