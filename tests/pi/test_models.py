"""Context windows come from Pi's model table, composed with models.json as Pi composes them."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

from pi_compact.errors import SettingsError
from pi_compact.pi.catalog import (
    CUSTOM_CONTEXT_WINDOW,
    CUSTOM_MAX_TOKENS,
    find_model,
    model_catalog,
    resolve_context_window,
    strip_json_comments,
)


def table() -> list[dict[str, Any]]:
    return json.loads(resources.files("pi_compact").joinpath("data/pi-models.json").read_text("utf-8"))


def a_builtin() -> dict[str, Any]:
    """The first bundled model whose provider has other models too."""
    rows = table()
    for row in rows:
        if sum(r["provider"] == row["provider"] for r in rows) > 1:
            return row
    raise AssertionError("no suitable model in the bundled table")


def models_json(agent: Path, content: Any) -> Path:
    path = agent / "models.json"
    path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return path


def test_bundled_table_loads_every_model() -> None:
    rows = table()
    catalog = model_catalog()
    assert len(catalog.models) == len({(r["provider"], r["id"]) for r in rows})
    assert catalog.errors == ()


def test_one_model_read_alone_is_the_row_of_the_whole_table() -> None:
    # check reads only its model's row from the table's bytes; every row must come out as the full parse has it.
    from pi_compact.pi.catalog import _builtin_row, builtin_rows

    rows = builtin_rows()
    for (provider, model_id), row in rows.items():
        assert _builtin_row(provider, model_id) == row
    assert _builtin_row("no-such-provider", "no-such-model") is None


def test_builtin_model_fields() -> None:
    row = a_builtin()
    info = find_model(row["provider"], row["id"])
    assert info is not None
    assert (info.name, info.context_window, info.max_tokens, info.api, info.base_url) == (
        row["name"],
        row["contextWindow"],
        row["maxTokens"],
        row["api"],
        row["baseUrl"],
    )
    assert (info.input_cost, info.output_cost) == (row["cost"]["input"], row["cost"]["output"])
    key = f"{row['provider']}/{row['id']}"
    assert resolve_context_window(flag=None, model=(row["provider"], row["id"])) == (
        row["contextWindow"],
        f"model table ({key})",
    )


def test_flag_wins_and_must_be_positive() -> None:
    row = a_builtin()
    assert resolve_context_window(flag=12345, model=(row["provider"], row["id"])) == (12345, "flag")
    assert resolve_context_window(flag=500, model=None) == (500, "flag")
    for bad in (0, -1, True, 2.5):
        with pytest.raises(SettingsError, match="--context-window"):
            resolve_context_window(flag=bad, model=None)  # type: ignore[arg-type]


def test_unknown_model_asks_for_the_flag_and_names_the_model() -> None:
    assert find_model("nobody", "nothing-9") is None
    with pytest.raises(SettingsError) as info:
        resolve_context_window(flag=None, model=("nobody", "nothing-9"))
    assert "nobody/nothing-9" in str(info.value)
    assert "--context-window" in str(info.value)


def test_no_model_asks_for_the_flag() -> None:
    with pytest.raises(SettingsError, match="--context-window"):
        resolve_context_window(flag=None, model=None)


def test_custom_provider_models_get_pi_defaults(agent: Path) -> None:
    models_json(
        agent,
        {
            "providers": {
                "ollama": {
                    "baseUrl": "http://localhost:11434/v1",
                    "api": "openai-completions",
                    "apiKey": "ollama",
                    "models": [{"id": "qwen2.5-coder:7b"}, {"id": "big", "contextWindow": 262144, "maxTokens": 9}],
                }
            }
        },
    )
    small = find_model("ollama", "qwen2.5-coder:7b")
    assert small is not None
    assert (small.context_window, small.max_tokens, small.name) == (
        CUSTOM_CONTEXT_WINDOW,
        CUSTOM_MAX_TOKENS,
        "qwen2.5-coder:7b",
    )
    assert (small.base_url, small.api, small.input_cost) == ("http://localhost:11434/v1", "openai-completions", 0)
    assert resolve_context_window(flag=None, model=("ollama", "big")) == (262144, "models.json (ollama/big)")


def test_models_json_replaces_a_builtin_model_and_reroutes_the_provider(agent: Path) -> None:
    row = a_builtin()
    provider = row["provider"]
    others = [r for r in table() if r["provider"] == provider and r["id"] != row["id"]]
    models_json(
        agent,
        {
            "providers": {
                provider: {"baseUrl": "https://proxy.example/v1", "models": [{"id": row["id"], "contextWindow": 4321}]}
            }
        },
    )
    replaced = find_model(provider, row["id"])
    assert replaced is not None
    assert replaced.context_window == 4321
    assert replaced.api == row["api"]  # inherited from the built-in model with the same id
    assert resolve_context_window(flag=None, model=(provider, row["id"]))[1] == f"models.json ({provider}/{row['id']})"
    untouched = find_model(provider, others[0]["id"])
    assert untouched is not None
    assert untouched.context_window == others[0]["contextWindow"]
    assert untouched.base_url == "https://proxy.example/v1"
    assert untouched.source == "model table"


def test_model_overrides_patch_builtin_metadata(agent: Path) -> None:
    row = a_builtin()
    provider = row["provider"]
    other = next(r for r in table() if r["provider"] == provider and r["id"] != row["id"])
    models_json(
        agent,
        {
            "providers": {
                provider: {
                    "modelOverrides": {
                        row["id"]: {"contextWindow": 1_000_000, "cost": {"input": 99}},
                        other["id"]: {"maxTokens": 7},
                        "no-such-model": {"contextWindow": 5},
                    }
                }
            }
        },
    )
    info = find_model(provider, row["id"])
    assert info is not None
    assert (info.context_window, info.input_cost, info.output_cost) == (1_000_000, 99, row["cost"]["output"])
    assert resolve_context_window(flag=None, model=(provider, row["id"]))[1].startswith("models.json")
    patched = find_model(provider, other["id"])
    assert patched is not None
    assert (patched.max_tokens, patched.context_window) == (7, other["contextWindow"])
    assert resolve_context_window(flag=None, model=(provider, other["id"]))[1].startswith("model table")
    assert find_model(provider, "no-such-model") is None


def test_comments_and_trailing_commas_are_accepted(agent: Path) -> None:
    models_json(
        agent,
        """{
          // local models
          "providers": {
            "lm": {"baseUrl": "http://h//x", "api": "openai-completions",
                   "models": [{"id": "m", "contextWindow": 64000},],},
          },
        }""",
    )
    info = find_model("lm", "m")
    assert info is not None
    assert (info.context_window, info.base_url) == (64000, "http://h//x")


def test_strip_json_comments_keeps_string_contents() -> None:
    text = '{"a": "// not a comment, }", "b": [1, 2, ], } // end'
    assert json.loads(strip_json_comments(text)) == {"a": "// not a comment, }", "b": [1, 2]}


@pytest.mark.parametrize(
    "content",
    [
        "{not json",
        {"providers": {"lm": {"baseUrl": "http://h", "api": "x", "models": [{"id": "m", "contextWindow": 0}]}}},
        {"providers": {"lm": {"baseUrl": "http://h", "api": "x", "models": [{"id": ""}]}}},
        {"providers": []},
        {"other": 1},
    ],
)
def test_invalid_models_json_is_ignored_as_a_whole(agent: Path, content: Any) -> None:
    path = models_json(agent, content)
    assert find_model("lm", "m") is None
    row = a_builtin()
    assert find_model(row["provider"], row["id"]) is not None
    with pytest.raises(SettingsError) as info:
        resolve_context_window(flag=None, model=("lm", "m"))
    assert str(path) in str(info.value)


def test_a_provider_that_cannot_be_composed_keeps_its_builtins(agent: Path) -> None:
    row = a_builtin()
    models_json(
        agent,
        {
            "providers": {
                "nourl": {"api": "openai-completions", "models": [{"id": "m"}]},
                row["provider"]: {"api": "openai-completions"},
                "fine": {"baseUrl": "http://h", "api": "openai-completions", "models": [{"id": "m"}]},
            }
        },
    )
    catalog = model_catalog()
    assert find_model("nourl", "m") is None
    assert find_model("fine", "m") is not None
    builtin = find_model(row["provider"], row["id"])
    assert builtin is not None
    assert (builtin.context_window, builtin.base_url, builtin.api) == (row["contextWindow"], row["baseUrl"], row["api"])
    assert len(catalog.errors) == 2
    assert any('"nourl"' in e and "baseUrl" in e for e in catalog.errors)


def test_catalog_follows_edits_to_models_json(agent: Path) -> None:
    models_json(agent, {"providers": {"lm": {"baseUrl": "http://h", "api": "a", "models": [{"id": "m"}]}}})
    assert find_model("lm", "m") is not None
    models_json(agent, {"providers": {"lm": {"baseUrl": "http://h", "api": "a", "models": [{"id": "renamed-model"}]}}})
    assert find_model("lm", "m") is None
    assert find_model("lm", "renamed-model") is not None


def test_models_json_location_follows_agent_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    other = tmp_path / "elsewhere"
    other.mkdir()
    models_json(other, {"providers": {"lm": {"baseUrl": "http://h", "api": "a", "models": [{"id": "m"}]}}})
    assert find_model("lm", "m") is None
    assert find_model("lm", "m", agent_dir=other) is not None
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(other))
    assert find_model("lm", "m") is not None


def store(agent: Path, content: Any) -> None:
    (agent / "models-store.json").write_text(json.dumps(content), encoding="utf-8")


def stored_model(provider: str, model_id: str, window: int) -> dict[str, Any]:
    return {
        "id": model_id,
        "name": model_id,
        "api": "openai-completions",
        "provider": provider,
        "baseUrl": "https://example.invalid",
        "contextWindow": window,
        "maxTokens": 1000,
        "cost": {"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0},
    }


def test_newer_refreshed_catalog_overlays_the_builtins(agent: Path) -> None:
    row = a_builtin()
    provider = row["provider"]
    fresh = 2_000_000_000_000  # later than Pi 1.6's bundled model data
    store(
        agent,
        {
            provider: {
                "models": [stored_model(provider, row["id"], 777), stored_model(provider, "new-one", 888)],
                "lastModified": fresh,
                "checkedAt": fresh,
            }
        },
    )
    assert resolve_context_window(flag=None, model=(provider, row["id"])) == (
        777,
        f"models-store.json ({provider}/{row['id']})",
    )
    assert resolve_context_window(flag=None, model=(provider, "new-one"))[0] == 888
    other = next(r for r in table() if r["provider"] == provider and r["id"] != row["id"])
    assert resolve_context_window(flag=None, model=(provider, other["id"]))[0] == other["contextWindow"]
    # models.json still has the last word.
    models_json(agent, {"providers": {provider: {"modelOverrides": {"new-one": {"contextWindow": 999}}}}})
    assert resolve_context_window(flag=None, model=(provider, "new-one")) == (999, f"models.json ({provider}/new-one)")


def test_stale_refreshed_catalog_is_not_used(agent: Path) -> None:
    row = a_builtin()
    provider = row["provider"]
    store(agent, {provider: {"models": [stored_model(provider, row["id"], 777)], "lastModified": 1_000_000_000_000}})
    assert resolve_context_window(flag=None, model=(provider, row["id"]))[0] == row["contextWindow"]
    store(agent, {provider: {"models": [stored_model(provider, row["id"], 777)]}})
    assert resolve_context_window(flag=None, model=(provider, row["id"]))[0] == row["contextWindow"]


def test_personalized_openrouter_list_replaces_the_builtins(agent: Path) -> None:
    builtin = next(r for r in table() if r["provider"] == "openrouter")
    store(agent, {"openrouter": {"models": [stored_model("openrouter", "only/this", 4096)], "checkedAt": 1}})
    assert find_model("openrouter", builtin["id"]) is None
    assert resolve_context_window(flag=None, model=("openrouter", "only/this"))[0] == 4096
    store(agent, {"openrouter": {"models": [], "checkedAt": 2}})
    assert find_model("openrouter", builtin["id"]) is not None
