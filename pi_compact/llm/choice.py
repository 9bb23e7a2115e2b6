"""Which model and which key: the one policy every command that talks to a model follows.

The model: ``--model``, else the session's model when picompact speaks to its provider and a key for it is
available (or none is needed), else ``PICOMPACT_MODEL``. The key (``llm.keys``): ``PICOMPACT_API_KEY`` (only for
the provider ``PICOMPACT_API_KEY_PROVIDER`` names, when it is set), then Pi's ``auth.json``, then the ``apiKey`` of
the provider's ``models.json`` entry, then the provider's variable; the ``Secret`` says where it came from.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import NamedTuple

from pi_compact.errors import PiCompactError, UsageError
from pi_compact.llm.keys import (
    Secret,
    auth_file,
    auth_file_key_configured,
    auth_file_raw_key,
    command_failure,
    config_value_configured,
    config_value_env_names,
    key_for_the_run,
    key_from_auth_file,
    key_from_env,
    resolve_config_value,
)
from pi_compact.llm.providers import MODEL_ENV_VAR, ModelRef, resolve_model
from pi_compact.pi.catalog import models_json_path


class _Key(NamedTuple):
    """Where the key comes from, found without running anything; ``resolve`` gives the key itself (running a
    "!command" key helper, the one step that may)."""

    source: str
    resolve: Callable[[], Secret | None]


def _locate(model: ModelRef, env: Mapping[str, str]) -> tuple[_Key | None, str | None]:
    """The key's source in Pi's order (PICOMPACT_API_KEY unless it is bound to another provider, auth.json,
    models.json's ``apiKey``, the provider's variable), chosen as Pi chooses it: a value counts when it is configured
    (``config_value_configured``: a "!command" is, without being run). Also the kind of credential auth.json holds
    for the provider when it is not a usable key (for the message)."""
    if (run_key := key_for_the_run(env, model.provider)) is not None:
        return _Key(run_key.source, lambda: run_key), None
    configured, other = auth_file_key_configured(model.provider, env)
    if configured:
        return _Key(str(auth_file(env)), lambda: key_from_auth_file(model.provider, env)[0]), None
    if model.config_key is not None:
        # Pi reads no environment variable once models.json sets the provider's apiKey.
        raw = model.config_key
        if not config_value_configured(raw, env):
            return None, other
        source = f"the apiKey of {model.provider} in {models_json_path()}"

        def resolve() -> Secret | None:
            value = resolve_config_value(raw, env)
            return Secret(value, source) if value else None

        return _Key(source, resolve), other
    key = key_from_env(model, env)
    return (_Key(key.source, lambda: key) if key is not None else None), other


def find_api_key(model: ModelRef, env: Mapping[str, str] | None = None) -> Secret | None:
    """The key for model's provider as Pi finds it (a "!command" key helper is run: only for a request that needs
    the key); ``Secret.source`` says where it came from."""
    located, _other = _locate(model, os.environ if env is None else env)
    return located.resolve() if located is not None else None


def key_source(model: ModelRef, env: Mapping[str, str] | None = None) -> str | None:
    """Where the key for model's provider would come from ("OPENAI_API_KEY", auth.json's path, …), or None when no
    key is configured; nothing is run, as Pi decides whether a provider has auth."""
    located, _other = _locate(model, os.environ if env is None else env)
    return located.source if located is not None else None


def has_api_key(model: ModelRef, env: Mapping[str, str] | None = None) -> bool:
    """True when a request to model can be authenticated (or needs no key), decided without running anything."""
    return not model.key_required or key_source(model, env) is not None


def require_api_key(model: ModelRef, env: Mapping[str, str] | None = None) -> Secret | None:
    """The key (a "!command" key helper is run), None for servers that need none, or a UsageError saying how to
    provide one."""
    env = os.environ if env is None else env
    located, other = _locate(model, env)
    key = located.resolve() if located is not None else None
    if key is not None:
        return key
    if not model.key_required:
        return None
    path = auth_file(env)
    hint = ""
    from_auth_file = located is not None and located.source == str(path)
    if from_auth_file:  # auth.json holds a "!command" key for the provider, which gave nothing
        why = command_failure(auth_file_raw_key(model.provider, env) or "")
        detail = f": its command {why}" if why else ""
        hint = f" (the {model.provider} entry in {path} did not resolve to a key{detail})"
    elif other == "oauth":
        hint = (
            f" ({path} holds an OAuth login for {model.provider}; picompact uses only API keys, "
            "not subscription logins)"
        )
    elif other == "api_key":
        hint = f" (the {model.provider} entry in {path} did not resolve to a key)"
    elif other:
        hint = f" ({path} holds a {other!r} credential for {model.provider}, which picompact cannot use)"
    if model.config_key is not None and not from_auth_file:
        missing = [name for name in config_value_env_names(model.config_key) if not env.get(name)]
        why = command_failure(model.config_key)
        how = (
            f"its command {model.config_key[1:]!r} gave no key{f' ({why})' if why else ''}"
            if model.config_key.startswith("!")
            else f"set {' and '.join(missing)}"
            if missing
            else "it is empty"
        )
        raise UsageError(
            f"no API key for {model.provider}: looked in {path}, then the apiKey of {model.provider} in "
            f"{models_json_path()}, which did not resolve ({how}){hint}"
        )
    names = " or ".join(model.key_env) or "an API key"
    raise UsageError(
        f"no API key for {model.provider}: looked in {path}, then {names}; store an API key for it there or set "
        f"{names}{hint}"
    )


def choose_model(
    session_model: tuple[str, str] | None,
    cli_model: str | None,
    env: Mapping[str, str],
    *,
    base_url: str | None = None,
) -> ModelRef:
    """Pick the model for a request: --model, else the session's model when usable, else PICOMPACT_MODEL.

    The session's model counts as usable when picompact speaks to its provider and a key for it
    is available (or none is needed); otherwise the next source is tried.
    """
    if cli_model and cli_model.strip():
        return resolve_model(cli_model, base_url=base_url, source="--model")
    skipped = ""
    if session_model is not None and all(session_model):
        try:
            candidate = resolve_model(session_model, base_url=base_url, source="session")
        except UsageError:
            skipped = f"the session's model {session_model[0]}/{session_model[1]} is not supported"
        else:
            if has_api_key(candidate, env):
                return candidate
            skipped = (
                f"the session's model {candidate.ref} has no API key "
                f"(set {' or '.join(candidate.key_env)} or log in with an API key in Pi)"
            )
    env_model = env.get(MODEL_ENV_VAR, "").strip()
    if env_model:
        return resolve_model(env_model, base_url=base_url, source=MODEL_ENV_VAR)
    reason = f"{skipped}; " if skipped else ""
    raise UsageError(
        f"no model to use: {reason}pass --model provider/model-id, set {MODEL_ENV_VAR}=provider/model-id, "
        "or use a session whose current model has an API key"
    )


def choose_model_and_key(
    session_model: tuple[str, str] | None,
    cli_model: str | None,
    env: Mapping[str, str],
    *,
    base_url: str | None = None,
) -> tuple[ModelRef, Secret | None]:
    """The model (``choose_model``) and its key (None for a server that needs none), or a UsageError saying what
    is missing."""
    model = choose_model(session_model, cli_model, env, base_url=base_url)
    return model, require_api_key(model, env)


def model_available(
    session_model: tuple[str, str] | None, cli_model: str | None = None, env: Mapping[str, str] | None = None
) -> bool:
    """Whether a command given ``cli_model`` (``--model``; None: none given) would find a model and a key for it,
    exactly as the command decides it (an unreadable auth file, say, counts as no), and as Pi decides it: a
    "!command" key counts without being run (the command that sends the request runs it)."""
    environ = os.environ if env is None else env
    try:
        return has_api_key(choose_model(session_model, cli_model, environ), environ)
    except PiCompactError:
        return False


__all__ = [
    "choose_model",
    "choose_model_and_key",
    "find_api_key",
    "has_api_key",
    "key_source",
    "model_available",
    "require_api_key",
]
