"""A key must never surface in an error message, its repr, or a traceback (even with locals)."""

from __future__ import annotations

import threading
import traceback

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Response

from pi_compact.llm import Message, ProviderRequestError, Request, complete, complete_many, resolve_model
from tests.helpers.providers import await_logged

KEY = "sk-very-secret-key-9f8e7d6c5b4a"


def _echo() -> dict:
    return {"error": {"message": f"Incorrect API key provided: {KEY}"}}


def _everything_shown(exc: BaseException) -> str:
    plain = "".join(traceback.format_exception(exc))
    with_locals = "".join(traceback.TracebackException.from_exception(exc, capture_locals=True).format())
    return "\n".join([str(exc), repr(exc), plain, with_locals])


@pytest.mark.parametrize("ref", ["openai/gpt-4.1-mini", "anthropic/claude-haiku-4-5"])
def test_provider_echoing_the_key_is_masked(server: HTTPServer, ref: str) -> None:
    # No local in this frame holds the key: the traceback below captures this frame's locals too.
    server.expect_request("/v1/chat/completions").respond_with_json(_echo(), status=401)
    server.expect_request("/v1/messages").respond_with_json({"type": "error", **_echo()}, status=401)
    model = resolve_model(ref, base_url=server.url_for("/v1"))
    with pytest.raises(ProviderRequestError) as info:
        complete(Request([Message.user("hi")], max_tokens=8), model=model, api_key=KEY)
    assert "Incorrect API key provided" in str(info.value)
    assert "check the API key" in str(info.value)
    assert KEY not in _everything_shown(info.value)


def test_key_absent_after_giving_up_on_timeouts(server: HTTPServer, fake_sleep) -> None:
    release = threading.Event()

    def slow(_: object) -> Response:
        release.wait(5)
        return Response("late")

    server.expect_request("/v1/chat/completions").respond_with_handler(slow)
    model = resolve_model("openai/gpt-4.1-mini", base_url=server.url_for("/v1"))
    try:
        with pytest.raises(ProviderRequestError) as info:
            complete(
                Request([Message.user("hi")], max_tokens=8),
                model=model,
                api_key=KEY,
                timeout=0.05,
                max_retries=1,
                sleep=fake_sleep,
            )
    finally:
        release.set()
        await_logged(server, 2)  # both timed-out requests
    assert KEY not in _everything_shown(info.value)


def test_key_absent_from_error_raised_by_concurrent_requests(server: HTTPServer, fake_sleep, await_workers) -> None:
    server.expect_request("/v1/chat/completions").respond_with_data(f"denied for {KEY}", status=403)
    model = resolve_model("openai/gpt-4.1-mini", base_url=server.url_for("/v1"))
    requests = [Request([Message.user("a")], max_tokens=8), Request([Message.user("b")], max_tokens=8)]
    with pytest.raises(ProviderRequestError) as info:
        complete_many(requests, model=model, api_key=KEY, sleep=fake_sleep)
    await_workers()
    assert info.value.status == 403
    assert KEY not in _everything_shown(info.value)


def test_a_rejected_key_names_where_it_came_from(server: HTTPServer, monkeypatch: pytest.MonkeyPatch) -> None:
    server.expect_request("/v1/chat/completions").respond_with_json(_echo(), status=401)
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    model = resolve_model("openai/gpt-4.1-mini", base_url=server.url_for("/v1"))
    with pytest.raises(ProviderRequestError) as info:
        complete(Request([Message.user("hi")], max_tokens=8), model=model)
    assert "check the API key for openai, from OPENAI_API_KEY" in str(info.value)
    assert KEY not in str(info.value)
