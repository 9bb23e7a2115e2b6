"""``compact --mode summary --dry-run`` works for any session (it sends nothing), says where the key would come
from, and states that the output figure is a sum over requests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.checkpoint.summary.conftest import OPENAI_KEY, split_turn_session
from tests.helpers.cli import run
from tests.helpers.sessions import SessionBuilder

SEEDS = {"PICOMPACT_FIXED_TIME": "2026-05-06T07:08:09.010Z", "PICOMPACT_ID_SEED": "dry"}


def _session(path: Path, provider: str, model_id: str) -> Path:
    sb = SessionBuilder()
    sb.add({"type": "model_change", "provider": provider, "modelId": model_id})
    for i in range(6):
        sb.user(f"Turn {i}: look at src/mod{i}.py " + "x" * 400)
        sb.assistant(
            f"Reading mod{i}", tool_calls=[(f"c{i}", "read", {"path": f"src/mod{i}.py"})], model=(provider, model_id)
        )
        sb.tool_result(f"c{i}", "read", "y" * 400)
        sb.assistant(f"Done {i}", usage=1000 * (i + 1), model=(provider, model_id))
    return sb.write(path)


def _dry_run(path: Path, *extra: str, env: dict[str, str] | None = None):
    return run(
        "compact",
        path,
        "--mode",
        "summary",
        "--dry-run",
        "--keep-recent-tokens",
        "400",
        *extra,
        env={**SEEDS, **(env or {})},
    )


def _clear_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GEMINI_API_KEY", "PICOMPACT_MODEL"):
        monkeypatch.delenv(name, raising=False)


def test_a_session_on_a_provider_picompact_cannot_send_to_still_dry_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _clear_keys(monkeypatch)
    path = _session(tmp_path / "s.jsonl", "amazon-bedrock", "anthropic.claude-sonnet-4-5-20250929-v1:0")
    before = path.read_bytes()
    result = _dry_run(path, "--json")
    assert result.code == 0, result.stderr
    data = result.json
    assert data["status"] == "dry-run"
    assert data["model"]["provider"] == "amazon-bedrock" and data["model"]["sendable"] is False
    assert data["model"]["protocol"] is None and data["model"]["api_key_available"] is False
    assert data["requests"] and "<conversation>" in data["requests"][0]["user"]
    assert any("--model" in w for w in data["warnings"])
    assert path.read_bytes() == before
    text = _dry_run(path)
    assert text.code == 0, text.stderr
    assert b"picompact cannot send to this model" in text.stderr_bytes


def test_a_session_without_a_key_dry_runs_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _clear_keys(monkeypatch)
    path = _session(tmp_path / "s.jsonl", "openai", "gpt-4.1-mini")
    result = _dry_run(path)
    assert result.code == 0, result.stderr
    assert b"no API key for openai" in result.stderr_bytes


def test_the_key_source_is_named_never_the_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _clear_keys(monkeypatch)
    path = _session(tmp_path / "s.jsonl", "openai", "gpt-4.1-mini")
    from_env = _dry_run(path, "--json", env={"OPENAI_API_KEY": OPENAI_KEY})
    assert from_env.code == 0, from_env.stderr
    assert from_env.json["model"]["api_key_source"] == "OPENAI_API_KEY"
    auth = Path(monkeypatch_agent_dir(monkeypatch, tmp_path)) / "auth.json"
    auth.write_text(json.dumps({"openai": {"type": "api_key", "key": "sk-from-auth-file-000000"}}))
    from_file = _dry_run(path, env={"OPENAI_API_KEY": OPENAI_KEY, "PI_CODING_AGENT_DIR": str(auth.parent)})
    assert from_file.code == 0, from_file.stderr
    assert f"API key from {auth}".encode() in from_file.stderr_bytes
    for result in (from_env, from_file):
        assert OPENAI_KEY.encode() not in result.stdout_bytes + result.stderr_bytes
        assert b"sk-from-auth-file" not in result.stdout_bytes + result.stderr_bytes


def monkeypatch_agent_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    agent = tmp_path / "agent"
    agent.mkdir()
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    return agent


def test_the_output_figure_of_several_requests_is_called_a_sum(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _clear_keys(monkeypatch)
    path = split_turn_session(tmp_path)
    result = run("compact", path, "--mode", "summary", "--dry-run", "--keep-recent-tokens", "300", "--json", env=SEEDS)
    assert result.code == 0, result.stderr
    limits = [r["max_tokens"] for r in result.json["requests"]]
    assert len(limits) == 2
    text = run("compact", path, "--mode", "summary", "--dry-run", "--keep-recent-tokens", "300", env=SEEDS)
    expected = (
        f"output at most {sum(limits):,} tokens in all (the sum of each request's limit: {limits[0]:,} + {limits[1]:,})"
    )
    assert expected.encode() in text.stderr_bytes
