"""The real Pi 1.6 CLI resumes a session compacted in summary mode with the summary first, then the kept tail.

Needs Pi (``make pi``, tools/pi); skipped cleanly without it.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request as WRequest
from werkzeug import Response as WResponse

from pi_compact.pi.messages import COMPACTION_SUMMARY_PREFIX, COMPACTION_SUMMARY_SUFFIX
from tests.checkpoint.summary.conftest import (
    GOOD_PREFIX,
    GOOD_SUMMARY,
    OPENAI_KEY,
    OPENAI_PATH,
    openai_reply,
    summary_args,
)
from tests.checkpoint.summary.conftest import user_text as request_user_text
from tests.helpers.cli import run
from tests.helpers.fixtures import PI_FIXTURES
from tests.oracle import NOT_INSTALLED, RESUME, pi_installed

pytestmark = pytest.mark.skipif(not pi_installed(), reason=NOT_INSTALLED)


def _answer(request: WRequest) -> WResponse:
    prefix = request_user_text(request.get_json()).startswith("# Conversation\n")
    return openai_reply(GOOD_PREFIX if prefix else GOOD_SUMMARY)


@pytest.mark.parametrize(("fixture", "keep"), [("gen-split-turn-101", "20000"), ("gen-medium-101", "8000")])
def test_pi_resumes_with_the_summary_first(server: HTTPServer, tmp_path: Path, fixture: str, keep: str) -> None:
    server.expect_request(OPENAI_PATH).respond_with_handler(_answer)
    path = tmp_path / f"{fixture}.jsonl"
    shutil.copyfile(PI_FIXTURES / f"{fixture}.jsonl", path)
    compacted = run(*summary_args(server, path, "--json", keep=keep), env={"OPENAI_API_KEY": OPENAI_KEY})
    assert compacted.code == 0, compacted.stderr
    entry = compacted.json["entries"][0]

    proc = subprocess.run(
        [sys.executable, str(RESUME), "--timeout", "180", str(path)], capture_output=True, timeout=300, check=False
    )
    report = json.loads(proc.stdout)
    assert report["ok"] is True, proc.stdout[-2000:]
    summary = report["compactionSummary"]
    assert summary["entryId"] == entry["id"] and summary["foundInRequest"] is True
    assert report["firstNonSystemIsCompactionSummary"] is True
    assert summary["textAsSent"] == COMPACTION_SUMMARY_PREFIX + entry["summary"] + COMPACTION_SUMMARY_SUFFIX
    messages = report["messages"]
    index = summary["messageIndex"]
    assert [m["role"] for m in messages[:index]] == ["system"]
    # Right after the summary comes the first kept entry, and the new prompt ends the request.
    assert messages[index + 1]["entry"]["id"] == entry["firstKeptEntryId"]
    assert report["newPrompt"]["isLast"] is True
