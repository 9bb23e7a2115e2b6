"""`picompact pi checkpoint`: what the extension hands to Pi, as JSON. Verbatim: the dry run's bytes, with Pi's
settings passed explicitly. Summary: the session's model on its own server (a provider picompact does not know,
reached through --base-url with the key in the provider's variable, as the extension passes them)."""

from __future__ import annotations

from pathlib import Path

from pytest_httpserver import HTTPServer

from tests.checkpoint.summary.conftest import (
    GOOD_SUMMARY,
    OPENAI_PATH,
    bodies,
    openai_reply,
    settle,
    system_text,
    user_text,
)
from tests.helpers.cli import run
from tests.helpers.sessions import simple_session


def _session(tmp_path: Path) -> tuple[Path, str]:
    sb = simple_session(turns=6, size=400)
    return sb.write(tmp_path / "s.jsonl"), sb.leaf


def test_verbatim_checkpoint_is_the_dry_run(tmp_path: Path) -> None:
    path, leaf = _session(tmp_path)
    before = path.read_bytes()
    flags = ["--leaf", leaf, "--context-window", "32000", "--reserve-tokens", "4096", "--keep-recent-tokens", "400"]
    result = run("pi", "checkpoint", path, *flags)
    assert result.code == 0, result.stderr
    data = result.json
    dry = run("compact", path, "--mode", "verbatim", "--dry-run", "--json", *flags)
    entry = dry.json["entries"][0]
    assert data["summary"] == entry["summary"] and data["details"] == entry["details"]
    assert (data["firstKeptEntryId"], data["tokensBefore"]) == (entry["firstKeptEntryId"], entry["tokensBefore"])
    assert data["reminder"] == dry.json["entries"][1]["content"]
    assert data["settings"] == {"enabled": True, "reserveTokens": 4096, "keepRecentTokens": 400}
    assert data["leafId"] == leaf
    assert "picompact grep" in data["summary"]  # not installed here: shell commands are advertised
    assert path.read_bytes() == before  # nothing written: Pi appends it


def test_cap_settings_and_flags(tmp_path: Path) -> None:
    path, leaf = _session(tmp_path)
    base = ["--leaf", leaf, "--context-window", "32000", "--reserve-tokens", "4096", "--keep-recent-tokens", "400"]
    clash = run("pi", "checkpoint", path, *base, "--cap", "10", "--no-cap")
    assert clash.code == 2 and "--cap and --no-cap" in clash.stderr
    wrong = run("pi", "checkpoint", path, *base, "--instructions", "focus")
    assert wrong.code == 2 and "--mode summary" in wrong.stderr
    missing = run("pi", "checkpoint", path, "--leaf", leaf)
    assert missing.code == 2


def test_the_checks_of_compact_with_the_same_messages(tmp_path: Path) -> None:
    """`pi checkpoint` and `compact` check their mode flags in one place (``CheckpointRequest``)."""
    path, leaf = _session(tmp_path)
    base = ["--leaf", leaf, "--context-window", "32000", "--reserve-tokens", "4096", "--keep-recent-tokens", "400"]
    for extra, message in [
        (("--model", "openai/gpt-4.1-mini"), "--model applies only to --mode summary"),
        (("--mode", "summary", "--no-cap"), "--no-cap applies only to --mode verbatim, not --mode summary"),
        (("--cap", "-1"), "--cap must not be negative (got -1)"),
        (("--mode", "telepathy"), "--mode must be one of summary, verbatim (got 'telepathy')"),
    ]:
        result = run("pi", "checkpoint", path, *base, *extra)
        assert result.code == 2 and message in result.stderr, (extra, result.stderr)
        if extra[0] != "--model":  # compact's --model also selects the settings overrides: not summary-only
            same = run("compact", path, *extra)
            assert same.code == 2 and message in same.stderr, (extra, same.stderr)


def test_summary_checkpoint_uses_the_sessions_model_on_its_server(
    server: HTTPServer, tmp_path: Path, agent: Path
) -> None:
    path, leaf = _session(tmp_path)
    server.expect_request(OPENAI_PATH, method="POST").respond_with_response(openai_reply(GOOD_SUMMARY))
    result = run(
        "pi",
        "checkpoint",
        path,
        "--leaf",
        leaf,
        "--context-window",
        "32000",
        "--reserve-tokens",
        "4096",
        "--keep-recent-tokens",
        "400",
        "--mode",
        "summary",
        "--model",
        "my-llm/small-1",
        "--base-url",
        server.url_for("/v1"),
        "--instructions",
        "the refactoring plan",
        env={"MY_LLM_API_KEY": "sk-local-123"},
    )
    assert result.code == 0, result.stderr
    settle(server, 1)
    data = result.json
    assert data["mode"] == "summary" and data["reminder"] is None
    assert data["summary"].startswith("## Goal\nRefactor the modules")
    body = bodies(server)[0]
    assert body["model"] == "small-1"
    assert "the refactoring plan" in user_text(body)
    assert system_text(body)
    request = server.log[0][0]
    assert request.headers["Authorization"] == "Bearer sk-local-123"
    assert isinstance(data["details"]["readFiles"], list)
