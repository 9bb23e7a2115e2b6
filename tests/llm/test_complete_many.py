"""Several requests at once, as summary mode sends for a split turn."""

from __future__ import annotations

import json
import threading

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request as WRequest
from werkzeug import Response as WResponse

from pi_compact.llm import Message, ProviderRequestError, Request, complete_many, resolve_model
from tests.helpers.process import ctrl_c_enabled

KEY = "sk-many"


def _answer(text: str) -> WResponse:
    body = {
        "model": "m",
        "choices": [{"message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1},
    }
    return WResponse(json.dumps(body), content_type="application/json")


def test_requests_run_concurrently_and_results_keep_their_order(server: HTTPServer) -> None:
    # Both handlers must be inside the server at the same time to pass the barrier.
    barrier = threading.Barrier(2, timeout=10)

    def handler(request: WRequest) -> WResponse:
        prompt = request.get_json()["messages"][-1]["content"]
        if prompt == "second":
            barrier.wait()
            return _answer("answer to second")
        barrier.wait()
        return _answer("answer to first")

    server.expect_request("/v1/chat/completions").respond_with_handler(handler)
    model = resolve_model("openai/gpt-4.1-mini", base_url=server.url_for("/v1"))
    results = complete_many(
        [Request([Message.user("first")], max_tokens=8), Request([Message.user("second")], max_tokens=8)],
        model=model,
        api_key=KEY,
        max_retries=0,
    )
    assert [r.text for r in results] == ["answer to first", "answer to second"]


def test_one_failure_raises_its_error(server: HTTPServer, fake_sleep, await_workers) -> None:
    def handler(request: WRequest) -> WResponse:
        if request.get_json()["messages"][-1]["content"] == "bad":
            return WResponse(
                json.dumps({"error": {"message": "context too long"}}), status=400, content_type="application/json"
            )
        return _answer("fine")

    server.expect_request("/v1/chat/completions").respond_with_handler(handler)
    model = resolve_model("openai/gpt-4.1-mini", base_url=server.url_for("/v1"))
    with pytest.raises(ProviderRequestError, match="context too long"):
        complete_many(
            [Request([Message.user("ok")], max_tokens=8), Request([Message.user("bad")], max_tokens=8)],
            model=model,
            api_key=KEY,
            sleep=fake_sleep,
        )
    await_workers()


def test_single_request_and_empty_list(server: HTTPServer) -> None:
    server.expect_request("/v1/chat/completions").respond_with_handler(lambda _: _answer("solo"))
    model = resolve_model("openai/gpt-4.1-mini", base_url=server.url_for("/v1"))
    assert [r.text for r in complete_many([Request([Message.user("x")], max_tokens=8)], model=model, api_key=KEY)] == [
        "solo"
    ]
    assert complete_many([], model=model, api_key=KEY) == []


def test_keyboard_interrupt_in_a_worker_reaches_the_caller(server: HTTPServer, await_workers) -> None:
    server.expect_request("/v1/chat/completions").respond_with_data("busy", status=503)

    def interrupted(_: float) -> None:
        raise KeyboardInterrupt

    model = resolve_model("openai/gpt-4.1-mini", base_url=server.url_for("/v1"))
    with pytest.raises(KeyboardInterrupt):
        complete_many(
            [Request([Message.user("a")], max_tokens=8), Request([Message.user("b")], max_tokens=8)],
            model=model,
            api_key=KEY,
            sleep=interrupted,
        )
    await_workers()


def test_ctrl_c_while_waiting_is_not_held_up_by_slow_requests(server: HTTPServer, await_workers) -> None:
    import signal

    release = threading.Event()
    arrived = threading.Semaphore(0)
    main = threading.main_thread().ident
    assert main is not None

    def slow(_: WRequest) -> WResponse:
        arrived.release()
        release.wait(10)
        return _answer("too late")

    def press_ctrl_c() -> None:
        arrived.acquire(timeout=10)
        arrived.acquire(timeout=10)
        signal.pthread_kill(main, signal.SIGINT)

    server.expect_request("/v1/chat/completions").respond_with_handler(slow)
    model = resolve_model("openai/gpt-4.1-mini", base_url=server.url_for("/v1"))
    presser = threading.Thread(target=press_ctrl_c)
    presser.start()
    try:
        with ctrl_c_enabled(), pytest.raises(KeyboardInterrupt):  # also when the tests run with SIGINT ignored
            complete_many(
                [Request([Message.user("a")], max_tokens=8), Request([Message.user("b")], max_tokens=8)],
                model=model,
                api_key=KEY,
            )
        # The interrupt reached the caller while both requests were still waiting on the server.
        assert not release.is_set()
        assert sum(t.name.startswith("picompact-llm-") and t.is_alive() for t in threading.enumerate()) == 2
    finally:
        release.set()
        presser.join()
        await_workers()
