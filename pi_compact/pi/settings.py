"""Pi's compaction settings, resolved the way Pi 1.6 resolves them.

Pi reads ``<agent dir>/settings.json`` and then ``<cwd>/.pi/settings.json`` (only when the project is trusted),
merges them recursively, and resolves ``reserveTokens`` and ``keepRecentTokens`` each on its own: the entry in
``compaction.modelOverrides["provider/modelId"]``, else the ordinary ``compaction`` value, else the built-in
default. picompact must reach the same numbers, or its "does this need compacting?" answer disagrees with Pi's.
A settings file that is not valid JSON is ignored with a warning, as Pi does; a token value that is present
but not a non-negative safe integer is an error, as it is in Pi (which refuses to compact with it).
"""

from __future__ import annotations

import errno
import json
import math
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple, TypeGuard
from urllib.parse import unquote, urlparse

from pi_compact.errors import SettingsError
from pi_compact.js import js_truthy, json_parse

DEFAULT_ENABLED = True
DEFAULT_RESERVE_TOKENS = 16384
DEFAULT_KEEP_RECENT_TOKENS = 20000
MAX_SAFE_INTEGER = 2**53 - 1
MAX_TOKENS = 100_000_000  # the largest token setting picompact accepts, from a flag or a file alike

ENV_AGENT_DIR = "PI_CODING_AGENT_DIR"
CONFIG_DIR_NAME = ".pi"
BOM = "\ufeff"

_TOKEN_FIELDS = (("reserve_tokens", "reserveTokens"), ("keep_recent_tokens", "keepRecentTokens"))
_DEFAULTS = {"reserveTokens": DEFAULT_RESERVE_TOKENS, "keepRecentTokens": DEFAULT_KEEP_RECENT_TOKENS}
_FLAGS = {"reserveTokens": "--reserve-tokens", "keepRecentTokens": "--keep-recent-tokens"}


class CompactionSettings(NamedTuple):
    """The effective compaction settings, and where each value came from (for ``--json`` and ``--verbose``)."""

    enabled: bool
    reserve_tokens: int
    keep_recent_tokens: int
    sources: dict[str, str]
    warnings: tuple[str, ...] = ()


class SettingsLayer(NamedTuple):
    """One settings file as parsed (an empty mapping when it is absent, unreadable or ignored)."""

    scope: str  # "global" or "project"
    path: Path
    data: dict[str, Any]


class LoadedSettings(NamedTuple):
    """Both settings files, merged the way Pi merges them."""

    merged: dict[str, Any]
    layers: tuple[SettingsLayer, ...]
    warnings: tuple[str, ...]
    project_trusted: bool


# --------------------------------------------------------------------------- paths


def expand_path(value: str, *, base: str | os.PathLike[str] | None = None, home: str | None = None) -> str:
    """Resolve a path as Pi's ``resolvePath`` does: ``~`` and ``~/…`` only, ``file://`` URLs, then absolute.

    Unlike ``os.path.expanduser`` this leaves ``~user`` alone, and unlike ``Path.resolve`` it does not follow
    symlinks (Node's ``path.resolve`` is purely lexical). ``home`` replaces the user's home directory.
    """
    text = value
    home = home or os.path.expanduser("~")
    if text == "~":
        text = home
    elif text.startswith("~/"):
        text = os.path.join(home, text[2:])
    elif text.startswith("file://"):
        text = unquote(urlparse(text).path)
    if os.path.isabs(text):
        return os.path.abspath(text)
    return os.path.abspath(os.path.join(os.fspath(base) if base is not None else os.getcwd(), text))


def agent_dir(env: Mapping[str, str] | None = None) -> Path:
    """Pi's agent directory: ``$PI_CODING_AGENT_DIR`` (with ``~`` expanded) or ``~/.pi/agent``, read from ``env``
    (default: the process environment, HOME included)."""
    env = os.environ if env is None else env
    home = env.get("HOME") or os.path.expanduser("~")
    configured = env.get(ENV_AGENT_DIR)
    if configured:
        return Path(expand_path(configured, home=home))
    return Path(os.path.abspath(os.path.join(home, CONFIG_DIR_NAME, "agent")))


def resolve_agent_dir(value: str | os.PathLike[str] | None) -> Path:
    """An agent directory given by the caller (``~`` expanded), else Pi's own (``agent_dir``)."""
    return agent_dir() if value is None else Path(expand_path(os.fspath(value)))


def settings_paths(cwd: str | os.PathLike[str], agent_dir: str | os.PathLike[str] | None = None) -> tuple[Path, Path]:
    """The global and the project settings file Pi reads for ``cwd``."""
    base = resolve_agent_dir(agent_dir)
    project = Path(expand_path(os.fspath(cwd))) / CONFIG_DIR_NAME / "settings.json"
    return base / "settings.json", project


MAX_SETTINGS_BYTES = 16 * 1024 * 1024  # a settings file, a trust store, models.json: a few KB in practice


def read_text(path: Path) -> str | None:
    """A file's text as Node reads it (invalid UTF-8 replaced), without a leading BOM; None if it is absent.

    Anything but a regular file (a FIFO would block the read forever), or one larger than any settings file (over
    ``MAX_SETTINGS_BYTES``: a repository's file must not decide how much memory a command takes), is an OSError
    saying so, as for any file that cannot be read: the callers warn and go on without it."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    with open(fd, "rb") as handle:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        data = handle.read(MAX_SETTINGS_BYTES + 1)
    if len(data) > MAX_SETTINGS_BYTES:
        raise OSError(errno.EFBIG, f"larger than {MAX_SETTINGS_BYTES // (1024 * 1024)} MiB", str(path))
    text = data.decode("utf-8", errors="replace")
    return text[1:] if text.startswith(BOM) else text


# --------------------------------------------------------------------------- loading and merging


def _is_object(value: Any) -> TypeGuard[dict[str, Any]]:
    return isinstance(value, dict)


def deep_merge(base: Mapping[str, Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Pi's recursive merge: objects merge key by key, anything else (arrays included) replaces."""
    result = dict(base)
    for key, value in overrides.items():
        current = base.get(key)
        result[key] = deep_merge(current, value) if _is_object(current) and _is_object(value) else value
    return result


def _load_layer(scope: str, path: Path, warnings: list[str]) -> SettingsLayer:
    try:
        text = read_text(path)
    except OSError as exc:
        if exc.errno == errno.EFBIG:  # Pi would read it (up to its own limit): say the difference
            warnings.append(
                f"{path}: {scope} settings {exc.strerror}: picompact ignores a settings file that large, "
                "Pi reads it; answers that depend on it may differ from Pi's"
            )
        else:
            warnings.append(f"{path}: cannot read {scope} settings ({exc.strerror or exc}); ignored, as Pi does")
        return SettingsLayer(scope, path, {})
    if not text:
        return SettingsLayer(scope, path, {})
    try:
        value = json_parse(text)
    except ValueError as exc:
        warnings.append(f"{path}: {scope} settings are not valid JSON ({exc}); ignored, as Pi does")
        return SettingsLayer(scope, path, {})
    if isinstance(value, list):
        # Pi merges an array's indices as keys: no setting applies.
        warnings.append(f"{path}: {scope} settings are a JSON array, not an object; no setting in it applies, as in Pi")
        return SettingsLayer(scope, path, {})
    if not _is_object(value):
        warnings.append(f"{path}: {scope} settings are not a JSON object; ignored, as Pi does")
        return SettingsLayer(scope, path, {})
    return SettingsLayer(scope, path, value)


def _trust_decision(cwd: str, base: Path, warnings: list[str]) -> bool | None:
    """The remembered trust decision for ``cwd`` or its nearest ancestor in ``trust.json``."""
    path = base / "trust.json"
    try:
        text = read_text(path)
    except OSError:
        return None
    if text is None:
        return None
    try:
        data = json_parse(text)
    except ValueError:
        data = None
    if not _is_object(data):
        warnings.append(f"{path}: not a valid trust store; project trust treated as undecided")
        return None
    decisions: dict[str, list[Any]] = {}
    for key, value in data.items():
        decisions.setdefault(os.path.abspath(key), []).append(value)
    current = os.path.realpath(cwd)
    while True:
        for value in decisions.get(current, ()):
            if value is True or value is False:
                return value
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current = parent


def project_trust_decision(cwd: str | os.PathLike[str], agent_dir: str | os.PathLike[str] | None = None) -> bool | None:
    """Whether Pi trusts the project at ``cwd`` without asking: its remembered decision (``trust.json``, nearest
    ancestor first), else ``defaultProjectTrust`` of the global settings (``"always"`` True, ``"never"`` False);
    None where Pi would ask (undecided). What a project's files may choose for picompact (which sessions are read,
    how wide a search goes) needs True here."""
    base = resolve_agent_dir(agent_dir)
    decision = _trust_decision(expand_path(os.fspath(cwd)), base, [])
    if decision is not None:
        return decision
    default = _load_layer("global", base / "settings.json", []).data.get("defaultProjectTrust", "ask")
    return True if default == "always" else False if default == "never" else None


def load_settings(
    cwd: str | os.PathLike[str],
    *,
    agent_dir: str | os.PathLike[str] | None = None,
    project_trusted: bool | None = None,
) -> LoadedSettings:
    """Read and merge the global and project settings files for ``cwd``.

    Pi applies project settings only in a trusted project. ``project_trusted=None`` follows Pi's stored
    decision (``trust.json``, then ``defaultProjectTrust``); where Pi would ask, the project is taken as trusted,
    since a session recorded there was most likely run with its settings.
    """
    warnings: list[str] = []
    base = resolve_agent_dir(agent_dir)
    global_path, project_path = settings_paths(cwd, base)
    global_layer = _load_layer("global", global_path, warnings)
    layers = [global_layer]
    trusted = project_trusted
    if trusted is None and project_path.exists():
        decision = _trust_decision(expand_path(os.fspath(cwd)), base, warnings)
        if decision is None:
            decision = global_layer.data.get("defaultProjectTrust") != "never"
        trusted = decision
    if trusted is None or trusted:
        layers.append(_load_layer("project", project_path, warnings))
        trusted = True
    elif project_path.exists():
        warnings.append(f"{project_path}: project is not trusted by Pi; its settings are ignored, as Pi does")
    merged: dict[str, Any] = {}
    for layer in layers:
        merged = deep_merge(merged, layer.data)
    return LoadedSettings(merged, tuple(layers), tuple(warnings), bool(trusted))


# --------------------------------------------------------------------------- compaction values


def _value_text(value: Any) -> str:
    """A setting's value as a message shows it: a string as it is, anything else as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False)


def is_safe_nonnegative_int(value: Any) -> bool:
    """``Number.isSafeInteger(value) && value >= 0`` for a parsed JSON value (1e3 and 2.0 count as integers)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return False
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        return False
    return 0 <= value <= MAX_SAFE_INTEGER


def _origin(layers: tuple[SettingsLayer, ...], keys: tuple[str, ...]) -> SettingsLayer | None:
    """The layer whose value survives the merge at ``keys`` (the last one that has the full path)."""
    for layer in reversed(layers):
        node: Any = layer.data
        for key in keys:
            if not _is_object(node) or key not in node:
                break
            node = node[key]
        else:
            return layer
    return None


def _where(layers: tuple[SettingsLayer, ...], keys: tuple[str, ...]) -> str | None:
    layer = _origin(layers, keys)
    return str(layer.path) if layer is not None else None


def _key_text(keys: tuple[str, ...]) -> str:
    text = keys[0]
    for key in keys[1:]:
        text += f'["{key}"]' if "/" in key or "." in key else f".{key}"
    return text


def _invalid(layers: tuple[SettingsLayer, ...], keys: tuple[str, ...], value: Any, expected: str) -> SettingsError:
    return SettingsError(
        f"invalid {_key_text(keys)} setting: {_value_text(value)} (expected {expected})",
        path=_where(layers, keys),
    )


def _check_token_value(layers: tuple[SettingsLayer, ...], keys: tuple[str, ...], value: Any) -> None:
    """Pi refuses a value that is not a non-negative safe integer; picompact also refuses one beyond MAX_TOKENS,
    the bound its flags have (such a value makes the threshold negative: compaction after every turn)."""
    if not is_safe_nonnegative_int(value):
        raise _invalid(layers, keys, value, "a non-negative safe integer")
    if value > MAX_TOKENS:
        raise _invalid(layers, keys, value, f"at most {MAX_TOKENS:,}, the bound the command-line flag has")


def shape_warnings(loaded: LoadedSettings) -> list[str]:
    """Settings of the wrong shape that Pi (and so picompact) ignores: each named with its file and key."""
    warnings: list[str] = []

    def ignored(keys: tuple[str, ...], value: Any, expected: str) -> None:
        where = _where(loaded.layers, keys) or "settings"
        warnings.append(f"{where}: {_key_text(keys)} is {_value_text(value)[:60]}, not {expected}; ignored, as Pi does")

    compaction = loaded.merged.get("compaction")
    if compaction is None:
        return warnings
    if not _is_object(compaction):
        ignored(("compaction",), compaction, "an object")
        return warnings
    overrides = compaction.get("modelOverrides")
    if overrides is not None and not _is_object(overrides):
        ignored(("compaction", "modelOverrides"), overrides, "an object")
    enabled = compaction.get("enabled")
    if enabled is not None and not isinstance(enabled, bool):
        where = _where(loaded.layers, ("compaction", "enabled")) or "settings"
        state = "on" if js_truthy(enabled) else "off"
        warnings.append(
            f"{where}: compaction.enabled is {_value_text(enabled)[:60]}, not true or false; Pi reads it as {state}"
        )
    return warnings


def _token_setting(loaded: LoadedSettings, name: str, model_key: str | None) -> tuple[int, str]:
    """Resolve one token value: model override, then ordinary setting, then default (Pi's order of checks)."""
    compaction = loaded.merged.get("compaction")
    compaction = compaction if _is_object(compaction) else {}
    ordinary_keys = ("compaction", name)
    if name in compaction:
        _check_token_value(loaded.layers, ordinary_keys, compaction[name])
    overrides = compaction.get("modelOverrides")
    if model_key is not None and _is_object(overrides) and model_key in overrides:
        entry_keys = ("compaction", "modelOverrides", model_key)
        entry = overrides[model_key]
        if not _is_object(entry):
            raise _invalid(loaded.layers, entry_keys, entry, "an object")
        if name in entry:
            value_keys = (*entry_keys, name)
            _check_token_value(loaded.layers, value_keys, entry[name])
            return int(entry[name]), f"{_where(loaded.layers, value_keys)} {_key_text(value_keys)}"
    if name in compaction:
        return int(compaction[name]), f"{_where(loaded.layers, ordinary_keys)} {_key_text(ordinary_keys)}"
    return _DEFAULTS[name], "default"


def _check_flag(flag: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_TOKENS:
        raise SettingsError(f"{flag} must be an integer from 0 to {MAX_TOKENS:,}, got {value!r}")
    return value


def resolve_settings(
    cwd: str | os.PathLike[str],
    model: tuple[str, str] | None,
    *,
    reserve_tokens: int | None = None,
    keep_recent_tokens: int | None = None,
    agent_dir: str | os.PathLike[str] | None = None,
    project_trusted: bool | None = None,
) -> CompactionSettings:
    """The compaction settings Pi would use for a session in ``cwd`` running ``model`` (provider, model id).

    ``reserve_tokens`` / ``keep_recent_tokens`` come from command-line flags and win over every file value,
    per-model overrides included; the files are then not consulted for that value. ``cwd`` should be the
    session's own working directory (its header ``cwd``): Pi reads project settings from there.
    """
    flags = {"reserveTokens": reserve_tokens, "keepRecentTokens": keep_recent_tokens}
    for name, value in flags.items():
        if value is not None:
            _check_flag(_FLAGS[name], value)
    loaded = load_settings(cwd, agent_dir=agent_dir, project_trusted=project_trusted)
    model_key = f"{model[0]}/{model[1]}" if model is not None else None
    values: dict[str, int] = {}
    sources: dict[str, str] = {}
    for attr, name in _TOKEN_FIELDS:
        flag_value = flags[name]
        if flag_value is not None:
            values[attr], sources[attr] = flag_value, f"flag {_FLAGS[name]}"
        else:
            values[attr], sources[attr] = _token_setting(loaded, name, model_key)
    compaction = loaded.merged.get("compaction")
    enabled_value = compaction.get("enabled") if _is_object(compaction) else None
    if enabled_value is None:
        enabled, sources["enabled"] = DEFAULT_ENABLED, "default"
    else:
        enabled = js_truthy(enabled_value)
        keys = ("compaction", "enabled")
        sources["enabled"] = f"{_where(loaded.layers, keys)} {_key_text(keys)}"
    return CompactionSettings(
        enabled=enabled,
        reserve_tokens=values["reserve_tokens"],
        keep_recent_tokens=values["keep_recent_tokens"],
        sources=sources,
        warnings=(*loaded.warnings, *shape_warnings(loaded)),
    )
