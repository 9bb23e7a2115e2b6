"""A key across a cut: summary mode masks a tool result before Pi's 2,000-character cut, lookup before its pages'."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_httpserver import HTTPServer

from tests.checkpoint.summary.conftest import GOOD_SUMMARY, OPENAI_PATH, openai_reply, summary_args
from tests.helpers.cli import run
from tests.helpers.sessions import SessionBuilder
from tests.redact.test_sent import ENV, _decoded

KEY = "ghp_" + "R2d4F6h8J0k2L4z6X8c0V2b4N6m8Q0w2E4r6"


def test_summary_masks_a_key_that_pis_cut_of_a_tool_result_goes_through(server: HTTPServer, tmp_path: Path) -> None:
    server.expect_request(OPENAI_PATH).respond_with_response(openai_reply(GOOD_SUMMARY))
    sb = SessionBuilder()
    sb.user("Show the env. " + "u" * 200)
    for i, at in enumerate((1_990, 1_996, 2_000 - len(KEY) // 2)):
        sb.assistant(f"Reading {i}.", tool_calls=[(f"c{i}", "bash", {"command": "env"})])
        sb.tool_result(f"c{i}", "bash", "y" * (at - 1) + " " + KEY[:-1] + str(i) + " tail " + "z" * 3_000)
    for i in range(5):
        sb.user(f"Later turn {i} " + "l" * 400)
        sb.assistant(f"late{i} is fine " + "k" * 400)
    path = sb.write(tmp_path / "s.jsonl")
    result = run(*summary_args(server, path, keep=600), env=ENV)
    assert result.code == 0, result.stderr
    sent = _decoded(server) + b"".join(r.get_data() for r, _ in server.log).decode()
    assert "yyyy" in sent and "[REDACTED:github-tok" in sent  # a placeholder Pi's cut may shorten
    assert "ghp_R2d4" not in sent and "more characters truncated" in sent


def test_no_redact_still_cuts_as_pi_does(server: HTTPServer, tmp_path: Path) -> None:
    server.expect_request(OPENAI_PATH).respond_with_response(openai_reply(GOOD_SUMMARY))
    sb = SessionBuilder()
    sb.user("Show the env. " + "u" * 200)
    sb.assistant("Reading.", tool_calls=[("c0", "bash", {"command": "env"})])
    sb.tool_result("c0", "bash", "y" * 1_989 + " " + KEY + " " + "z" * 3_000)
    for i in range(5):
        sb.user(f"Later turn {i} " + "l" * 400)
        sb.assistant(f"late{i} is fine " + "k" * 400)
    path = sb.write(tmp_path / "s.jsonl")
    assert run(*summary_args(server, path, "--no-redact", keep=600), env=ENV).code == 0
    users = [json.loads(r.get_data())["messages"][-1]["content"] for r, _ in server.log]
    assert any(KEY[:10] in u and KEY not in u for u in users)  # Pi's cut, unmasked
