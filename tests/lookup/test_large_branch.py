"""A branch far larger than the model's window is searched, not refused: every request stays inside the window."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer

from pi_compact.llm import resolve_model
from pi_compact.lookup.agent import fit_to_window, run_lookup
from pi_compact.search.transcript import build_transcript
from pi_compact.session.load import load_session
from tests.helpers.lookup_agent import ScriptedModel
from tests.helpers.sessions import SessionBuilder


def _big_branch(path: Path, turns: int = 150) -> Path:
    sb = SessionBuilder()
    for i in range(turns):
        sb.user(f"Step {i}: run the suite " + "please " * 40)
        sb.assistant("Running.", tool_calls=[(f"c{i}", "bash", {"command": f"make test-{i}"})])
        log = "\n".join(f"test_{i}_{n} ... ok " + "." * 60 for n in range(80))
        if i == 97:
            log += "\nFAILED test_97_flaky: AssertionError: expected 3, got 4"
        sb.tool_result(f"c{i}", "bash", log)
    return sb.write(path)


def _request_chars(body: dict[str, Any]) -> int:
    return len(json.dumps(body, ensure_ascii=False))


@pytest.fixture
def openai_scripted(server: HTTPServer, keys: dict[str, str]) -> ScriptedModel:
    return ScriptedModel(server, "openai")


def test_a_branch_many_times_the_window_is_searched_within_it(openai_scripted: ScriptedModel, tmp_path: Path) -> None:
    path = _big_branch(tmp_path / "big.jsonl")
    assert path.stat().st_size > 8192 * 4 * 30  # some thirty windows of text
    scripted = openai_scripted
    scripted.tools(("grep", {"pattern": "FAILED"}))
    scripted.tools(("list_entries", {}))
    scripted.tools(("grep", {"pattern": "ok", "max_count": 200}))
    scripted.answer('The failure: "FAILED test_97_flaky: AssertionError: expected 3, got 4".')
    model = resolve_model("openai/gpt-4", base_url=scripted.base_url)  # an 8,192-token window
    result = run_lookup(build_transcript(load_session(path)), "Which test failed?", model, api_key=scripted.key)
    assert "test_97_flaky" in result.answer
    assert not result.unverified_quotes
    assert len(scripted.bodies) >= 4
    for body in scripted.bodies:
        # Whole request (JSON, so an over-estimate) at 3 characters a token, plus the output: inside the window.
        limit = body.get("max_completion_tokens", body.get("max_tokens"))
        assert _request_chars(body) / 3 + limit <= 8192 * 1.1, _request_chars(body)


@pytest.mark.parametrize("window", [8_192, 32_000, 128_000, 1_000_000])
def test_limits_shrink_with_the_window_and_stay_as_they_were_for_large_ones(window: int) -> None:
    max_tokens, conversation, result = fit_to_window(window, 8_192, 10_000)
    assert max_tokens <= window // 4 or max_tokens == 256
    assert result <= conversation // 5 or result == 1_500
    assert conversation / 3 + max_tokens + 10_000 / 3 <= window or window < 10_000
    if window >= 1_000_000:
        assert (max_tokens, conversation, result) == (8_192, 400_000, 30_000)
