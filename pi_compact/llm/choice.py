"""Which model and which key: the one policy every command that talks to a model follows.

The model: ``--model``, else the session's model when picompact speaks to its provider and a key for it is
available (or none is needed), else ``PICOMPACT_MODEL``. The key (``llm.keys``): ``PICOMPACT_API_KEY``, then Pi's
``auth.json``, then the provider's variable; the ``Secret`` says where it came from.
"""

from __future__ import annotations

from collections.abc import Mapping

from pi_compact.errors import PiCompactError, UsageError
from pi_compact.llm.keys import Secret, has_api_key, require_api_key
from pi_compact.llm.providers import MODEL_ENV_VAR, ModelRef, resolve_model


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
    exactly as the command decides it (an unreadable auth file, say, counts as no)."""
    import os

    environ = os.environ if env is None else env
    try:
        choose_model_and_key(session_model, cli_model, environ)
    except PiCompactError:
        return False
    return True


__all__ = ["choose_model", "choose_model_and_key", "model_available"]
