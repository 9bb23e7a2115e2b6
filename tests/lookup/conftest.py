"""Fixtures of the lookup tests (the scripted model, the session and the readers live in
``tests.helpers.lookup_agent``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer

from tests.helpers.lookup_agent import ANTHROPIC_KEY, OPENAI_KEY, History, ScriptedModel, build_history
from tests.helpers.providers import set_provider_keys


@pytest.fixture
def history(tmp_path: Path) -> History:
    return build_history(tmp_path / "session.jsonl")


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> dict[str, str]:
    return set_provider_keys(monkeypatch, OPENAI_KEY, ANTHROPIC_KEY)


@pytest.fixture(params=["openai", "anthropic"])
def scripted(request: pytest.FixtureRequest, server: HTTPServer, keys: dict[str, str]) -> ScriptedModel:
    """The scripted model, once per protocol."""
    return ScriptedModel(server, request.param)
