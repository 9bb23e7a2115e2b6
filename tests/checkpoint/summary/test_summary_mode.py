"""Summary mode against a real HTTP server on 127.0.0.1: what is sent, what is written, what is refused."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import orjson
import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request as WRequest
from werkzeug import Response as WResponse

from pi_compact.checkpoint.mode import get_mode
from pi_compact.checkpoint.summary import (
    NO_PRIOR_HISTORY,
    SPLIT_TURN_SEPARATOR,
    SYSTEM_PROMPT,
    SummaryMode,
    SummaryOptions,
    combine_usage,
    pi_usage,
)
from pi_compact.errors import ExitCode, ProviderError
from pi_compact.llm import Usage
from pi_compact.pi.catalog import find_model
from pi_compact.pi.plan import format_file_operations
from pi_compact.pi.projection import build_projection
from pi_compact.session import get_branch, load_session
from tests.checkpoint.summary.conftest import (
    ANTHROPIC_MODEL,
    ANTHROPIC_PATH,
    GOOD_PREFIX,
    GOOD_SUMMARY,
    OPENAI_KEY,
    OPENAI_MODEL,
    OPENAI_PATH,
    anthropic_reply,
    bodies,
    compact,
    history_session,
    openai_reply,
    settle,
    split_turn_session,
    system_text,
    user_text,
)
from tests.helpers.fixtures import PI_COMPACTION_KEYS

pytestmark = pytest.mark.usefixtures("keys")


@pytest.fixture
def sleeps() -> list[float]:
    """Back-off delays the client asked for, recorded instead of slept."""
    return []


def _mode(server: HTTPServer, sleeps: list[float], model: str = OPENAI_MODEL, **kw: Any):
    options = SummaryOptions(model=model, base_url=server.url_for("/v1"), **kw)
    return SummaryMode(options, sleep=sleeps.append)


def _new_entries(path: Path, before: bytes) -> list[dict[str, Any]]:
    data = path.read_bytes()
    assert data.startswith(before)
    return [orjson.loads(line) for line in data[len(before) :].split(b"\n") if line.strip()]


def _append(path: Path, *messages: dict[str, Any]) -> None:
    """Append messages as Pi would: each a child of the current last entry."""
    session = load_session(path)
    parent = session.entries[-1].id
    lines = []
    for n, message in enumerate(messages):
        entry_id = f"f{len(session.entries) + n:07x}"
        entry = {
            "type": "message",
            "id": entry_id,
            "parentId": parent,
            "timestamp": f"2026-02-01T00:00:{n:02d}.000Z",
            "message": {**message, "timestamp": 10 + n},
        }
        lines.append(orjson.dumps(entry) + b"\n")
        parent = entry_id
    with path.open("ab") as f:
        f.write(b"".join(lines))


def _more_turns(path: Path, count: int = 4) -> None:
    for i in range(count):
        _append(
            path,
            {"role": "user", "content": f"Later turn {i}: check src/late{i}.py " + "l" * 400},
            {"role": "assistant", "content": [{"type": "text", "text": f"late{i} fine " + "k" * 400}]},
        )


# ---------------------------------------------------------------------------------------------------------------
# Success


def test_openai_summary_is_written_as_pis_own_compaction(server: HTTPServer, sleeps: list[float], tmp_path: Path):
    server.expect_request(OPENAI_PATH, method="POST").respond_with_response(openai_reply(GOOD_SUMMARY))
    path = history_session(tmp_path)
    before = path.read_bytes()
    result = compact(path, _mode(server, sleeps))
    assert result.status == "written" and result.mode == "summary"

    [body] = bodies(server)
    assert body["model"] == "gpt-4.1-mini"
    assert body["max_completion_tokens"] == 32_768  # the model's own limit: the window has room
    assert system_text(body) == SYSTEM_PROMPT
    prompt = user_text(body)
    assert prompt.startswith("<conversation>\n[User]: Turn 0: please look at src/mod0.py")
    assert "\n</conversation>\n\n" in prompt and "<previous-summary>" not in prompt
    auth = server.log[0][0].headers["Authorization"]
    assert auth == f"Bearer {OPENAI_KEY}"

    [entry] = _new_entries(path, before)  # no re-orientation message in summary mode
    plan = result.check.plan
    assert entry["type"] == "compaction"
    assert entry["summary"] == GOOD_SUMMARY + format_file_operations(plan.read_files, plan.modified_files)
    assert "<read-files>\n/repo/src/mod0.py\n" in entry["summary"]
    assert entry["details"] == {"readFiles": plan.read_files, "modifiedFiles": plan.modified_files}
    assert entry["fromHook"] is False
    assert entry["firstKeptEntryId"] == plan.first_kept.id
    assert entry["tokensBefore"] == plan.context.tokens
    assert entry["usage"] == pi_usage(Usage(1000, 300, 200), find_model("openai", "gpt-4.1-mini"))
    assert list(entry) == PI_COMPACTION_KEYS

    projection = build_projection(get_branch(load_session(path)))
    messages = [m for pe in projection.entries for m in pe.messages]
    assert messages[0]["role"] == "compactionSummary" and messages[0]["summary"] == entry["summary"]
    kept = [pe.entry.id for pe in projection.entries[1:]]
    assert kept[0] == entry["firstKeptEntryId"]
    assert kept == [e.entry.id for e in plan.kept_entries()]


def test_anthropic_protocol_gets_the_same_request(server: HTTPServer, sleeps: list[float], tmp_path: Path):
    server.expect_request(ANTHROPIC_PATH, method="POST").respond_with_response(anthropic_reply(GOOD_SUMMARY))
    path = history_session(tmp_path)
    before = path.read_bytes()
    result = compact(path, _mode(server, sleeps, ANTHROPIC_MODEL), model=ANTHROPIC_MODEL)
    [body] = bodies(server)
    assert body["model"] == "claude-sonnet-4-5"
    assert body["max_tokens"] == 64_000
    assert body["system"] == SYSTEM_PROMPT
    assert user_text(body).startswith("<conversation>\n")
    assert server.log[0][0].headers["x-api-key"] == "sk-ant-test-0123456789abcdef"
    [entry] = _new_entries(path, before)
    assert entry["summary"].startswith(GOOD_SUMMARY)
    usage = entry["usage"]
    assert (usage["input"], usage["output"], usage["cacheRead"], usage["cacheWrite"]) == (1000, 300, 100, 50)
    assert result.checkpoint.model == ANTHROPIC_MODEL


def test_focus_text_reaches_the_request(server: HTTPServer, sleeps: list[float], tmp_path: Path):
    server.expect_request(OPENAI_PATH).respond_with_response(openai_reply(GOOD_SUMMARY))
    compact(history_session(tmp_path), _mode(server, sleeps, instructions="keep the API decisions"))
    assert user_text(bodies(server)[0]).endswith("keep the API decisions")


def test_second_compaction_updates_the_previous_summary(server: HTTPServer, sleeps: list[float], tmp_path: Path):
    server.expect_request(OPENAI_PATH).respond_with_response(openai_reply(GOOD_SUMMARY))
    path = history_session(tmp_path)
    first = compact(path, _mode(server, sleeps)).entries[0]
    _more_turns(path)
    server.clear_log()
    before = path.read_bytes()
    second = compact(path, _mode(server, sleeps))
    assert second.check.plan.previous_summary == first["summary"]
    prompt = user_text(bodies(server)[0])
    assert f"<previous-summary>\n{first['summary']}\n</previous-summary>\n\n" in prompt
    assert "KEEP everything from the previous summary" in prompt
    [entry] = _new_entries(path, before)
    # File lists carry over from Pi-shaped details (fromHook false).
    assert set(first["details"]["readFiles"]) <= set(entry["details"]["readFiles"])


def test_a_verbatim_checkpoint_is_updated_like_a_summary(server: HTTPServer, sleeps: list[float], tmp_path: Path):
    server.expect_request(OPENAI_PATH).respond_with_response(openai_reply(GOOD_SUMMARY))
    path = history_session(tmp_path)
    verbatim = compact(path, get_mode("verbatim", lookup_available=False)).entries[0]
    assert verbatim["fromHook"] is True
    _more_turns(path)
    before = path.read_bytes()
    compact(path, _mode(server, sleeps))
    prompt = user_text(bodies(server)[0])
    assert f"<previous-summary>\n{verbatim['summary']}\n</previous-summary>" in prompt
    [entry] = _new_entries(path, before)
    # Pi would drop a fromHook checkpoint's lists; picompact knows its own and carries them.
    assert set(verbatim["details"]["readFiles"]) <= set(entry["details"]["readFiles"])
    assert "<read-files>" in entry["summary"]


def test_split_turn_sends_both_requests_at_once_and_merges_them(
    server: HTTPServer, sleeps: list[float], tmp_path: Path
):
    # Each handler waits until the other request has arrived: only concurrent requests get past it.
    barrier = threading.Barrier(2, timeout=20)

    def handler(request: WRequest) -> WResponse:
        prompt = user_text(request.get_json())
        barrier.wait()
        if prompt.startswith("# Conversation\n"):
            return openai_reply(GOOD_PREFIX, usage=(800, 100, 0))
        return openai_reply(GOOD_SUMMARY, usage=(1200, 300, 200))

    server.expect_request(OPENAI_PATH).respond_with_handler(handler)
    path = split_turn_session(tmp_path)
    before = path.read_bytes()
    result = compact(path, _mode(server, sleeps))
    plan = result.check.plan
    assert plan.cut.is_split_turn and plan.messages_to_summarize
    received = bodies(server)
    assert len(received) == 2
    prompts = sorted(user_text(b) for b in received)
    assert prompts[0].startswith("# Conversation\n[User]: Fix every failing test")
    assert prompts[1].startswith("<conversation>\n[User]: Earlier turn 0")
    [entry] = _new_entries(path, before)
    files = format_file_operations(plan.read_files, plan.modified_files)
    assert entry["summary"] == f"{GOOD_SUMMARY}{SPLIT_TURN_SEPARATOR}{GOOD_PREFIX}{files}"
    info = find_model("openai", "gpt-4.1-mini")
    assert entry["usage"] == combine_usage(pi_usage(Usage(1000, 300, 200), info), pi_usage(Usage(800, 100, 0), info))
    assert "src/fix0.py" in entry["details"]["modifiedFiles"]


def test_split_turn_without_earlier_history(server: HTTPServer, sleeps: list[float], tmp_path: Path):
    server.expect_request(OPENAI_PATH).respond_with_response(openai_reply(GOOD_PREFIX))
    path = split_turn_session(tmp_path, earlier_turns=0)
    before = path.read_bytes()
    compact(path, _mode(server, sleeps))
    [body] = bodies(server)
    assert user_text(body).startswith("# Conversation\n")
    [entry] = _new_entries(path, before)
    assert entry["summary"].startswith(f"{NO_PRIOR_HISTORY}{SPLIT_TURN_SEPARATOR}{GOOD_PREFIX}")


def test_rate_limit_then_success(server: HTTPServer, sleeps: list[float], tmp_path: Path):
    server.expect_oneshot_request(OPENAI_PATH).respond_with_json(
        {"error": {"message": "slow down"}}, status=429, headers={"retry-after": "7"}
    )
    server.expect_request(OPENAI_PATH).respond_with_response(openai_reply(GOOD_SUMMARY))
    path = history_session(tmp_path)
    result = compact(path, _mode(server, sleeps))
    assert result.status == "written"
    assert len(server.log) == 2 and sleeps == [7.0]


def test_an_unchanged_span_is_not_paid_for_twice(server: HTTPServer, sleeps: list[float], tmp_path: Path):
    """Pi appends while the model writes: the re-plan finds the same span and reuses the answer."""
    path = history_session(tmp_path)

    def handler(request: WRequest) -> WResponse:
        session = load_session(path)
        extension_state = {
            "type": "custom",
            "id": "c0ffee00",
            "parentId": session.entries[-1].id,
            "timestamp": "2026-03-01T00:00:00.000Z",
            "customType": "some-extension",
            "data": {"n": 1},
        }
        if "c0ffee00" not in session.by_id:
            with path.open("ab") as f:
                f.write(orjson.dumps(extension_state) + b"\n")
        return openai_reply(GOOD_SUMMARY)

    server.expect_request(OPENAI_PATH).respond_with_handler(handler)
    result = compact(path, _mode(server, sleeps))
    assert result.attempts == 2 and result.status == "written"
    assert len(server.log) == 1
    assert result.entries[0]["parentId"] == "c0ffee00"


# ---------------------------------------------------------------------------------------------------------------
# Failures: exit 3, the session untouched


def _fails(path: Path, mode: Any, match: str) -> ProviderError:
    before = path.read_bytes()
    with pytest.raises(ProviderError, match=match) as info:
        compact(path, mode)
    assert info.value.exit_code == ExitCode.EXTERNAL
    assert path.read_bytes() == before
    assert OPENAI_KEY not in str(info.value)
    return info.value


def test_server_errors_until_giving_up(server: HTTPServer, sleeps: list[float], tmp_path: Path):
    server.expect_request(OPENAI_PATH).respond_with_json({"error": {"message": "overloaded"}}, status=500)
    _fails(history_session(tmp_path), _mode(server, sleeps, max_retries=2), "gave up after 3 attempts")
    assert len(server.log) == 3 and len(sleeps) == 2


def test_timeout(server: HTTPServer, sleeps: list[float], tmp_path: Path):
    release = threading.Event()

    def slow(_: WRequest) -> WResponse:
        release.wait(30)
        return openai_reply(GOOD_SUMMARY)

    server.expect_request(OPENAI_PATH).respond_with_handler(slow)
    try:
        _fails(history_session(tmp_path), _mode(server, sleeps, timeout=0.05, max_retries=0), "no answer")
    finally:
        release.set()
        settle(server, 1)


def test_malformed_json(server: HTTPServer, sleeps: list[float], tmp_path: Path):
    server.expect_request(OPENAI_PATH).respond_with_data('{"choices": [', content_type="application/json")
    _fails(history_session(tmp_path), _mode(server, sleeps), "not JSON")


def test_missing_sections_are_asked_for_once_more_then_refused(server: HTTPServer, sleeps: list[float], tmp_path: Path):
    partial = GOOD_SUMMARY.split("## Key Decisions")[0]
    server.expect_request(OPENAI_PATH).respond_with_response(openai_reply(partial))
    error = _fails(history_session(tmp_path), _mode(server, sleeps), "unusable after two tries")
    assert "## Key Decisions" in str(error) and "## Next Steps" in str(error)
    assert len(server.log) == 2
    assert bodies(server)[0] == bodies(server)[1]


def test_a_second_try_that_succeeds_is_written(server: HTTPServer, sleeps: list[float], tmp_path: Path):
    server.expect_oneshot_request(OPENAI_PATH).respond_with_response(openai_reply("Sure! Here is a summary."))
    server.expect_request(OPENAI_PATH).respond_with_response(openai_reply(GOOD_SUMMARY))
    path = history_session(tmp_path)
    before = path.read_bytes()
    compact(path, _mode(server, sleeps))
    [entry] = _new_entries(path, before)
    assert entry["summary"].startswith(GOOD_SUMMARY)
    assert entry["usage"]["input"] == 2 * 1000  # both replies were paid for


def test_empty_content(server: HTTPServer, sleeps: list[float], tmp_path: Path):
    server.expect_request(OPENAI_PATH).respond_with_response(openai_reply(None))
    _fails(history_session(tmp_path), _mode(server, sleeps), "empty")
    assert len(server.log) == 2


def test_a_reply_cut_off_by_the_length_limit_is_refused_at_once(
    server: HTTPServer, sleeps: list[float], tmp_path: Path
):
    server.expect_request(OPENAI_PATH).respond_with_response(openai_reply(GOOD_SUMMARY, finish="length"))
    _fails(history_session(tmp_path), _mode(server, sleeps), "output limit of 32,768 tokens and is incomplete")
    assert len(server.log) == 1


def test_a_tool_call_is_refused(server: HTTPServer, sleeps: list[float], tmp_path: Path):
    call = {"id": "c1", "type": "function", "function": {"name": "read", "arguments": json.dumps({"path": "x"})}}
    server.expect_request(OPENAI_PATH).respond_with_response(openai_reply(GOOD_SUMMARY, tool_calls=[call]))
    _fails(history_session(tmp_path), _mode(server, sleeps), "call a tool")


def test_an_anthropic_max_tokens_stop_is_refused(server: HTTPServer, sleeps: list[float], tmp_path: Path):
    server.expect_request(ANTHROPIC_PATH).respond_with_response(anthropic_reply(GOOD_SUMMARY, stop="max_tokens"))
    path = history_session(tmp_path)
    before = path.read_bytes()
    with pytest.raises(ProviderError, match="incomplete"):
        compact(path, _mode(server, sleeps, ANTHROPIC_MODEL), model=ANTHROPIC_MODEL)
    assert path.read_bytes() == before


def test_split_turn_failure_of_one_request_writes_nothing(server: HTTPServer, sleeps: list[float], tmp_path: Path):
    def handler(request: WRequest) -> WResponse:
        if user_text(request.get_json()).startswith("# Conversation\n"):
            return openai_reply(GOOD_PREFIX, finish="length")
        return openai_reply(GOOD_SUMMARY)

    server.expect_request(OPENAI_PATH).respond_with_handler(handler)
    _fails(split_turn_session(tmp_path), _mode(server, sleeps), "turn-prefix summary failed")


def test_no_key_is_a_usage_error_before_any_request(
    server: HTTPServer, sleeps: list[float], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from pi_compact.errors import UsageError

    monkeypatch.delenv("OPENAI_API_KEY")
    path = history_session(tmp_path)
    before = path.read_bytes()
    with pytest.raises(UsageError, match="OPENAI_API_KEY"):
        compact(path, _mode(server, sleeps))
    assert path.read_bytes() == before and not server.log


def test_a_library_dry_run_sends_nothing_and_previews_the_requests(
    server: HTTPServer, sleeps: list[float], tmp_path: Path
) -> None:
    """compact_session(dry_run=True) asks the mode for its preview: the exact requests, and no request is sent."""
    server.expect_request(OPENAI_PATH).respond_with_response(openai_reply(GOOD_SUMMARY))
    path = history_session(tmp_path)
    before = path.read_bytes()
    result = compact(path, _mode(server, sleeps), dry_run=True)
    assert bodies(server) == []
    assert path.read_bytes() == before
    assert result.status == "dry-run" and result.entries == [] and result.checkpoint is None
    assert result.preview is not None
    document = result.to_json()
    assert document == result.preview.to_json()
    assert document["mode"] == "summary" and document["requests"][0]["system"] == SYSTEM_PROMPT
    # The request previewed is the one a real run sends.
    compact(path, _mode(server, sleeps))
    assert user_text(bodies(server)[0]) == document["requests"][0]["user"]
