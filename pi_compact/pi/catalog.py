"""The model catalogue: windows, output limits and prices of every model Pi knows, composed as Pi 1.6 composes
them from its bundled model table and the user's ``models.json``. ``check`` (the window), summary mode (window and
output limit), ``lookup`` and the cost estimates (``estimate_cost``) all read it here; ``parse_model_ref`` is the
one reader of a ``PROVIDER/ID`` reference.

Pi also keeps provider catalogs it refreshed from pi.dev in ``<agent dir>/models-store.json`` and prefers them
to its bundled data when they are newer; picompact reads that cache too (it never fetches anything).

The threshold is ``contextWindow - reserveTokens``, so picompact needs the same window Pi uses for the session's
model. ``models.json`` can route a built-in provider elsewhere (``baseUrl``), add or replace models by id
(``models``, with Pi's defaults for omitted fields) and patch metadata of existing ones (``modelOverrides``).
Like Pi, a ``models.json`` that fails to parse or validate is ignored as a whole, and a provider whose entry
cannot be composed keeps its built-in models; the reason is kept so an "unknown model" error can name it.
"""

from __future__ import annotations

import math
import os
import re
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from pi_compact.bundled import data_bytes
from pi_compact.errors import SettingsError, UsageError
from pi_compact.js import json_parse
from pi_compact.pi.settings import read_text, resolve_agent_dir

CUSTOM_CONTEXT_WINDOW = 128000
CUSTOM_MAX_TOKENS = 16384


class ModelInfo(NamedTuple):
    """One model as Pi sees it. Costs are USD per million tokens."""

    provider: str
    id: str
    name: str
    context_window: int
    max_tokens: int
    input_cost: float
    output_cost: float
    base_url: str
    api: str
    reasoning: bool = False
    cache_read_cost: float = 0.0
    cache_write_cost: float = 0.0
    # "model table"; "models-store.json" for Pi's refreshed catalog; "models.json" when that file defined the
    # model or set its context window.
    source: str = "model table"

    @property
    def key(self) -> str:
        return f"{self.provider}/{self.id}"


class ModelsJson(NamedTuple):
    """The user's ``models.json``: its provider entries, or why Pi would ignore the file."""

    path: Path
    providers: dict[str, dict[str, Any]]
    error: str | None = None


class ModelCatalog(NamedTuple):
    """Every known model keyed by ``(provider, id)``, with the problems Pi would report about ``models.json``."""

    models: dict[tuple[str, str], ModelInfo]
    errors: tuple[str, ...]
    models_json: ModelsJson
    # The models.json provider entries Pi applies (those that composed): where requests go and how they
    # authenticate (``baseUrl``, ``apiKey``, ``headers``, ``authHeader``) for ``llm.providers``.
    provider_configs: dict[str, dict[str, Any]]


# --------------------------------------------------------------------------- bundled table


def _number(value: Any, default: float = 0.0) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default


def _window(value: float) -> int:
    # contextTokens > window - reserve compares integers, so flooring a fractional window changes nothing.
    return math.floor(value)


def _from_table(raw: dict[str, Any]) -> ModelInfo:
    cost = raw.get("cost") or {}
    return ModelInfo(
        provider=raw["provider"],
        id=raw["id"],
        name=raw.get("name") or raw["id"],
        context_window=_window(raw["contextWindow"]),
        max_tokens=int(raw["maxTokens"]),
        input_cost=_number(cost.get("input")),
        output_cost=_number(cost.get("output")),
        base_url=raw.get("baseUrl", ""),
        api=raw.get("api", ""),
        reasoning=bool(raw.get("reasoning", False)),
        cache_read_cost=_number(cost.get("cacheRead")),
        cache_write_cost=_number(cost.get("cacheWrite")),
    )


TABLE = "pi-models.json"
_ROW_START = b'{"provider":'


@cache
def _table_bytes() -> bytes:
    """The bundled table as stored: a JSON array with one object per model, each starting with its provider."""
    return data_bytes(TABLE)


@cache
def builtin_rows() -> dict[tuple[str, str], dict[str, Any]]:
    """The bundled table's raw rows by (provider, id): cheap to index, converted only when asked for."""
    return {(m["provider"], m["id"]): m for m in orjson.loads(_table_bytes())}


def _builtin_row(provider: str, model_id: str) -> dict[str, Any] | None:
    """One row of the bundled table, found by its first two keys in the bytes and parsed alone (parsing the
    2,000-odd rows takes longer than a small ``check`` itself). Any doubt falls back to the whole table."""
    data = _table_bytes()
    key = _ROW_START + orjson.dumps(provider) + b',"id":' + orjson.dumps(model_id) + b","
    at = data.find(key)
    if at < 0 or data.find(key, at + 1) >= 0:
        return builtin_rows().get((provider, model_id))
    end = data.find(b"," + _ROW_START, at + 1)
    if end < 0:
        end = data.rindex(b"]")
    try:
        row = orjson.loads(data[at:end])
    except orjson.JSONDecodeError:
        return builtin_rows().get((provider, model_id))
    if isinstance(row, dict) and row.get("provider") == provider and row.get("id") == model_id:
        return row
    return builtin_rows().get((provider, model_id))  # pragma: no cover - the table is not laid out as expected


@cache
def builtin_models() -> dict[tuple[str, str], ModelInfo]:
    """Pi's bundled model table (read once, on first use)."""
    return {key: _from_table(row) for key, row in builtin_rows().items()}


@cache
def builtin_model(provider: str, model_id: str) -> ModelInfo | None:
    """One model of the bundled table, without converting the other 1,700 (keeps ``check`` quick to start)."""
    row = _builtin_row(provider, model_id)
    return _from_table(row) if row is not None else None


def _only_builtin(agent_dir: str | os.PathLike[str] | None) -> bool:
    """True when neither models.json nor Pi's refreshed catalog exists: the bundled table alone answers."""
    path = models_json_path(agent_dir)
    return _stat_key(path) is None and _stat_key(path.parent / "models-store.json") is None


# --------------------------------------------------------------------------- models.json: read and validate


def strip_json_comments(text: str) -> str:
    """Pi's ``stripJsonComments``: drop ``//`` line comments and trailing commas outside string literals."""
    string = r'"(?:\\[^\n\r\u2028\u2029]|[^"\\])*"'
    text = re.sub(string + r"|//[^\n]*", lambda m: m.group(0) if m.group(0)[0] == '"' else "", text)
    ws = "[\\s\ufeff]"
    return re.sub(
        string + r"|," + f"({ws}*[}}\\]])",
        lambda m: m.group(1) if m.group(1) is not None else (m.group(0) if m.group(0)[0] == '"' else ""),
        text,
    )


def _is_num(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _check_str(obj: dict[str, Any], key: str, where: str, errors: list[str]) -> None:
    if key in obj and not (isinstance(obj[key], str) and obj[key]):
        errors.append(f"{where}.{key}: expected a non-empty string")


def _check_positive(obj: dict[str, Any], key: str, where: str, errors: list[str]) -> None:
    if key in obj and not (_is_num(obj[key]) and obj[key] > 0):
        errors.append(f"{where}.{key}: expected a number greater than 0")


def _check_cost(value: Any, where: str, errors: list[str], *, partial: bool) -> None:
    if not isinstance(value, dict):
        errors.append(f"{where}: expected an object")
        return
    for rate in ("input", "output", "cacheRead", "cacheWrite"):
        if rate not in value:
            if not partial:
                errors.append(f"{where}.{rate}: required")
        elif not _is_num(value[rate]):
            errors.append(f"{where}.{rate}: expected a number")


def _check_headers(obj: dict[str, Any], where: str, errors: list[str]) -> None:
    headers = obj.get("headers", {})
    if not isinstance(headers, dict) or not all(isinstance(v, str) for v in headers.values()):
        errors.append(f"{where}.headers: expected an object of strings")
    if "compat" in obj and not isinstance(obj["compat"], dict):
        errors.append(f"{where}.compat: expected an object")


def _check_model_fields(obj: dict[str, Any], where: str, errors: list[str], *, partial: bool) -> None:
    _check_str(obj, "name", where, errors)
    _check_headers(obj, where, errors)
    modalities = obj.get("input", [])
    if not isinstance(modalities, list) or not all(m in ("text", "image") for m in modalities):
        errors.append(f'{where}.input: expected an array of "text" / "image"')
    if "reasoning" in obj and not isinstance(obj["reasoning"], bool):
        errors.append(f"{where}.reasoning: expected a boolean")
    if "cost" in obj:
        _check_cost(obj["cost"], f"{where}.cost", errors, partial=partial)
    _check_positive(obj, "contextWindow", where, errors)
    _check_positive(obj, "maxTokens", where, errors)


def _validate(parsed: Any) -> list[str]:
    """The part of Pi's models.json schema that decides which models exist and their sizes."""
    errors: list[str] = []
    if not isinstance(parsed, dict):
        return ["root: expected an object"]
    providers = parsed.get("providers")
    if "providers" not in parsed:
        return ["providers: required"]
    if not isinstance(providers, dict):
        return ["providers: expected an object"]
    for pid, config in providers.items():
        where = f"providers.{pid}"
        if not isinstance(config, dict):
            errors.append(f"{where}: expected an object")
            continue
        for key in ("name", "baseUrl", "apiKey", "api"):
            _check_str(config, key, where, errors)
        if "oauth" in config and config["oauth"] != "radius":
            errors.append(f'{where}.oauth: expected "radius"')
        if "authHeader" in config and not isinstance(config["authHeader"], bool):
            errors.append(f"{where}.authHeader: expected a boolean")
        _check_headers(config, where, errors)
        models = config.get("models", [])
        if not isinstance(models, list):
            errors.append(f"{where}.models: expected an array")
            models = []
        for index, model in enumerate(models):
            mwhere = f"{where}.models.{index}"
            if not isinstance(model, dict):
                errors.append(f"{mwhere}: expected an object")
                continue
            if "id" not in model:
                errors.append(f"{mwhere}.id: required")
            else:
                _check_str(model, "id", mwhere, errors)
            for key in ("api", "baseUrl"):
                _check_str(model, key, mwhere, errors)
            _check_model_fields(model, mwhere, errors, partial=False)
        overrides = config.get("modelOverrides", {})
        if not isinstance(overrides, dict):
            errors.append(f"{where}.modelOverrides: expected an object")
            overrides = {}
        for mid, override in overrides.items():
            owhere = f"{where}.modelOverrides.{mid}"
            if not isinstance(override, dict):
                errors.append(f"{owhere}: expected an object")
                continue
            _check_model_fields(override, owhere, errors, partial=True)
    return errors


def models_json_path(agent_dir: str | os.PathLike[str] | None = None) -> Path:
    return resolve_agent_dir(agent_dir) / "models.json"


def load_models_json(agent_dir: str | os.PathLike[str] | None = None) -> ModelsJson:
    """Read ``<agent dir>/models.json`` (comments and trailing commas allowed, as in Pi)."""
    path = models_json_path(agent_dir)
    try:
        text = read_text(path)
    except OSError as exc:
        return ModelsJson(path, {}, f"cannot read {path}: {exc.strerror or exc}")
    if text is None:
        return ModelsJson(path, {})
    try:
        parsed = json_parse(strip_json_comments(text))
    except ValueError as exc:
        return ModelsJson(path, {}, f"{path} is not valid JSON ({exc}); Pi ignores it")
    problems = _validate(parsed)
    if problems:
        return ModelsJson(path, {}, f"{path} does not match Pi's schema ({'; '.join(problems)}); Pi ignores it")
    return ModelsJson(path, dict(parsed["providers"]))


# --------------------------------------------------------------------------- composition


def _defaults_for(models: list[ModelInfo], model_id: str, api: str | None) -> ModelInfo | None:
    """Pi's fallback model for a custom definition's api and baseUrl: same id, same api, openai-completions, first."""
    for test in (
        lambda m: m.id == model_id,
        lambda m: api is not None and m.api == api,
        lambda m: m.api == "openai-completions",
    ):
        found = next((m for m in models if test(m)), None)
        if found is not None:
            return found
    return models[0] if models else None


def _custom_model(
    pid: str, definition: dict[str, Any], config: dict[str, Any], defaults: ModelInfo | None
) -> ModelInfo:
    api = definition.get("api") or config.get("api") or (defaults.api if defaults else None)
    if not api:
        raise ValueError(f'model {definition["id"]}: no "api" specified (set it on the provider or the model)')
    base_url = definition.get("baseUrl") or config.get("baseUrl") or (defaults.base_url if defaults else None)
    if not base_url:
        raise ValueError('"baseUrl" is required when defining custom models')
    cost = definition.get("cost") or {}
    return ModelInfo(
        provider=pid,
        id=definition["id"],
        name=definition.get("name") or definition["id"],
        context_window=_window(definition.get("contextWindow", CUSTOM_CONTEXT_WINDOW)),
        max_tokens=_window(definition.get("maxTokens", CUSTOM_MAX_TOKENS)),
        input_cost=_number(cost.get("input")),
        output_cost=_number(cost.get("output")),
        base_url=base_url,
        api=api,
        reasoning=bool(definition.get("reasoning", False)),
        cache_read_cost=_number(cost.get("cacheRead")),
        cache_write_cost=_number(cost.get("cacheWrite")),
        source="models.json",
    )


def _apply_override(model: ModelInfo, override: dict[str, Any]) -> ModelInfo:
    cost = override.get("cost") or {}
    changes: dict[str, Any] = {
        "name": override.get("name") or model.name,
        "reasoning": override.get("reasoning", model.reasoning),
        "max_tokens": _window(override["maxTokens"]) if "maxTokens" in override else model.max_tokens,
        "input_cost": _number(cost.get("input"), model.input_cost),
        "output_cost": _number(cost.get("output"), model.output_cost),
        "cache_read_cost": _number(cost.get("cacheRead"), model.cache_read_cost),
        "cache_write_cost": _number(cost.get("cacheWrite"), model.cache_write_cost),
    }
    if "contextWindow" in override:
        changes["context_window"] = _window(override["contextWindow"])
        changes["source"] = "models.json"
    return model._replace(**changes)


_CONFIG_KEYS = ("baseUrl", "headers", "compat", "apiKey", "oauth")


def _compose(pid: str, base: list[ModelInfo], config: dict[str, Any]) -> list[ModelInfo]:
    """One provider's models after its models.json entry; raises ValueError where Pi reports a provider error."""
    if config.get("oauth") and not config.get("baseUrl"):
        raise ValueError('"baseUrl" is required when "oauth" is set')
    overrides = config.get("modelOverrides") or {}
    if (
        not config.get("models")
        and not any(key in config for key in _CONFIG_KEYS)
        and not overrides
        and "authHeader" not in config
    ):
        raise ValueError('must specify "baseUrl", "headers", "compat", "modelOverrides", or "models"')
    url = config.get("baseUrl") if config.get("oauth") != "radius" else None
    models = [m._replace(base_url=url) if url else m for m in base]
    for definition in config.get("models") or []:
        defaults = _defaults_for(models, definition["id"], definition.get("api") or config.get("api"))
        model = _custom_model(pid, definition, config, defaults)
        index = next((i for i, m in enumerate(models) if m.id == model.id), None)
        if index is None:
            models.append(model)
        else:
            models[index] = model
    return [_apply_override(m, overrides[m.id]) if m.id in overrides else m for m in models]


def _stat_key(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


# --------------------------------------------------------------------------- Pi's cached catalog refresh

# Pi overlays a provider catalog fetched from pi.dev (kept in models-store.json) only when it is newer than the
# model data Pi 1.6 ships with.
PI_MODEL_DATA_GENERATED_AT_MS = 1795171729496  # 2026-11-20T10:48:49.496Z
_PERSONALIZED_PROVIDERS = frozenset({"openrouter"})  # the stored list replaces the built-in one when not empty


def _from_store(pid: str, raw: Any) -> ModelInfo | None:
    if not isinstance(raw, dict) or raw.get("provider") != pid or not isinstance(raw.get("id"), str):
        return None
    if raw.get("type", "chat") != "chat" or not _is_num(raw.get("contextWindow")):
        return None
    cost: dict[str, Any] = raw["cost"] if isinstance(raw.get("cost"), dict) else {}
    return ModelInfo(
        provider=pid,
        id=raw["id"],
        name=raw["name"] if isinstance(raw.get("name"), str) and raw["name"] else raw["id"],
        context_window=_window(raw["contextWindow"]),
        max_tokens=_window(raw["maxTokens"]) if _is_num(raw.get("maxTokens")) else 0,
        input_cost=_number(cost.get("input")),
        output_cost=_number(cost.get("output")),
        base_url=raw["baseUrl"] if isinstance(raw.get("baseUrl"), str) else "",
        api=raw["api"] if isinstance(raw.get("api"), str) else "",
        reasoning=raw.get("reasoning") is True,
        cache_read_cost=_number(cost.get("cacheRead")),
        cache_write_cost=_number(cost.get("cacheWrite")),
        source="models-store.json",
    )


def _stored_catalogs(path: Path) -> dict[str, tuple[list[ModelInfo], bool]]:
    """Per provider: the models Pi restores from ``models-store.json`` and whether they replace the built-ins."""
    try:
        text = read_text(path)
        data = json_parse(text) if text else {}
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    result: dict[str, tuple[list[ModelInfo], bool]] = {}
    for pid, entry in data.items():
        if pid == "radius" or not isinstance(entry, dict) or not isinstance(entry.get("models"), list):
            continue
        stored = [info for info in (_from_store(pid, raw) for raw in entry["models"]) if info is not None]
        if pid in _PERSONALIZED_PROVIDERS:
            if stored:
                result[pid] = (stored, True)
            continue
        modified = _number(entry.get("lastModified"))
        if stored and modified > PI_MODEL_DATA_GENERATED_AT_MS:
            result[pid] = (stored, False)
    return result


# --------------------------------------------------------------------------- the catalog


@cache
def _catalog_for(
    path: Path, stamp: tuple[int, int] | None, store: Path, store_stamp: tuple[int, int] | None
) -> ModelCatalog:
    models_json = load_models_json(path.parent)
    errors: list[str] = [models_json.error] if models_json.error else []
    by_provider: dict[str, list[ModelInfo]] = {}
    for info in builtin_models().values():
        by_provider.setdefault(info.provider, []).append(info)
    for pid, (stored, replaces) in _stored_catalogs(store).items():
        merged = {} if replaces else {m.id: m for m in by_provider.get(pid, [])}
        merged.update((m.id, m) for m in stored)
        by_provider[pid] = list(merged.values())
    models = {(m.provider, m.id): m for infos in by_provider.values() for m in infos}
    configs: dict[str, dict[str, Any]] = {}
    for pid, config in models_json.providers.items():
        base = by_provider.get(pid, [])
        try:
            composed = _compose(pid, base, config)
        except ValueError as exc:
            errors.append(f'{models_json.path}: provider "{pid}": {exc}; Pi ignores this entry')
            continue
        for info in base:
            models.pop((pid, info.id), None)
        for info in composed:
            models[(pid, info.id)] = info
        configs[pid] = config
    return ModelCatalog(models, tuple(errors), models_json, configs)


def model_catalog(agent_dir: str | os.PathLike[str] | None = None) -> ModelCatalog:
    """Built-in models, Pi's refreshed catalog and ``models.json``, composed (cached until a file changes)."""
    path = models_json_path(agent_dir)
    store = path.parent / "models-store.json"
    return _catalog_for(path, _stat_key(path), store, _stat_key(store))


def models_json_warnings(agent_dir: str | os.PathLike[str] | None = None) -> tuple[str, ...]:
    """What Pi ignores in ``models.json`` (the whole file, or a provider entry), naming the file: never silent."""
    if _only_builtin(agent_dir):
        return ()
    return model_catalog(agent_dir).errors


def find_model(provider: str, model_id: str, *, agent_dir: str | os.PathLike[str] | None = None) -> ModelInfo | None:
    """The model Pi knows as ``provider/model_id``, or None."""
    if _only_builtin(agent_dir):
        return builtin_model(provider, model_id)
    return model_catalog(agent_dir).models.get((provider, model_id))


def provider_config(provider: str, *, agent_dir: str | os.PathLike[str] | None = None) -> dict[str, Any] | None:
    """The provider's entry in ``models.json`` as Pi applies it, or None (no entry, or one Pi ignores)."""
    if _only_builtin(agent_dir):
        return None
    return model_catalog(agent_dir).provider_configs.get(provider)


def resolve_context_window(
    *,
    flag: int | None,
    model: tuple[str, str] | None,
    agent_dir: str | os.PathLike[str] | None = None,
) -> tuple[int, str]:
    """The context window to judge a session by, and where it came from.

    ``--context-window`` wins; otherwise the session's model is looked up. Source is ``"flag"``,
    ``"model table (provider/id)"``, ``"models.json (provider/id)"`` or, for a model whose data comes from the
    catalog Pi refreshed from pi.dev, ``"models-store.json (provider/id)"``.
    """
    if flag is not None:
        if isinstance(flag, bool) or not isinstance(flag, int) or flag <= 0:
            raise SettingsError(f"--context-window must be a positive integer, got {flag!r}")
        return flag, "flag"
    if model is None:
        raise SettingsError("the session records no model, so its context window is unknown: pass --context-window")
    if _only_builtin(agent_dir):
        found = builtin_model(*model)
        if found is not None:
            return found.context_window, f"{found.source} ({model[0]}/{model[1]})"
    catalog = model_catalog(agent_dir)
    info = catalog.models.get(model)
    key = f"{model[0]}/{model[1]}"
    if info is None:
        message = (
            f"unknown model {key}: not in Pi's model table or {catalog.models_json.path}; "
            "pass --context-window with its context window in tokens"
        )
        if catalog.errors:
            message += " (note: " + "; ".join(catalog.errors) + ")"
        raise SettingsError(message)
    return info.context_window, f"{info.source} ({key})"


def provider_models(provider: str, *, agent_dir: str | os.PathLike[str] | None = None) -> list[ModelInfo]:
    """Every model of one provider, in the catalogue's order."""
    if _only_builtin(agent_dir):
        return [info for (name, _), info in builtin_models().items() if name == provider]
    return [info for (name, _), info in model_catalog(agent_dir).models.items() if name == provider]


def estimate_cost(
    info: ModelInfo | None,
    input_tokens: int,
    output_tokens: int,
    cache_read_tokens: int = 0,
    cache_write_tokens: int = 0,
) -> float | None:
    """Dollars for one exchange at the catalogue's prices (USD per million tokens); None for an unknown model."""
    if info is None:
        return None
    total = (
        input_tokens * info.input_cost
        + output_tokens * info.output_cost
        + cache_read_tokens * info.cache_read_cost
        + cache_write_tokens * info.cache_write_cost
    )
    return total / 1_000_000


def parse_model_ref(text: str) -> tuple[str, str]:
    """Split ``PROVIDER/ID`` on the first slash (model ids may hold more slashes); a UsageError otherwise."""
    provider, sep, model_id = text.strip().partition("/")
    if not sep or not provider or not model_id:
        raise UsageError(
            f"model {text.strip()!r} is not of the form provider/model-id "
            "(for example anthropic/claude-sonnet-4-5 or openai/gpt-4.1-mini)"
        )
    return provider, model_id
