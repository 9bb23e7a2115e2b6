"""Fixtures of the lookup tests (the scripted model, the session and the readers live in
``tests.helpers.lookup_agent``; their names stay importable from here for older imports)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer

from tests.helpers.lookup_agent import (
    ANTHROPIC_KEY,
    BUILD_ERROR,
    OPENAI_KEY,
    SPOOF_TEXT,
    WARNINGS,
    Body,
    History,
    Reply,
    ScriptedModel,
    build_history,
    cursor_in,
    follow,
    last_result,
    system_of,
    tool_call_ids,
    tool_names,
    tool_results,
    user_texts,
)
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


__all__ = [
    "ANTHROPIC_KEY",
    "BUILD_ERROR",
    "OPENAI_KEY",
    "SPOOF_TEXT",
    "WARNINGS",
    "Body",
    "History",
    "Reply",
    "ScriptedModel",
    "build_history",
    "cursor_in",
    "follow",
    "last_result",
    "system_of",
    "tool_call_ids",
    "tool_names",
    "tool_results",
    "user_texts",
]
