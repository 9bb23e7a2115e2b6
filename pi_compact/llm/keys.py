"""Where API keys come from: a key for the run (PICOMPACT_API_KEY, as Pi's --api-key), Pi's auth.json, the
``apiKey`` of the provider's entry in models.json, the provider's environment variable. The order they are tried
in is ``llm.choice``'s (``find_api_key``).

Keys travel wrapped in `Secret` so that printing, logging or a traceback shows a mask,
never the key; a Secret also says where it came from (``source``), for messages.
Only API-key entries of auth.json are used; Pi's OAuth logins are not.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from pi_compact.errors import SettingsError
from pi_compact.settings import agent_dir

if TYPE_CHECKING:
    from pi_compact.llm.providers import ModelRef

MASK = "********"
# A key for this run, whatever the provider: first in the order, as Pi's runtime --api-key is.
RUN_KEY_ENV = "PICOMPACT_API_KEY"


class Secret:
    """A string that does not show itself: repr, str and format all give a mask."""

    __slots__ = ("_value", "source")

    def __init__(self, value: str, source: str = "") -> None:
        self._value = value
        # Where the key came from ("OPENAI_API_KEY", "/home/me/.pi/agent/auth.json"), never the key itself.
        self.source = source

    def reveal(self) -> str:
        """The real value, for the one place that builds a request header."""
        return self._value

    def __repr__(self) -> str:
        return f"Secret({MASK!r})"

    def __str__(self) -> str:
        return MASK

    def __format__(self, spec: str) -> str:
        return MASK

    def __bool__(self) -> bool:
        return bool(self._value)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Secret):
            return NotImplemented
        import hmac

        return hmac.compare_digest(self._value.encode(), other._value.encode())

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> NoReturn:
        raise TypeError("a Secret cannot be pickled")


def redact(text: str, *secrets: Secret | None) -> str:
    """Replace every occurrence of the given secrets in text (e.g. a provider echoing the key)."""
    for secret in secrets:
        if secret and len(secret.reveal()) >= 4:
            text = text.replace(secret.reveal(), MASK)
    return text


def auth_file(env: Mapping[str, str] | None = None) -> Path:
    return agent_dir(env) / "auth.json"


def _load_auth(path: Path) -> dict[str, Any]:
    import orjson

    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise SettingsError(f"cannot read Pi's credentials file: {exc.strerror}", path=str(path)) from None
    try:
        data = orjson.loads(raw.removeprefix(b"\xef\xbb\xbf"))
    except orjson.JSONDecodeError:
        # No `from exc`: the decoder's message quotes the file, which holds keys.
        raise SettingsError("Pi's credentials file is not valid JSON", path=str(path)) from None
    if not isinstance(data, dict):
        raise SettingsError("Pi's credentials file is not a JSON object", path=str(path))
    return data


_TEMPLATE = re.compile(r"\$(\$|!|\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")
_command_cache: dict[str, str | None] = {}


def _expand(value: str, env: Mapping[str, str], extra: Mapping[str, str]) -> str | None:
    """Pi's key syntax: "$VAR"/"${VAR}" from the environment, "$$" and "$!" escapes, else literal."""
    missing = False

    def replace(match: re.Match[str]) -> str:
        nonlocal missing
        if match.group(1) in ("$", "!"):
            return match.group(1)
        name = match.group(2) or match.group(3)
        found = extra.get(name) or env.get(name)
        if not found:
            missing = True
            return ""
        return found

    expanded = _TEMPLATE.sub(replace, value)
    return None if missing else expanded


def _run_command(command: str) -> str | None:
    """A "!command" key: the command's trimmed output, cached like Pi does."""
    import subprocess

    if command not in _command_cache:
        try:
            done = subprocess.run(
                command, shell=True, capture_output=True, text=True, timeout=10, stdin=subprocess.DEVNULL
            )
            out = done.stdout.strip() if done.returncode == 0 else ""
        except (OSError, subprocess.SubprocessError):
            out = ""
        _command_cache[command] = out or None
    return _command_cache[command]


def resolve_config_value(value: str, env: Mapping[str, str], extra: Mapping[str, str] | None = None) -> str | None:
    """A value in Pi's config syntax (auth.json keys, models.json ``apiKey`` and header values): "!command" runs the
    command, else "$VAR"/"${VAR}" are read from ``extra`` then the environment; None when it does not resolve."""
    if value.startswith("!"):
        return _run_command(value[1:])
    return _expand(value, env, extra or {}) or None


def config_value_env_names(value: str) -> list[str]:
    """The environment variables a config value reads (none for a "!command")."""
    if value.startswith("!"):
        return []
    names = [m.group(2) or m.group(3) for m in _TEMPLATE.finditer(value) if m.group(1) not in ("$", "!")]
    return list(dict.fromkeys(names))


def key_from_auth_file(provider: str, env: Mapping[str, str]) -> tuple[Secret | None, str | None]:
    """The provider's key from auth.json, and the credential type found when it is not a usable key."""
    entry = _load_auth(auth_file(env)).get(provider)
    if not isinstance(entry, dict):
        return None, None
    if entry.get("type") != "api_key":
        return None, str(entry.get("type") or "unknown")
    key = entry.get("key")
    if not isinstance(key, str) or not key:
        return None, "api_key"
    extra: dict[str, Any] = entry["env"] if isinstance(entry.get("env"), dict) else {}
    value = resolve_config_value(key, env, {k: v for k, v in extra.items() if isinstance(v, str)})
    return (Secret(value, str(auth_file(env))), None) if value else (None, "api_key")


def key_from_env(model: ModelRef, env: Mapping[str, str]) -> Secret | None:
    for name in model.key_env:
        value = env.get(name, "").strip()
        if value:
            return Secret(value, name)
    return None


def key_for_the_run(env: Mapping[str, str]) -> Secret | None:
    value = env.get(RUN_KEY_ENV, "").strip()
    return Secret(value, RUN_KEY_ENV) if value else None


def describe_source(key: Secret | None) -> str:
    """Where a key came from, for messages: "from OPENAI_API_KEY", "from /…/auth.json", or "" (no key)."""
    if key is None or not key.source:
        return ""
    return f"from {key.source}"
