"""API keys from the environment and Pi's auth.json, and that they never show."""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer

from pi_compact.errors import SettingsError, UsageError
from pi_compact.llm import Message, Request, Secret, complete, find_api_key, require_api_key, resolve_model
from pi_compact.llm.choice import choose_model_and_key, has_api_key, key_source, model_available
from pi_compact.llm.keys import agent_dir, auth_file, redact

SECRET_TEXT = "sk-live-7f3a9c1d2e"


def _write_auth(agent: Path, data: object) -> None:
    (agent / "auth.json").write_text(json.dumps(data))


def test_secret_never_shows_itself() -> None:
    secret = Secret(SECRET_TEXT)
    for shown in (str(secret), repr(secret), f"{secret}", f"{secret!r}", str([secret]), str({"k": secret})):
        assert SECRET_TEXT not in shown
    assert secret.reveal() == SECRET_TEXT
    assert secret == Secret(SECRET_TEXT)
    assert secret != Secret("other")
    with pytest.raises(TypeError):
        pickle.dumps(secret)


def test_redact_masks_every_occurrence() -> None:
    text = f"bad key {SECRET_TEXT}; again {SECRET_TEXT}"
    assert SECRET_TEXT not in redact(text, Secret(SECRET_TEXT))


def test_key_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET_TEXT)
    key = find_api_key(resolve_model("openai/gpt-4.1"))
    assert key is not None and key.reveal() == SECRET_TEXT


def test_key_from_auth_file(agent_dir: Path) -> None:
    _write_auth(agent_dir, {"anthropic": {"type": "api_key", "key": SECRET_TEXT}})
    key = require_api_key(resolve_model("anthropic/claude-haiku-4-5"))
    assert key is not None and key.reveal() == SECRET_TEXT


def test_auth_file_wins_over_environment_as_in_pi(agent_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write_auth(agent_dir, {"openai": {"type": "api_key", "key": "sk-from-file"}})
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    for key in (find_api_key(resolve_model("openai/gpt-4.1")), require_api_key(resolve_model("openai/gpt-4.1"))):
        assert key is not None and key.reveal() == "sk-from-file"
        assert key.source == str(agent_dir / "auth.json")


def test_environment_is_used_when_auth_file_has_no_usable_key(agent_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write_auth(agent_dir, {"openai": {"type": "oauth", "access": "x", "refresh": "r", "expires": 1}})
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    key = require_api_key(resolve_model("openai/gpt-4.1"))
    assert key is not None and key.reveal() == "sk-from-env" and key.source == "OPENAI_API_KEY"
    assert "sk-from-env" not in repr(key) + str(key) + key.source


def test_auth_file_key_may_name_an_environment_variable(agent_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write_auth(
        agent_dir,
        {
            "groq": {"type": "api_key", "key": "${MY_GROQ}"},
            "xai": {"type": "api_key", "key": "pre-$INNER", "env": {"INNER": "fromentry"}},
            "mistral": {"type": "api_key", "key": "lit$$eral"},
        },
    )
    monkeypatch.setenv("MY_GROQ", "gsk-123")
    assert find_api_key(resolve_model("groq/llama")).reveal() == "gsk-123"  # type: ignore[union-attr]
    assert find_api_key(resolve_model("xai/grok")).reveal() == "pre-fromentry"  # type: ignore[union-attr]
    assert find_api_key(resolve_model("mistral/m")).reveal() == "lit$eral"  # type: ignore[union-attr]


def test_auth_file_key_may_be_a_command(agent_dir: Path) -> None:
    _write_auth(agent_dir, {"deepseek": {"type": "api_key", "key": "!printf '  sk-cmd-out\\n'"}})
    assert find_api_key(resolve_model("deepseek/chat")).reveal() == "sk-cmd-out"  # type: ignore[union-attr]


def test_unset_variable_in_auth_file_is_no_key(agent_dir: Path) -> None:
    _write_auth(agent_dir, {"groq": {"type": "api_key", "key": "$NOT_SET_ANYWHERE"}})
    with pytest.raises(UsageError, match="did not resolve"):
        require_api_key(resolve_model("groq/llama"))


def test_missing_key_says_where_to_put_one(agent_dir: Path) -> None:
    with pytest.raises(UsageError) as info:
        require_api_key(resolve_model("openai/gpt-4.1"))
    assert "OPENAI_API_KEY" in str(info.value)
    assert str(agent_dir / "auth.json") in str(info.value)


def test_oauth_login_is_out_of_scope_and_says_so(agent_dir: Path) -> None:
    _write_auth(agent_dir, {"anthropic": {"type": "oauth", "access": SECRET_TEXT, "refresh": "r", "expires": 1}})
    with pytest.raises(UsageError) as info:
        require_api_key(resolve_model("anthropic/claude-haiku-4-5"))
    assert "OAuth" in str(info.value)
    assert SECRET_TEXT not in str(info.value)


def test_keyless_server_needs_no_key() -> None:
    assert require_api_key(resolve_model("ollama/llama3")) is None


def test_broken_auth_file_is_reported_without_its_contents(agent_dir: Path) -> None:
    (agent_dir / "auth.json").write_text('{"openai": {"type": "api_key", "key": "' + SECRET_TEXT + '"')
    with pytest.raises(SettingsError) as info:
        find_api_key(resolve_model("openai/gpt-4.1"))
    assert "auth.json" in str(info.value)
    assert SECRET_TEXT not in str(info.value)
    assert info.value.__cause__ is None


def test_agent_dir_defaults_to_home_and_expands_tilde(tmp_path: Path) -> None:
    assert agent_dir({"HOME": str(tmp_path)}) == tmp_path / ".pi" / "agent"
    assert auth_file({"HOME": str(tmp_path), "PI_CODING_AGENT_DIR": "~/pi"}) == tmp_path / "pi" / "auth.json"


def test_a_run_key_comes_first_like_pis_api_key_flag(agent_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write_auth(agent_dir, {"openai": {"type": "api_key", "key": "sk-from-file"}})
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    monkeypatch.setenv("PICOMPACT_API_KEY", "sk-for-this-run")
    for key in (find_api_key(resolve_model("openai/gpt-4.1")), require_api_key(resolve_model("openai/gpt-4.1"))):
        assert key is not None and key.reveal() == "sk-for-this-run" and key.source == "PICOMPACT_API_KEY"


# A key bound to its provider (PICOMPACT_API_KEY_PROVIDER): the Pi extension passes the key Pi resolved for the
# session's provider so, and a model of another provider must neither use it nor send it.
PI_KEY = "sk-pi-resolved-for-google-5b1e"


def _bound(monkeypatch: pytest.MonkeyPatch, provider: str = "google") -> None:
    monkeypatch.setenv("PICOMPACT_API_KEY", PI_KEY)
    monkeypatch.setenv("PICOMPACT_API_KEY_PROVIDER", provider)


def test_a_bound_run_key_is_used_for_a_model_of_its_provider(agent_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _write_auth(agent_dir, {"google": {"type": "api_key", "key": "!exit 1"}})  # never run: the run key comes first
    monkeypatch.setenv("GEMINI_API_KEY", "gm-from-env")
    _bound(monkeypatch)
    model = resolve_model("google/gemini-2.5-flash")
    for key in (find_api_key(model), require_api_key(model)):
        assert key is not None and key.reveal() == PI_KEY and key.source == "PICOMPACT_API_KEY"
    assert key_source(model) == "PICOMPACT_API_KEY"
    assert choose_model_and_key(("google", "gemini-2.5-flash"), None, os.environ)[1] == Secret(PI_KEY)


def test_a_bound_run_key_is_not_used_for_another_providers_model(
    agent_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The other provider's model finds its own key, in the order it would without the run key."""
    _bound(monkeypatch)
    openai = resolve_model("openai/gpt-4.1")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-from-env")
    key = require_api_key(openai)
    assert key is not None and key.reveal() == "sk-openai-from-env" and key.source == "OPENAI_API_KEY"
    _write_auth(agent_dir, {"openai": {"type": "api_key", "key": "sk-openai-from-file"}})
    key = find_api_key(openai)
    assert key is not None and key.reveal() == "sk-openai-from-file"
    # The lookup model of settings: another provider's, with its own key.
    model, key = choose_model_and_key(("google", "gemini-2.5-flash"), "openai/gpt-4.1", os.environ)
    assert model.provider == "openai" and key is not None and key.reveal() == "sk-openai-from-file"


def test_a_bound_run_key_gives_another_provider_no_key_and_is_not_in_the_error(
    agent_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No key of its own: the other provider has none (so context_lookup is not offered with that lookup model), and
    the message says where to put one, without the run key."""
    _bound(monkeypatch)
    openai = resolve_model("openai/gpt-4.1")
    assert find_api_key(openai) is None and not has_api_key(openai) and key_source(openai) is None
    assert not model_available(("google", "gemini-2.5-flash"), "openai/gpt-4.1")
    assert model_available(("google", "gemini-2.5-flash"), None)
    with pytest.raises(UsageError) as info:
        require_api_key(openai)
    assert "OPENAI_API_KEY" in str(info.value) and PI_KEY not in str(info.value)
    # The session's model of another provider is not picked with it either: PICOMPACT_MODEL is next.
    monkeypatch.setenv("PICOMPACT_MODEL", "google/gemini-2.5-flash")
    model, key = choose_model_and_key(("openai", "gpt-4.1"), None, os.environ)
    assert model.ref == "google/gemini-2.5-flash" and key == Secret(PI_KEY)


def test_an_empty_provider_binds_nothing(agent_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _bound(monkeypatch, provider=" ")
    key = find_api_key(resolve_model("openai/gpt-4.1"))
    assert key is not None and key.reveal() == PI_KEY


def test_another_providers_request_carries_its_own_key_not_the_bound_one(
    server: HTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    _bound(monkeypatch)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-own-key")
    server.expect_request("/v1/chat/completions").respond_with_json(
        {"choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]}
    )
    complete(
        Request([Message.user("hi")], max_tokens=8),
        model=resolve_model("openai/gpt-4.1", base_url=server.url_for("/v1")),
    )
    ((sent, _),) = server.log
    assert sent.headers["Authorization"] == "Bearer sk-openai-own-key"
    assert PI_KEY not in str(sent.headers) + sent.get_data(as_text=True)


def test_a_key_helper_does_not_see_a_bound_run_key(agent_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Another provider's key helper runs in the environment Pi would run it in: without the key Pi passed."""
    _bound(monkeypatch)
    _write_auth(agent_dir, {"openai": {"type": "api_key", "key": '!printf "sk-%s" "${PICOMPACT_API_KEY:-none}"'}})
    key = find_api_key(resolve_model("openai/gpt-4.1"))
    assert key is not None and key.reveal() == "sk-none"
