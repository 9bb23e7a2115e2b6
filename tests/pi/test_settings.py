"""Compaction settings resolve to the numbers Pi 1.6 would use (settings-manager.js rules)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pi_compact.errors import SettingsError
from pi_compact.pi.settings import (
    DEFAULT_KEEP_RECENT_TOKENS,
    DEFAULT_RESERVE_TOKENS,
    agent_dir,
    deep_merge,
    resolve_settings,
)

MODEL = ("some-provider", "big-model")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    (path / ".pi").mkdir(parents=True)
    return path


def write(path: Path, content: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return path


def global_settings(agent: Path, content: Any) -> Path:
    return write(agent / "settings.json", content)


def project_settings(project: Path, content: Any) -> Path:
    return write(project / ".pi" / "settings.json", content)


def test_defaults_without_settings_files(project: Path) -> None:
    settings = resolve_settings(project, MODEL)
    assert (settings.enabled, settings.reserve_tokens, settings.keep_recent_tokens) == (
        True,
        DEFAULT_RESERVE_TOKENS,
        DEFAULT_KEEP_RECENT_TOKENS,
    )
    assert set(settings.sources.values()) == {"default"}
    assert settings.warnings == ()


def test_project_settings_override_global_key_by_key(agent: Path, project: Path) -> None:
    gpath = global_settings(agent, {"compaction": {"reserveTokens": 1000, "keepRecentTokens": 2000}})
    ppath = project_settings(project, {"compaction": {"reserveTokens": 3000}})
    settings = resolve_settings(project, MODEL)
    assert settings.reserve_tokens == 3000
    assert settings.keep_recent_tokens == 2000
    assert settings.sources["reserve_tokens"].startswith(str(ppath))
    assert settings.sources["keep_recent_tokens"].startswith(str(gpath))


def test_model_override_applies_only_to_its_exact_key(agent: Path, project: Path) -> None:
    global_settings(
        agent,
        {
            "compaction": {
                "reserveTokens": 100,
                "modelOverrides": {"openrouter/anthropic/claude-x": {"reserveTokens": 7}},
            }
        },
    )
    assert resolve_settings(project, ("openrouter", "anthropic/claude-x")).reserve_tokens == 7
    assert resolve_settings(project, ("openrouter", "anthropic/Claude-X")).reserve_tokens == 100
    assert resolve_settings(project, ("openrouter/anthropic", "claude-y")).reserve_tokens == 100
    assert resolve_settings(project, None).reserve_tokens == 100


def test_each_token_value_falls_back_independently(agent: Path, project: Path) -> None:
    global_settings(agent, {"compaction": {"keepRecentTokens": 555, "modelOverrides": {"a/b": {"reserveTokens": 9}}}})
    settings = resolve_settings(project, ("a", "b"))
    assert settings.reserve_tokens == 9
    assert settings.keep_recent_tokens == 555
    assert 'modelOverrides["a/b"].reserveTokens' in settings.sources["reserve_tokens"]
    assert settings.sources["keep_recent_tokens"].endswith("compaction.keepRecentTokens")
    settings = resolve_settings(project, ("a", "b"), agent_dir=agent)
    assert (settings.reserve_tokens, settings.keep_recent_tokens) == (9, 555)


def test_files_merge_before_model_lookup(agent: Path, project: Path) -> None:
    # A global model-specific value beats a project-wide fallback (documented Pi behaviour) ...
    global_settings(agent, {"compaction": {"modelOverrides": {"a/b": {"reserveTokens": 11}}}})
    project_settings(project, {"compaction": {"reserveTokens": 22, "modelOverrides": {"a/c": {"reserveTokens": 33}}}})
    assert resolve_settings(project, ("a", "b")).reserve_tokens == 11
    assert resolve_settings(project, ("a", "c")).reserve_tokens == 33
    assert resolve_settings(project, ("a", "d")).reserve_tokens == 22
    # ... until the project overrides that model entry.
    project_settings(project, {"compaction": {"modelOverrides": {"a/b": {"reserveTokens": 44}}}})
    assert resolve_settings(project, ("a", "b")).reserve_tokens == 44


@pytest.mark.parametrize("bad", [-1, 1.5, "100", None, True, 2**53, [1], {"n": 1}])
def test_invalid_ordinary_value_is_an_error_naming_file_and_key(agent: Path, project: Path, bad: Any) -> None:
    path = project_settings(project, {"compaction": {"keepRecentTokens": bad}})
    with pytest.raises(SettingsError) as info:
        resolve_settings(project, MODEL)
    assert info.value.path == str(path)
    assert "compaction.keepRecentTokens" in str(info.value)


def test_integral_json_numbers_are_integers(agent: Path, project: Path) -> None:
    global_settings(agent, '{"compaction": {"reserveTokens": 1e3, "keepRecentTokens": 2.0}}')
    settings = resolve_settings(project, MODEL)
    assert (settings.reserve_tokens, settings.keep_recent_tokens) == (1000, 2)
    assert isinstance(settings.reserve_tokens, int)


def test_zero_is_allowed(agent: Path, project: Path) -> None:
    global_settings(agent, {"compaction": {"reserveTokens": 0, "keepRecentTokens": 0}})
    settings = resolve_settings(project, MODEL)
    assert (settings.reserve_tokens, settings.keep_recent_tokens) == (0, 0)


def test_invalid_ordinary_value_is_an_error_even_with_a_valid_override(agent: Path, project: Path) -> None:
    path = global_settings(
        agent, {"compaction": {"reserveTokens": -5, "modelOverrides": {"a/b": {"reserveTokens": 10}}}}
    )
    with pytest.raises(SettingsError) as info:
        resolve_settings(project, ("a", "b"))
    assert info.value.path == str(path)


def test_invalid_value_replaced_by_a_later_file_is_no_error(agent: Path, project: Path) -> None:
    global_settings(agent, {"compaction": {"reserveTokens": "lots"}})
    project_settings(project, {"compaction": {"reserveTokens": 123}})
    assert resolve_settings(project, MODEL).reserve_tokens == 123


def test_invalid_override_entry_and_value(agent: Path, project: Path) -> None:
    path = project_settings(project, {"compaction": {"modelOverrides": {"a/b": 5, "a/c": {"keepRecentTokens": -1}}}})
    with pytest.raises(SettingsError) as info:
        resolve_settings(project, ("a", "b"))
    assert info.value.path == str(path)
    assert 'compaction.modelOverrides["a/b"]' in str(info.value)
    with pytest.raises(SettingsError) as info:
        resolve_settings(project, ("a", "c"))
    assert 'compaction.modelOverrides["a/c"].keepRecentTokens' in str(info.value)
    # Entries for other models are not inspected.
    assert resolve_settings(project, ("a", "d")).keep_recent_tokens == DEFAULT_KEEP_RECENT_TOKENS


def test_malformed_settings_file_is_ignored_with_a_warning(agent: Path, project: Path) -> None:
    global_settings(agent, {"compaction": {"reserveTokens": 4321}})
    path = project_settings(project, '{"compaction": {"reserveTokens": 1,}}')
    settings = resolve_settings(project, MODEL)
    assert settings.reserve_tokens == 4321
    assert len(settings.warnings) == 1
    assert str(path) in settings.warnings[0]


@pytest.mark.parametrize("text", ["NaN", "null", "5", '"text"'])
def test_settings_file_that_is_not_an_object_is_ignored_with_a_warning(project: Path, text: str) -> None:
    path = project_settings(project, text)
    settings = resolve_settings(project, MODEL)
    assert settings.reserve_tokens == DEFAULT_RESERVE_TOKENS
    assert [w for w in settings.warnings if str(path) in w]


def test_bom_and_empty_settings_files(agent: Path, project: Path) -> None:
    global_settings(agent, '\ufeff{"compaction": {"keepRecentTokens": 77}}')
    project_settings(project, "")
    settings = resolve_settings(project, MODEL)
    assert settings.keep_recent_tokens == 77
    assert settings.warnings == ()


def test_enabled_setting(agent: Path, project: Path) -> None:
    project_settings(project, {"compaction": {"enabled": False}})
    settings = resolve_settings(project, MODEL)
    assert settings.enabled is False
    assert settings.sources["enabled"].endswith("compaction.enabled")
    project_settings(project, {"compaction": {"enabled": None}})
    assert resolve_settings(project, MODEL).enabled is True


def test_compaction_that_is_not_an_object_leaves_defaults(agent: Path, project: Path) -> None:
    global_settings(agent, {"compaction": {"reserveTokens": 1}})
    project_settings(project, {"compaction": "off"})
    settings = resolve_settings(project, MODEL)
    assert (settings.enabled, settings.reserve_tokens) == (True, DEFAULT_RESERVE_TOKENS)


def test_flags_win_over_files_and_model_overrides(agent: Path, project: Path) -> None:
    global_settings(agent, {"compaction": {"reserveTokens": 1, "modelOverrides": {"a/b": {"keepRecentTokens": 2}}}})
    settings = resolve_settings(project, ("a", "b"), reserve_tokens=30000, keep_recent_tokens=40000)
    assert (settings.reserve_tokens, settings.keep_recent_tokens) == (30000, 40000)
    assert settings.sources["reserve_tokens"] == "flag --reserve-tokens"
    assert settings.sources["keep_recent_tokens"] == "flag --keep-recent-tokens"


@pytest.mark.parametrize(
    ("kwargs", "flag"),
    [
        ({"reserve_tokens": -1}, "--reserve-tokens"),
        ({"keep_recent_tokens": 1.5}, "--keep-recent-tokens"),
        ({"reserve_tokens": True}, "--reserve-tokens"),
        ({"keep_recent_tokens": 2**53}, "--keep-recent-tokens"),
    ],
)
def test_invalid_flags_are_errors(project: Path, kwargs: dict[str, Any], flag: str) -> None:
    with pytest.raises(SettingsError, match=flag):
        resolve_settings(project, MODEL, **kwargs)


def test_agent_dir_honours_env_with_tilde(isolated_home: Path, monkeypatch: pytest.MonkeyPatch, project: Path) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", "~/custom-agent")
    assert agent_dir() == isolated_home / "custom-agent"
    global_settings(isolated_home / "custom-agent", {"compaction": {"reserveTokens": 999}})
    assert resolve_settings(project, MODEL).reserve_tokens == 999


def test_agent_dir_defaults_to_home(isolated_home: Path, monkeypatch: pytest.MonkeyPatch, project: Path) -> None:
    monkeypatch.delenv("PI_CODING_AGENT_DIR")
    assert agent_dir() == isolated_home / ".pi" / "agent"
    global_settings(isolated_home / ".pi" / "agent", {"compaction": {"keepRecentTokens": 3}})
    assert resolve_settings(project, MODEL).keep_recent_tokens == 3
    monkeypatch.setenv("PI_CODING_AGENT_DIR", "")
    assert agent_dir() == isolated_home / ".pi" / "agent"


def test_untrusted_project_settings_are_ignored(agent: Path, project: Path) -> None:
    project_settings(project, {"compaction": {"reserveTokens": 5}})
    write(agent / "trust.json", {str(project): False})
    settings = resolve_settings(project, MODEL)
    assert settings.reserve_tokens == DEFAULT_RESERVE_TOKENS
    assert any("not trusted" in w for w in settings.warnings)
    assert resolve_settings(project, MODEL, project_trusted=True).reserve_tokens == 5


def test_trust_decision_of_a_parent_directory_applies(agent: Path, project: Path) -> None:
    project_settings(project, {"compaction": {"reserveTokens": 5}})
    write(agent / "trust.json", {str(project): None, str(project.parent): True})
    assert resolve_settings(project, MODEL).reserve_tokens == 5
    assert resolve_settings(project, MODEL, project_trusted=False).reserve_tokens == DEFAULT_RESERVE_TOKENS


def test_default_project_trust_never(agent: Path, project: Path) -> None:
    global_settings(agent, {"defaultProjectTrust": "never"})
    project_settings(project, {"compaction": {"reserveTokens": 5}})
    assert resolve_settings(project, MODEL).reserve_tokens == DEFAULT_RESERVE_TOKENS
    write(agent / "trust.json", {str(project): True})
    assert resolve_settings(project, MODEL).reserve_tokens == 5


def test_deep_merge_replaces_arrays_and_scalars() -> None:
    base = {"a": {"x": 1, "y": [1, 2]}, "b": 1}
    merged = deep_merge(base, {"a": {"y": [3]}, "b": {"z": 2}})
    assert merged == {"a": {"x": 1, "y": [3]}, "b": {"z": 2}}
    assert base == {"a": {"x": 1, "y": [1, 2]}, "b": 1}


# --------------------------------------------------------------------------- nothing ignored silently; one range


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        ([], "a JSON array"),
        ({"compaction": 5}, "compaction is 5, not an object"),
        ({"compaction": []}, "compaction is [], not an object"),
        ({"compaction": {"modelOverrides": "x"}}, "compaction.modelOverrides"),
        ({"compaction": {"enabled": "no"}}, "compaction.enabled is no, not true or false; Pi reads it as on"),
    ],
)
def test_values_of_the_wrong_shape_are_warned_with_file_and_key(
    agent: Path, project: Path, content: Any, needle: str
) -> None:
    path = global_settings(agent, content)
    settings = resolve_settings(project, MODEL)
    defaults = (DEFAULT_RESERVE_TOKENS, DEFAULT_KEEP_RECENT_TOKENS)
    assert (settings.reserve_tokens, settings.keep_recent_tokens) == defaults
    assert any(w.startswith(str(path)) and needle in w for w in settings.warnings), settings.warnings


@pytest.mark.parametrize("value", [100_000_001, 99_999_999_999])
def test_file_values_have_the_flag_range(agent: Path, project: Path, value: int) -> None:
    path = global_settings(agent, {"compaction": {"reserveTokens": value}})
    with pytest.raises(SettingsError, match="at most 100,000,000") as info:
        resolve_settings(project, MODEL)
    assert info.value.path == str(path)
    with pytest.raises(SettingsError, match="from 0 to 100,000,000"):
        resolve_settings(project, MODEL, reserve_tokens=value)
    global_settings(agent, {"compaction": {"reserveTokens": 100_000_000}})
    assert (
        resolve_settings(project, MODEL).reserve_tokens
        == resolve_settings(project, MODEL, reserve_tokens=100_000_000).reserve_tokens
    )


@pytest.mark.parametrize(
    "models",
    [
        "{ not json",
        {"providers": {"anthropic": {"models": [{"id": "m1", "contextWindow": "big"}]}}},
    ],
)
def test_an_ignored_models_json_is_warned(agent: Path, tmp_path: Path, models: Any) -> None:
    from pi_compact.ops.check import CheckOptions, check_session
    from tests.helpers.sessions import simple_session

    path = write(agent / "models.json", models)
    session = simple_session(turns=1).write(tmp_path / "s.jsonl")
    result = check_session(session, CheckOptions())
    assert any(str(path) in w and "Pi ignores it" in w for w in result.warnings), result.warnings


@pytest.mark.parametrize("name", ["settings.json", "models.json"])
def test_a_fifo_for_a_settings_file_is_warned_not_waited_on(agent: Path, tmp_path: Path, name: str) -> None:
    import os

    from pi_compact.ops.check import CheckOptions, check_session
    from tests.helpers.sessions import simple_session

    os.mkfifo(agent / name)  # reading it would block forever
    session = simple_session(turns=1).write(tmp_path / "s.jsonl")
    result = check_session(session, CheckOptions())
    assert any(str(agent / name) in w and "not a regular file" in w for w in result.warnings), result.warnings
