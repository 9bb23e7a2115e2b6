"""``picompact compact --mode summary`` run as a user runs it, against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import os
import subprocess
import threading
from pathlib import Path
from typing import Any

import orjson
import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request as WRequest
from werkzeug import Response as WResponse

from pi_compact.checkpoint.summary import SYSTEM_PROMPT
from pi_compact.pi.catalog import find_model
from tests.checkpoint.summary.conftest import (
    ANTHROPIC_KEY,
    GOOD_PREFIX,
    GOOD_SUMMARY,
    KEEP,
    OPENAI_KEY,
    OPENAI_PATH,
    bodies,
    history_session,
    openai_reply,
    settle,
    split_turn_session,
    summary_args,
    user_text,
)
from tests.helpers.cli import picompact_exe, run
from tests.helpers.process import interrupt_when_arrived, start_interruptible

SEEDS = {"PICOMPACT_FIXED_TIME": "2026-05-06T07:08:09.010Z", "PICOMPACT_ID_SEED": "summary-cli"}
ENV = {**SEEDS, "OPENAI_API_KEY": OPENAI_KEY, "ANTHROPIC_API_KEY": ANTHROPIC_KEY}


def _summarise(server: HTTPServer, path: Path, *extra: str, env: dict[str, str] | None = None):
    return run(*summary_args(server, path, *extra), env={**ENV, **(env or {})})


def _no_secrets(*texts: str) -> None:
    for text in texts:
        assert OPENAI_KEY not in text and ANTHROPIC_KEY not in text


def _entries_after(path: Path, before: bytes) -> list[dict[str, Any]]:
    data = path.read_bytes()
    assert data.startswith(before)
    return [orjson.loads(line) for line in data[len(before) :].split(b"\n") if line.strip()]


def test_writes_the_summary_and_reports_model_and_cost(server: HTTPServer, tmp_path: Path) -> None:
    server.expect_request(OPENAI_PATH).respond_with_response(openai_reply(GOOD_SUMMARY))
    path = history_session(tmp_path)
    before = path.read_bytes()
    result = _summarise(server, path)
    assert result.code == 0, result.stderr
    assert result.stdout == ""
    [entry] = _entries_after(path, before)
    assert entry["type"] == "compaction" and entry["fromHook"] is False
    assert entry["summary"].startswith(GOOD_SUMMARY + "\n\n<read-files>\n")
    assert entry["usage"]["input"] == 1000
    assert "summary by openai/gpt-4.1-mini in 1 request" in result.stderr
    assert "picompact: compacted " in result.stderr
    [body] = bodies(server)
    assert body["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT}
    _no_secrets(result.stdout, result.stderr)


def test_json_report(server: HTTPServer, tmp_path: Path) -> None:
    server.expect_request(OPENAI_PATH).respond_with_response(openai_reply(GOOD_SUMMARY))
    result = _summarise(server, history_session(tmp_path), "--json", "--instructions", "mention the tests")
    assert result.code == 0, result.stderr
    data = result.json
    assert data["status"] == "written" and data["mode"] == "summary"
    assert data["reminder_id"] is None and len(data["entries"]) == 1
    assert data["entries"][0]["summary"].startswith(GOOD_SUMMARY)
    assert user_text(bodies(server)[0]).endswith("mention the tests")


def test_output_copy_leaves_the_session_alone(server: HTTPServer, tmp_path: Path) -> None:
    server.expect_request(OPENAI_PATH).respond_with_response(openai_reply(GOOD_SUMMARY))
    path = history_session(tmp_path)
    before = path.read_bytes()
    copy = tmp_path / "copy.jsonl"
    result = _summarise(server, path, "--output", str(copy))
    assert result.code == 0, result.stderr
    assert path.read_bytes() == before
    assert _entries_after(copy, before)[0]["summary"].startswith(GOOD_SUMMARY)


def test_split_turn_through_the_cli(server: HTTPServer, tmp_path: Path) -> None:
    def handler(request: WRequest) -> WResponse:
        prefix = user_text(request.get_json()).startswith("# Conversation\n")
        return openai_reply(GOOD_PREFIX if prefix else GOOD_SUMMARY)

    server.expect_request(OPENAI_PATH).respond_with_handler(handler)
    path = split_turn_session(tmp_path)
    before = path.read_bytes()
    result = _summarise(server, path)
    assert result.code == 0, result.stderr
    assert "in 2 requests" in result.stderr
    [entry] = _entries_after(path, before)
    assert "\n\n---\n\n**Turn Context (split turn):**\n\n" + GOOD_PREFIX in entry["summary"]


# ---------------------------------------------------------------------------------------------------------------
# Dry run


def test_dry_run_prints_the_exact_request_and_sends_nothing(server: HTTPServer, tmp_path: Path) -> None:
    path = history_session(tmp_path)
    before = path.read_bytes()
    result = _summarise(server, path, "--dry-run", "--instructions", "focus on mod2")
    assert result.code == 0, result.stderr
    assert not server.log
    assert path.read_bytes() == before
    assert SYSTEM_PROMPT in result.stdout
    assert "\n<conversation>\n[User]: Turn 0" in result.stdout
    assert result.stdout.rstrip().endswith("focus on mod2")
    assert "dry run, nothing sent: 1 request(s) to openai/gpt-4.1-mini" in result.stderr
    assert "upper bound" in result.stderr
    _no_secrets(result.stdout, result.stderr)


def test_dry_run_json_document(server: HTTPServer, tmp_path: Path) -> None:
    path = split_turn_session(tmp_path)
    result = _summarise(server, path, "--dry-run", "--json")
    assert result.code == 0, result.stderr
    assert not server.log
    data = result.json
    assert data["status"] == "dry-run" and data["mode"] == "summary" and data["is_split_turn"] is True
    assert data["model"]["provider"] == "openai" and data["model"]["api_key_available"] is True
    assert [r["kind"] for r in data["requests"]] == ["history", "turn_prefix"]
    history, prefix = data["requests"]
    assert history["system"] == SYSTEM_PROMPT and history["user"].startswith("<conversation>\n")
    assert prefix["user"].startswith("# Conversation\n")
    assert history["max_tokens"] == prefix["max_tokens"] == 32_768
    info = find_model("openai", "gpt-4.1-mini")
    assert info is not None
    input_tokens = history["input_tokens_pi"] + prefix["input_tokens_pi"]
    assert data["cost"]["input_tokens"] == input_tokens
    want = (input_tokens * info.input_cost + 2 * 32_768 * info.output_cost) / 1e6
    assert data["cost"]["usd_upper_bound"] == pytest.approx(want)
    assert data["modified_files"] and "src/fix0.py" in data["modified_files"]
    _no_secrets(result.stdout, result.stderr)


def test_dry_run_without_a_key_still_previews_the_sessions_model(tmp_path: Path) -> None:
    path = history_session(tmp_path)
    result = run("compact", path, "--mode", "summary", "--keep-recent-tokens", str(KEEP), "--dry-run", "--json")
    assert result.code == 0, result.stderr
    assert result.json["model"]["id"] == "claude-sonnet-4-5"
    assert result.json["model"]["api_key_available"] is False
    assert "no API key for anthropic" in result.stderr


def test_if_needed_sends_nothing_when_not_needed(server: HTTPServer, tmp_path: Path) -> None:
    path = history_session(tmp_path)
    before = path.read_bytes()
    result = _summarise(server, path, "--if-needed")
    assert result.code == 0, result.stderr
    assert "not needed" in result.stderr
    assert not server.log and path.read_bytes() == before


# ---------------------------------------------------------------------------------------------------------------
# Failures


def test_unusable_answers_exit_3_with_the_session_untouched(server: HTTPServer, tmp_path: Path) -> None:
    server.expect_request(OPENAI_PATH).respond_with_response(openai_reply("I cannot help with that."))
    path = history_session(tmp_path)
    before = path.read_bytes()
    result = _summarise(server, path)
    assert result.code == 3
    assert result.stderr.startswith("picompact: error: openai/gpt-4.1-mini: the history summary is unusable")
    assert len(server.log) == 2
    assert path.read_bytes() == before


def test_provider_error_as_json(server: HTTPServer, tmp_path: Path) -> None:
    server.expect_request(OPENAI_PATH).respond_with_json({"error": {"message": "invalid model"}}, status=400)
    path = history_session(tmp_path)
    before = path.read_bytes()
    result = _summarise(server, path, "--json")
    assert result.code == 3
    assert "invalid model" in result.json["error"]["message"]
    assert result.json["error"]["exit_code"] == 3
    assert path.read_bytes() == before
    _no_secrets(result.stdout, result.stderr)


def test_cut_off_reply_exits_3(server: HTTPServer, tmp_path: Path) -> None:
    server.expect_request(OPENAI_PATH).respond_with_response(openai_reply(GOOD_SUMMARY, finish="length"))
    path = history_session(tmp_path)
    before = path.read_bytes()
    result = _summarise(server, path)
    assert result.code == 3 and "incomplete" in result.stderr
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--cap", "100"), "--cap applies only to --mode verbatim"),
        (("--no-cap",), "--no-cap applies only to --mode verbatim"),
        (("--timeout", "0"), "--timeout must be a positive number"),
        (("--instructions", " "), "--instructions is empty"),
    ],
)
def test_flags_that_clash_with_summary_mode(server: HTTPServer, tmp_path: Path, extra: tuple[str, ...], message: str):
    path = history_session(tmp_path)
    result = _summarise(server, path, *extra)
    assert result.code == 2
    assert message in result.stderr
    assert not server.log


@pytest.mark.parametrize("flag", [("--instructions", "x"), ("--include-thinking",), ("--base-url", "http://x")])
def test_summary_flags_are_refused_in_verbatim_mode(tmp_path: Path, flag: tuple[str, ...]) -> None:
    result = run("compact", history_session(tmp_path), *flag, env=SEEDS)
    assert result.code == 2
    assert "applies only to --mode summary" in result.stderr


def test_no_model_and_no_key_is_a_usage_error(tmp_path: Path) -> None:
    path = history_session(tmp_path)
    before = path.read_bytes()
    result = run("compact", path, "--mode", "summary", "--keep-recent-tokens", str(KEEP), env=SEEDS)
    assert result.code == 2
    assert "no model to use" in result.stderr and "PICOMPACT_MODEL" in result.stderr
    assert path.read_bytes() == before


@pytest.mark.process
def test_ctrl_c_while_waiting_exits_130_and_writes_nothing(server: HTTPServer, tmp_path: Path) -> None:
    arrived = threading.Event()
    release = threading.Event()

    def handler(_: WRequest) -> WResponse:
        arrived.set()
        release.wait(60)
        return openai_reply(GOOD_SUMMARY)

    server.expect_request(OPENAI_PATH).respond_with_handler(handler)
    path = history_session(tmp_path)
    before = path.read_bytes()
    env = {**os.environ, **ENV}
    env.pop("PICOMPACT_DEBUG", None)
    proc = start_interruptible(
        [*picompact_exe(), *summary_args(server, path)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        _, err = interrupt_when_arrived(proc, arrived, release)
    finally:
        settle(server, 1)
    assert proc.returncode == 130, err.decode()
    assert b"interrupted" in err and b"nothing was written" in err
    assert b"Traceback" not in err
    assert path.read_bytes() == before
