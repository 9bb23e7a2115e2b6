"""Where API keys come from: a key for the run (PICOMPACT_API_KEY, as Pi's --api-key; with
PICOMPACT_API_KEY_PROVIDER, for that provider's models only), Pi's auth.json, the ``apiKey`` of the provider's entry
in models.json, the provider's environment variable. The order they are tried in is ``llm.choice``'s
(``find_api_key``).

Keys travel wrapped in `Secret` so that printing, logging or a traceback shows a mask,
never the key; a Secret also says where it came from (``source``), for messages.
Only API-key entries of auth.json are used; Pi's OAuth logins are not.

A key in Pi's config syntax may be a "!command", a key helper whose output is the key. As in Pi, whether a key is
there is decided without running it (``config_value_configured``); it runs only when a request needs the key,
bounded by ``KEY_COMMAND_TIMEOUT``, and a helper that outlives it is killed with its whole process group.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from pi_compact.errors import SettingsError
from pi_compact.pi.settings import agent_dir

if TYPE_CHECKING:
    import subprocess

    from pi_compact.llm.providers import ModelRef

MASK = "********"
# A key for this run: first in the order, as Pi's runtime --api-key is; for any provider unless RUN_KEY_PROVIDER_ENV
# names the one it is for (the Pi extension passes the key Pi resolved for the session's provider so), when a model
# of another provider never gets it and finds its own key.
RUN_KEY_ENV = "PICOMPACT_API_KEY"
RUN_KEY_PROVIDER_ENV = "PICOMPACT_API_KEY_PROVIDER"


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
# Pi gives a "!command" 10 s (its execSync timeout); so does picompact, then stops the helper and what it started.
KEY_COMMAND_TIMEOUT = 10.0
# Each command's result for the life of the process, as Pi caches it (a failure too: it is not retried).
_command_cache: dict[str, str | None] = {}
# Why a command gave no key, for the message that says so.
_command_failures: dict[str, str] = {}


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


def _stop_group(proc: subprocess.Popen[bytes]) -> None:
    """Kill the helper's process group (the helper and every process it started that stayed in it) and reap it."""
    import signal

    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    if proc.stdout is not None:
        proc.stdout.close()
    proc.wait()


class _Terminated(BaseException):
    """SIGTERM arrived while a key helper ran."""


def _raise_terminated(signum: int, frame: object) -> None:
    raise _Terminated


def _run(command: str, timeout: float) -> tuple[str | None, str]:
    """The command's trimmed output, or None and why there is none."""
    import signal
    import subprocess
    import threading

    # A SIGTERM meanwhile (the Pi extension giving up on picompact, say) stops the helper's group first, then ends
    # picompact as it would have; Ctrl-C does the same through the ``finally``.
    on_main = threading.current_thread() is threading.main_thread()
    previous = signal.getsignal(signal.SIGTERM) if on_main else None
    proc: subprocess.Popen[bytes] | None = None
    finished = terminated = False
    try:
        if on_main:
            signal.signal(signal.SIGTERM, _raise_terminated)
        # A run key bound to a provider (the key Pi resolved, passed by the extension) is not the helper's to see,
        # as it is not in the environment Pi runs its own helpers in.
        bound = os.environ.get(RUN_KEY_PROVIDER_ENV, "").strip()
        helper_env = {k: v for k, v in os.environ.items() if k != RUN_KEY_ENV} if bound else None
        try:
            # Its own session and process group, so that stopping it stops all of it; stdin and stderr are not the
            # helper's, as in Pi.
            proc = subprocess.Popen(
                command,
                shell=True,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                env=helper_env,
            )
        except OSError as exc:
            return None, f"could not start: {exc.strerror or exc}"
        try:
            out, _ = proc.communicate(timeout=timeout)
            finished = True
        except subprocess.TimeoutExpired:
            return None, f"did not finish within {timeout:g} s and was stopped"
    except _Terminated:
        terminated = True
    finally:
        if proc is not None and not finished:
            _stop_group(proc)
        if on_main:
            signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)
    if terminated:
        signal.raise_signal(signal.SIGTERM)  # handled as it would have been without the helper
        return None, "was stopped"
    assert proc is not None and finished
    if proc.returncode != 0:
        return None, f"exited with status {proc.returncode}"
    value = out.decode("utf-8", "replace").strip()
    return (value, "") if value else (None, "printed nothing")


def run_key_command(command: str, *, timeout: float | None = None) -> str | None:
    """Run a "!command" key helper (``command`` without the "!") now, uncached: its trimmed output, or None when it
    fails, prints nothing or outlives ``timeout`` seconds (default ``KEY_COMMAND_TIMEOUT``), in which case it is
    killed with every process of its group."""
    value, why = _run(command, KEY_COMMAND_TIMEOUT if timeout is None else timeout)
    if value is None:
        _command_failures[command] = why
    return value


def _run_command(command: str) -> str | None:
    """A "!command" key: the command's trimmed output, cached like Pi does."""
    if command not in _command_cache:
        _command_cache[command] = run_key_command(command)
    return _command_cache[command]


def command_failure(value: str) -> str:
    """Why the "!command" config value gave no key ("exited with status 1", …), or "" when it has not failed."""
    return _command_failures.get(value[1:], "") if value.startswith("!") else ""


def resolve_config_value(value: str, env: Mapping[str, str], extra: Mapping[str, str] | None = None) -> str | None:
    """A value in Pi's config syntax (auth.json keys, models.json ``apiKey`` and header values): "!command" runs the
    command, else "$VAR"/"${VAR}" are read from ``extra`` then the environment; None when it does not resolve.

    Only for a value about to be sent: deciding whether a key is there is ``config_value_configured``'s."""
    if value.startswith("!"):
        return _run_command(value[1:])
    return _expand(value, env, extra or {}) or None


def config_value_configured(value: str, env: Mapping[str, str], extra: Mapping[str, str] | None = None) -> bool:
    """Whether a config value provides a key, decided as Pi's ``isConfigValueConfigured`` decides it, without running
    anything: a "!command" is configured (it runs only when a request needs the key); another value when every
    variable it names is set (and it is not empty)."""
    return value.startswith("!") or resolve_config_value(value, env, extra) is not None


def config_value_env_names(value: str) -> list[str]:
    """The environment variables a config value reads (none for a "!command")."""
    if value.startswith("!"):
        return []
    names = [m.group(2) or m.group(3) for m in _TEMPLATE.finditer(value) if m.group(1) not in ("$", "!")]
    return list(dict.fromkeys(names))


def _auth_entry(provider: str, env: Mapping[str, str]) -> tuple[str | None, dict[str, str], str | None]:
    """The provider's API key in auth.json as written (config syntax) with the entry's own variables, and the
    credential type found when the entry holds no API key."""
    entry = _load_auth(auth_file(env)).get(provider)
    if not isinstance(entry, dict):
        return None, {}, None
    if entry.get("type") != "api_key":
        return None, {}, str(entry.get("type") or "unknown")
    key = entry.get("key")
    if not isinstance(key, str) or not key:
        return None, {}, "api_key"
    extra: dict[str, Any] = entry["env"] if isinstance(entry.get("env"), dict) else {}
    return key, {k: v for k, v in extra.items() if isinstance(v, str)}, None


def auth_file_raw_key(provider: str, env: Mapping[str, str]) -> str | None:
    """The provider's API key in auth.json as written ("!command", "$VAR", literal), for messages."""
    return _auth_entry(provider, env)[0]


def key_from_auth_file(provider: str, env: Mapping[str, str]) -> tuple[Secret | None, str | None]:
    """The provider's key from auth.json (a "!command" is run), and the credential type found when it is not a
    usable key."""
    key, extra, other = _auth_entry(provider, env)
    if key is None:
        return None, other
    value = resolve_config_value(key, env, extra)
    return (Secret(value, str(auth_file(env))), None) if value else (None, "api_key")


def auth_file_key_configured(provider: str, env: Mapping[str, str]) -> tuple[bool, str | None]:
    """Whether auth.json provides the provider's key (``config_value_configured``: nothing is run), and the
    credential type found when it does not."""
    key, extra, other = _auth_entry(provider, env)
    if key is None:
        return False, other
    return (True, None) if config_value_configured(key, env, extra) else (False, "api_key")


def key_from_env(model: ModelRef, env: Mapping[str, str]) -> Secret | None:
    for name in model.key_env:
        value = env.get(name, "").strip()
        if value:
            return Secret(value, name)
    return None


def key_for_the_run(env: Mapping[str, str], provider: str) -> Secret | None:
    """PICOMPACT_API_KEY for a model of ``provider``: None when it is not set, or when PICOMPACT_API_KEY_PROVIDER
    binds it to another provider."""
    value = env.get(RUN_KEY_ENV, "").strip()
    if not value:
        return None
    bound = env.get(RUN_KEY_PROVIDER_ENV, "").strip()
    return Secret(value, RUN_KEY_ENV) if not bound or bound == provider else None


def describe_source(key: Secret | None) -> str:
    """Where a key came from, for messages: "from OPENAI_API_KEY", "from /…/auth.json", or "" (no key)."""
    if key is None or not key.source:
        return ""
    return f"from {key.source}"
