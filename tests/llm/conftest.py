"""Fixtures for the LLM client tests: an isolated home without provider keys (the server on 127.0.0.1 is
shared from tests/conftest.py)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from pi_compact.llm.providers import MODEL_ENV_VAR, PROVIDERS

KEY_VARS = sorted({name for spec in PROVIDERS.values() for name in spec.key_env} | {"HF_TOKEN", "MOONSHOT_API_KEY"})


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point HOME and Pi's agent dir at tmp dirs and drop any real provider keys."""
    home = tmp_path / "home"
    agent = tmp_path / "agent"
    home.mkdir()
    agent.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    for name in [*KEY_VARS, MODEL_ENV_VAR]:
        monkeypatch.delenv(name, raising=False)
    return agent


@pytest.fixture
def agent_dir(isolated_home: Path) -> Path:
    return isolated_home


@pytest.fixture
def sleeps() -> list[float]:
    """Delays the client asked to wait, recorded instead of slept."""
    return []


@pytest.fixture
def fake_sleep(sleeps: list[float]):
    return sleeps.append


@pytest.fixture
def await_workers():
    """Join the worker threads of complete_many, so a request still in flight after the call
    raised cannot land in the next test's server log."""

    def wait() -> None:
        for thread in threading.enumerate():
            if thread.name.startswith("picompact-llm-"):
                thread.join(10)
                assert not thread.is_alive()

    return wait
