"""Provider keys for tests that talk to the HTTP server on 127.0.0.1."""

from __future__ import annotations

import pytest


def set_provider_keys(monkeypatch: pytest.MonkeyPatch, openai_key: str, anthropic_key: str) -> dict[str, str]:
    """Put fake OpenAI and Anthropic keys in the environment; returns them by variable name."""
    keys = {"OPENAI_API_KEY": openai_key, "ANTHROPIC_API_KEY": anthropic_key}
    for name, value in keys.items():
        monkeypatch.setenv(name, value)
    return keys
