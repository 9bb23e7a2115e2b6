"""Model references, provider defaults and the choice of model."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pi_compact.errors import UsageError
from pi_compact.llm import choose_model, parse_model_ref, resolve_model
from pi_compact.llm.providers import PROVIDERS


def test_parse_model_ref_splits_on_first_slash() -> None:
    assert parse_model_ref("openrouter/anthropic/claude-3.5-sonnet") == ("openrouter", "anthropic/claude-3.5-sonnet")
    assert parse_model_ref("anthropic/claude-sonnet-4-5") == ("anthropic", "claude-sonnet-4-5")


@pytest.mark.parametrize("bad", ["gpt-4o", "openai/", "/gpt-4o", ""])
def test_parse_model_ref_rejects_incomplete(bad: str) -> None:
    with pytest.raises(UsageError, match="provider/model-id"):
        parse_model_ref(bad)


@pytest.mark.parametrize(
    ("provider", "protocol", "base_url", "key_var"),
    [
        ("openai", "openai", "https://api.openai.com/v1", "OPENAI_API_KEY"),
        ("anthropic", "anthropic", "https://api.anthropic.com", "ANTHROPIC_API_KEY"),
        ("openrouter", "openai", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
        ("groq", "openai", "https://api.groq.com/openai/v1", "GROQ_API_KEY"),
        ("deepseek", "openai", "https://api.deepseek.com", "DEEPSEEK_API_KEY"),
    ],
)
def test_known_provider_defaults(provider: str, protocol: str, base_url: str, key_var: str) -> None:
    ref = resolve_model(f"{provider}/some-model")
    assert (ref.protocol, ref.base_url, ref.key_env, ref.key_required) == (protocol, base_url, (key_var,), True)


@pytest.mark.parametrize(
    ("provider", "url"), [("ollama", "http://localhost:11434/v1"), ("lmstudio", "http://localhost:1234/v1")]
)
def test_local_servers_need_no_key(provider: str, url: str) -> None:
    ref = resolve_model(f"{provider}/qwen2.5-coder:7b")
    assert ref.base_url == url
    assert ref.key_required is False
    assert ref.model_id == "qwen2.5-coder:7b"


@pytest.mark.parametrize("provider", ["llama.cpp", "vllm"])
def test_servers_without_default_url_require_base_url(provider: str) -> None:
    with pytest.raises(UsageError, match="--base-url"):
        resolve_model(f"{provider}/my-model")
    ref = resolve_model(f"{provider}/my-model", base_url="http://127.0.0.1:8080/v1/")
    assert ref.base_url == "http://127.0.0.1:8080/v1"
    assert ref.protocol == "openai"
    assert ref.key_required is False


def test_base_url_overrides_default_and_implies_openai_protocol() -> None:
    ref = resolve_model("openai/gpt-4.1", base_url="http://proxy.local/v1")
    assert (ref.protocol, ref.base_url) == ("openai", "http://proxy.local/v1")
    anthropic = resolve_model("anthropic/claude-haiku-4-5", base_url="http://proxy.local")
    assert (anthropic.protocol, anthropic.base_url) == ("anthropic", "http://proxy.local")
    assert anthropic.key_env == ("ANTHROPIC_API_KEY",)


def test_unknown_provider_with_base_url_speaks_openai() -> None:
    ref = resolve_model("my-gateway/some-model", base_url="http://127.0.0.1:9000/v1")
    assert ref.protocol == "openai"
    assert ref.key_required is False
    assert ref.key_env == ("MY_GATEWAY_API_KEY",)


def test_unknown_provider_without_base_url_lists_what_works() -> None:
    with pytest.raises(UsageError) as info:
        resolve_model("nosuchprovider/x")
    message = str(info.value)
    assert "nosuchprovider" in message
    for name in ("openai", "anthropic", "ollama", "openrouter"):
        assert name in message
    assert "--base-url" in message


def test_table_gives_output_limit_and_prices() -> None:
    rows = json.loads((Path(__file__).parents[2] / "pi_compact" / "data" / "pi-models.json").read_text())
    row = next(r for r in rows if r["provider"] == "anthropic")
    ref = resolve_model(f"anthropic/{row['id']}")
    assert ref.info is not None
    assert ref.info.max_tokens == row["maxTokens"]
    assert ref.info.input_cost == row["cost"]["input"]
    assert resolve_model("anthropic/not-a-real-model").info is None


def test_a_window_set_in_models_json_reaches_the_resolved_model(agent: Path) -> None:
    """lookup and summary mode size their requests by ``ModelRef.info``: the same catalogue check reads."""
    from pi_compact.pi.catalog import find_model

    (agent / "models.json").write_text(
        json.dumps({"providers": {"openai": {"modelOverrides": {"gpt-4.1-mini": {"contextWindow": 12345}}}}})
    )
    ref = resolve_model("openai/gpt-4.1-mini")
    assert ref.info is not None and ref.info.context_window == 12345
    assert ref.info == find_model("openai", "gpt-4.1-mini")


def test_provider_known_only_to_the_table_uses_its_endpoint() -> None:
    rows = json.loads((Path(__file__).parents[2] / "pi_compact" / "data" / "pi-models.json").read_text())
    row = next(r for r in rows if r["provider"] == "moonshotai" and r["api"] == "openai-completions")
    ref = resolve_model(f"moonshotai/{row['id']}")
    assert (ref.protocol, ref.base_url) == ("openai", row["baseUrl"].rstrip("/"))
    assert ref.key_env == ("MOONSHOT_API_KEY",)


def test_openai_uses_max_completion_tokens_and_others_max_tokens() -> None:
    assert resolve_model("openai/gpt-4.1").max_tokens_field == "max_completion_tokens"
    assert resolve_model("ollama/llama3").max_tokens_field == "max_tokens"
    assert set(PROVIDERS) >= {
        "openai",
        "anthropic",
        "openrouter",
        "groq",
        "xai",
        "deepseek",
        "mistral",
        "cerebras",
        "together",
        "fireworks",
        "ollama",
        "lmstudio",
        "llama.cpp",
        "vllm",
    }


# --- choose_model ---------------------------------------------------------------------------------


def _env(agent_dir: Path, **extra: str) -> dict[str, str]:
    return {"PI_CODING_AGENT_DIR": str(agent_dir), "HOME": str(agent_dir.parent), **extra}


def test_cli_model_wins(agent_dir: Path) -> None:
    env = _env(agent_dir, OPENAI_API_KEY="sk-x", PICOMPACT_MODEL="groq/llama")
    ref = choose_model(("openai", "gpt-4.1"), "anthropic/claude-haiku-4-5", env)
    assert (ref.provider, ref.model_id, ref.source) == ("anthropic", "claude-haiku-4-5", "--model")


def test_session_model_used_when_its_key_is_available(agent_dir: Path) -> None:
    env = _env(agent_dir, OPENAI_API_KEY="sk-x", PICOMPACT_MODEL="groq/llama")
    ref = choose_model(("openai", "gpt-4.1"), None, env)
    assert (ref.ref, ref.source) == ("openai/gpt-4.1", "session")


def test_session_model_key_from_auth_file_counts(agent_dir: Path) -> None:
    (agent_dir / "auth.json").write_text(json.dumps({"anthropic": {"type": "api_key", "key": "sk-ant-file"}}))
    ref = choose_model(("anthropic", "claude-haiku-4-5"), None, _env(agent_dir, PICOMPACT_MODEL="groq/llama"))
    assert ref.ref == "anthropic/claude-haiku-4-5"


def test_session_model_without_key_falls_back_to_env_model(agent_dir: Path) -> None:
    ref = choose_model(("openai", "gpt-4.1"), None, _env(agent_dir, PICOMPACT_MODEL="groq/llama-3.3"))
    assert (ref.ref, ref.source) == ("groq/llama-3.3", "PICOMPACT_MODEL")


def test_session_oauth_only_login_is_not_a_key(agent_dir: Path) -> None:
    auth = {"anthropic": {"type": "oauth", "access": "a", "refresh": "r", "expires": 1}}
    (agent_dir / "auth.json").write_text(json.dumps(auth))
    ref = choose_model(("anthropic", "claude-haiku-4-5"), None, _env(agent_dir, PICOMPACT_MODEL="ollama/llama3"))
    assert ref.ref == "ollama/llama3"


def test_session_model_of_keyless_local_server_is_used(agent_dir: Path) -> None:
    ref = choose_model(("ollama", "qwen3:8b"), None, _env(agent_dir, PICOMPACT_MODEL="groq/llama"))
    assert ref.ref == "ollama/qwen3:8b"


def test_unsupported_session_provider_is_skipped(agent_dir: Path) -> None:
    ref = choose_model(("openai-codex", "gpt-5"), None, _env(agent_dir, PICOMPACT_MODEL="ollama/llama3"))
    assert ref.ref == "ollama/llama3"


def test_no_model_anywhere_explains_the_three_ways(agent_dir: Path) -> None:
    with pytest.raises(UsageError) as info:
        choose_model(("openai", "gpt-4.1"), None, _env(agent_dir))
    message = str(info.value)
    assert "--model" in message
    assert "PICOMPACT_MODEL" in message
    assert "session" in message
    assert "openai/gpt-4.1" in message and "OPENAI_API_KEY" in message
    with pytest.raises(UsageError, match="PICOMPACT_MODEL"):
        choose_model(None, None, _env(agent_dir))


def test_base_url_applies_to_the_chosen_model(agent_dir: Path) -> None:
    ref = choose_model(None, "llama.cpp/qwen", _env(agent_dir), base_url="http://127.0.0.1:8080/v1")
    assert ref.base_url == "http://127.0.0.1:8080/v1"
