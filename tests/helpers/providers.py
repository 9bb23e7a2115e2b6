"""Provider keys for tests that talk to the HTTP server on 127.0.0.1."""

from __future__ import annotations

import time

import pytest
from pytest_httpserver import HTTPServer


def set_provider_keys(monkeypatch: pytest.MonkeyPatch, openai_key: str, anthropic_key: str) -> dict[str, str]:
    """Put fake OpenAI and Anthropic keys in the environment; returns them by variable name."""
    keys = {"OPENAI_API_KEY": openai_key, "ANTHROPIC_API_KEY": anthropic_key}
    for name, value in keys.items():
        monkeypatch.setenv(name, value)
    return keys


def await_logged(server: HTTPServer, requests: int, wait: float = 10.0) -> None:
    """Wait (at most ``wait`` seconds) until the shared server has logged ``requests`` requests: it logs one when
    its handler returns, so a request the client gave up on is logged late, and without this wait it lands in the
    next test's log."""
    deadline = time.monotonic() + wait
    while len(server.log) < requests and time.monotonic() < deadline:
        time.sleep(0.01)
