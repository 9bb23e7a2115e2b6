"""A small synchronous client for OpenAI-compatible, Anthropic and Gemini endpoints.

One function, `complete`, sends one request with timeouts and retries; `complete_many` runs a
few of them side by side. httpx is imported inside the functions so that commands which never
talk to a model do not pay for it.
"""

from __future__ import annotations

import functools
import queue
import threading
import time
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

from pi_compact.errors import ProviderError, UsageError
from pi_compact.llm import wire_anthropic, wire_google, wire_openai, wire_openai_responses
from pi_compact.llm.choice import require_api_key
from pi_compact.llm.keys import Secret, config_value_env_names, describe_source, redact, resolve_config_value
from pi_compact.llm.providers import ModelRef
from pi_compact.llm.types import Request, Response

if TYPE_CHECKING:
    import ssl

    import httpx

DEFAULT_TIMEOUT = 120.0
DEFAULT_MAX_TOKENS = 4096
MAX_RETRY_AFTER = 60.0
MAX_BACKOFF = 30.0
RETRYABLE_STATUS = frozenset({408, 429}) | frozenset(range(500, 600))
_MESSAGE_LIMIT = 300
_NOT_JSON = object()

Sleep = Callable[[float], None]


class ProviderRequestError(ProviderError):
    """A request that failed; `status` is the last HTTP status, None for timeouts and connection errors."""

    def __init__(self, message: str, *, status: int | None = None, attempts: int = 1) -> None:
        super().__init__(message)
        self.status = status
        self.attempts = attempts


def parse_retry_after(headers: Any, now: Callable[[], float] = time.time) -> float | None:
    """Seconds to wait from Retry-After (seconds or an HTTP date) or retry-after-ms, capped."""
    from email.utils import parsedate_to_datetime

    ms = _number(headers.get("retry-after-ms"))
    value = ms / 1000 if ms is not None else None
    raw = headers.get("retry-after")
    if value is None and raw:
        value = _number(raw)
        if value is None:
            try:
                value = parsedate_to_datetime(raw).timestamp() - now()
            except (TypeError, ValueError, IndexError, OverflowError):
                value = None
    if value is None or value != value:  # NaN
        return None
    return min(max(value, 0.0), MAX_RETRY_AFTER)


def _number(text: str | None) -> float | None:
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        return None


def backoff_delay(attempt: int) -> float:
    """Exponential backoff without a Retry-After: 1 s, 2 s, 4 s, … capped."""
    return min(2.0**attempt, MAX_BACKOFF)


def _endpoint(model: ModelRef, base_url: str | None) -> str:
    base = (base_url or model.base_url).strip().rstrip("/")
    if not base.startswith(("http://", "https://")):
        raise UsageError(f"base URL {base!r} must start with http:// or https://")
    if model.protocol == "anthropic":
        return f"{base}/messages" if base.endswith("/v1") else f"{base}/v1/messages"
    if model.protocol == "google":
        return f"{base}/models/{model.model_id}:generateContent"
    if model.protocol == "openai-responses":
        return f"{base}/responses"
    return f"{base}/chat/completions"


def _where(url: str) -> str:
    """scheme://host[:port] of a URL, without any user:password part, for messages."""
    import httpx

    try:
        parsed = httpx.URL(url)
    except Exception:
        return "the endpoint"
    port = f":{parsed.port}" if parsed.port else ""
    return f"{parsed.scheme}://{parsed.host}{port}"


def _ssl_env() -> tuple[str | None, str | None]:
    import os

    return os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR")


@functools.cache
def _ssl_context(cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    """httpx's own TLS context (its CA bundle, or SSL_CERT_FILE / SSL_CERT_DIR), built once per process and
    shared by every request: building one reads the whole CA bundle (about 30 ms)."""
    import httpx

    return httpx.create_ssl_context()


def _configured_headers(model: ModelRef, api_key: Secret | None) -> dict[str, str]:
    """The headers models.json sets for the provider and model, resolved as Pi resolves them (each must resolve),
    and the key as a Bearer token when the entry sets ``authHeader``."""
    import os

    headers: dict[str, str] = {}
    for name, raw in model.config_headers:
        value = resolve_config_value(raw, os.environ)
        if value is None:
            missing = config_value_env_names(raw)
            how = f"from the command {raw[1:]!r}" if raw.startswith("!") else f"({', '.join(missing)} not set)"
            raise UsageError(f'cannot resolve header "{name}" of provider {model.provider!r} in models.json {how}')
        headers[name] = value
    if model.auth_header:
        if not api_key:
            raise UsageError(f"provider {model.provider!r} sets authHeader in models.json, but no API key resolved")
        headers["Authorization"] = f"Bearer {api_key.reveal()}"
    return headers


def _client(model: ModelRef, api_key: Secret | None, timeout: float) -> httpx.Client:
    """A client carrying the auth headers, so no caller frame holds the key in a plain local."""
    import httpx

    headers = {"content-type": "application/json", "accept": "application/json", "user-agent": "picompact"}
    if model.protocol == "anthropic":
        headers["anthropic-version"] = wire_anthropic.API_VERSION
        if api_key:
            headers["x-api-key"] = api_key.reveal()
    elif model.protocol == "google":
        if api_key:
            headers["x-goog-api-key"] = api_key.reveal()
    elif api_key:
        headers["authorization"] = f"Bearer {api_key.reveal()}"
    merged = httpx.Headers(headers)
    for name, value in _configured_headers(model, api_key).items():
        merged[name] = value  # replaces a header of the same name, whatever its case
    return httpx.Client(
        headers=merged, verify=_ssl_context(*_ssl_env()), timeout=httpx.Timeout(timeout), follow_redirects=False
    )


def _body(request: Request, model: ModelRef) -> bytes:
    import orjson

    from pi_compact.llm import thinking

    limit = request.max_tokens or (model.info.max_tokens if model.info else None) or DEFAULT_MAX_TOKENS
    if model.protocol == "anthropic":
        body = wire_anthropic.build_body(request, model.model_id, limit)
        if request.reasoning is not None:
            body.update(thinking.anthropic_fields(model, request.reasoning, request.thinking_budget))
    elif model.protocol == "google":
        config = thinking.google_thinking_config(model, request.reasoning) if request.reasoning is not None else None
        body = wire_google.build_body(request, limit, config, call_ids=wire_google.requires_call_ids(model.model_id))
    elif model.protocol == "openai-responses":
        body = wire_openai_responses.build_body(request, model.model_id, limit, reasoning_model=thinking.reasons(model))
        if request.reasoning is not None:
            body.update(thinking.responses_fields(model, request.reasoning))
    else:
        body = wire_openai.build_body(request, model.model_id, limit, model.max_tokens_field)
        if request.reasoning is not None:
            body.update(thinking.openai_fields(model, request.reasoning))
    return orjson.dumps(body)


def _shorten(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= _MESSAGE_LIMIT else text[: _MESSAGE_LIMIT - 1] + "…"


def _wire(model: ModelRef) -> ModuleType:
    wires = {"anthropic": wire_anthropic, "google": wire_google, "openai-responses": wire_openai_responses}
    return wires.get(model.protocol, wire_openai)


def _json(response: httpx.Response) -> Any:
    """The decoded body, or _NOT_JSON."""
    import orjson

    try:
        return orjson.loads(response.content)
    except orjson.JSONDecodeError:
        return _NOT_JSON


def _error_text(response: httpx.Response, model: ModelRef, api_key: Secret | None) -> str:
    """The provider's own message for a failed request, shortened and with any key masked."""
    data = _json(response)
    message = _wire(model).error_message(None if data is _NOT_JSON else data)
    if message is None:
        message = response.text if response.content else response.reason_phrase
    return _shorten(redact(message or "", api_key))


def _hint(status: int, model: ModelRef, api_key: Secret | None = None) -> str:
    if status in (401, 403):
        where = f", {describe_source(api_key)}" if describe_source(api_key) else ""
        return f" (check the API key for {model.provider}{where})"
    if status == 404:
        if model.protocol in ("openai", "openai-responses"):
            return " (check the model id and the base URL; OpenAI-compatible servers usually end in /v1)"
        return " (check the model id and the base URL)"
    return ""


def _parse(response: httpx.Response, model: ModelRef, api_key: Secret | None) -> Response:
    data = _json(response)
    if data is _NOT_JSON:
        raise ProviderRequestError(
            f"{model.ref}: the provider answered HTTP {response.status_code} with a body that is not JSON",
            status=response.status_code,
        )
    try:
        return _wire(model).parse_response(data, model.model_id)
    except (ValueError, KeyError, TypeError) as exc:
        reason = _shorten(redact(str(exc), api_key))
        raise ProviderRequestError(
            f"{model.ref}: unexpected response from the provider: {reason}", status=response.status_code
        ) from None


def _as_secret(api_key: Secret | str | None, model: ModelRef) -> Secret | None:
    if isinstance(api_key, str):
        return Secret(api_key)
    return api_key if api_key is not None else require_api_key(model)


def complete(
    request: Request,
    *,
    model: ModelRef,
    api_key: Secret | str | None = None,
    base_url: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    max_retries: int = 3,
    sleep: Sleep = time.sleep,
    cancel: threading.Event | None = None,
) -> Response:
    """Send one request and return the normalised response.

    api_key None looks the key up (Pi's auth.json, then the environment). Retries 408, 429, 5xx,
    timeouts and connection errors up to max_retries times, waiting as Retry-After asks or with
    exponential backoff; other errors fail at once. Raises ProviderRequestError (exit 3).
    `cancel`, when set by another thread, stops further retries.
    """
    import httpx

    # Rebind the parameter too, so a traceback that captures locals shows only the mask.
    key = api_key = _as_secret(api_key, model)
    url = _endpoint(model, base_url)
    payload = _body(request, model)
    failure = ""
    status: int | None = None
    attempts = 0
    with _client(model, key, timeout) as client:
        for attempt in range(max(max_retries, 0) + 1):
            if cancel is not None and cancel.is_set():
                break
            attempts = attempt + 1
            wait: float | None = None
            try:
                response = client.post(url, content=payload)
            except httpx.TimeoutException:
                status, failure = None, f"no answer from {_where(url)} within {timeout:g} s"
            except httpx.TransportError as exc:
                reason = _shorten(redact(str(exc) or type(exc).__name__, key))
                status, failure = None, f"cannot reach {_where(url)}: {reason}"
            else:
                if response.status_code < 300:
                    return _parse(response, model, key)
                status = response.status_code
                text = _error_text(response, model, key)
                if status not in RETRYABLE_STATUS:
                    raise ProviderRequestError(
                        f"{model.ref}: HTTP {status}: {text}{_hint(status, model, key)}", status=status
                    )
                failure = f"HTTP {status}: {text}"
                wait = parse_retry_after(response.headers)
            if attempt >= max_retries or (cancel is not None and cancel.is_set()):
                break
            sleep(wait if wait is not None else backoff_delay(attempt))
    if not failure:
        raise ProviderRequestError(f"{model.ref}: request cancelled", attempts=0)
    tries = "1 attempt" if attempts == 1 else f"{attempts} attempts"
    raise ProviderRequestError(f"{model.ref}: {failure} (gave up after {tries})", status=status, attempts=attempts)


def complete_many(
    requests: Sequence[Request],
    *,
    model: ModelRef,
    api_key: Secret | str | None = None,
    base_url: str | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    max_retries: int = 3,
    sleep: Sleep = time.sleep,
) -> list[Response]:
    """Run requests concurrently and return their responses in order.

    The first failure is raised as soon as it happens and stops the others from retrying.
    Workers are daemon threads, so Ctrl-C in the caller is not held up by a slow provider.
    """
    key = api_key = _as_secret(api_key, model)
    send = functools.partial(
        complete, model=model, api_key=key, base_url=base_url, timeout=timeout, max_retries=max_retries, sleep=sleep
    )
    if len(requests) <= 1:
        return [send(r) for r in requests]
    cancel = threading.Event()
    done: queue.Queue[tuple[int, Response | None, BaseException | None]] = queue.Queue()

    def run(index: int, request: Request) -> None:
        try:
            done.put((index, send(request, cancel=cancel), None))
        except BaseException as exc:
            done.put((index, None, exc))

    for index, request in enumerate(requests):
        threading.Thread(target=run, args=(index, request), daemon=True, name=f"picompact-llm-{index}").start()
    results: list[Response | None] = [None] * len(requests)
    try:
        for _ in requests:
            index, result, error = done.get()
            if error is not None:
                raise error
            results[index] = result
    finally:
        cancel.set()
    return [r for r in results if r is not None]
