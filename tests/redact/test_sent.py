"""Nothing detected as a secret reaches the provider: the bytes the 127.0.0.1 server received are checked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
from pytest_httpserver import HTTPServer

from tests.checkpoint.summary.conftest import (
    ANTHROPIC_KEY,
    GOOD_SUMMARY,
    OPENAI_KEY,
    OPENAI_PATH,
    openai_reply,
    summary_args,
)
from tests.helpers.cli import run
from tests.helpers.lookup_agent import ScriptedModel
from tests.helpers.sessions import SessionBuilder
from tests.redact.secrets_kit import CASES, LOOKALIKES, ORDINARY, PLANTED, case_leaks, corpus_session, secrets_session

ENV = {
    "PICOMPACT_FIXED_TIME": "2026-05-06T07:08:09.010Z",
    "PICOMPACT_ID_SEED": "redact",
    "OPENAI_API_KEY": OPENAI_KEY,
    "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
}


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _received(server: HTTPServer) -> bytes:
    """Every byte the fake provider was sent: the raw bodies, then their strings decoded (escapes cannot hide)."""
    raw = b"".join(request.get_data() for request, _ in server.log)
    decoded = "\n".join(s for request, _ in server.log for s in _strings(json.loads(request.get_data())))
    return raw + b"\n" + decoded.encode()


def _leaks(data: bytes) -> list[str]:
    text = data.decode("utf-8", "replace").replace("\\n", "\n")
    leaks = []
    for kind, secret in PLANTED.items():
        for line in secret.splitlines():
            if "PRIVATE KEY" not in line and line in text:
                leaks.append(kind)
    return leaks


def test_summary_sends_no_planted_secret_and_saves_none(server: HTTPServer, tmp_path: Path) -> None:
    server.expect_request(OPENAI_PATH).respond_with_response(openai_reply(GOOD_SUMMARY))
    path = secrets_session(tmp_path / "s.jsonl")
    before = path.read_bytes()
    result = run(*summary_args(server, path, keep=600), env=ENV)
    assert result.code == 0, result.stderr
    sent = _received(server)
    assert sent, "nothing was sent"
    assert _leaks(sent) == []
    # The model still sees where each secret was, by kind.
    for kind in PLANTED:
        assert f"[REDACTED:{kind}:1]".encode() in sent, kind
    # Ordinary text (lockfile hashes, UUIDs, an image, code) went through untouched.
    for text in ORDINARY.values():
        assert text.splitlines()[0].encode() in sent
    assert f"redaction: masked {len(PLANTED)} secrets".encode() in result.stderr_bytes
    # The raw session is untouched; the saved summary holds no secret.
    data = path.read_bytes()
    assert data.startswith(before)
    assert _leaks(data[len(before) :]) == []
    assert not any(s.encode() in result.stderr_bytes + result.stdout_bytes for s in PLANTED.values())


def test_no_redact_sends_the_history_as_it_is(server: HTTPServer, tmp_path: Path) -> None:
    server.expect_request(OPENAI_PATH).respond_with_response(openai_reply(GOOD_SUMMARY))
    path = secrets_session(tmp_path / "s.jsonl")
    result = run(*summary_args(server, path, "--no-redact", keep=600), env=ENV)
    assert result.code == 0, result.stderr
    assert PLANTED["github-token"].encode() in _received(server)
    assert b"redaction off (--no-redact)" in result.stderr_bytes


def test_dry_run_counts_by_kind_and_shows_only_placeholders(server: HTTPServer, tmp_path: Path) -> None:
    path = secrets_session(tmp_path / "s.jsonl")
    result = run(*summary_args(server, path, "--dry-run", "--json", keep=600), env=ENV)
    assert result.code == 0, result.stderr
    assert server.log == []
    data = result.json
    assert data["redaction"] == {
        "enabled": True,
        "secrets_by_kind": {kind: 1 for kind in sorted(PLANTED)},
        "secrets": len(PLANTED),
    }
    assert _leaks(result.stdout_bytes + result.stderr_bytes) == []
    text = run(*summary_args(server, path, "--dry-run", keep=600), env=ENV)
    assert f"would mask {len(PLANTED)} secrets (anthropic-key 1, ".encode() in text.stderr_bytes
    assert _leaks(text.stdout_bytes + text.stderr_bytes) == []


def _model_text(path: Path, before: bytes) -> tuple[bytes, list[dict[str, Any]]]:
    """The text of the new entries that the model reads on resume (summary, re-orientation), and the entries."""
    data = path.read_bytes()
    assert data.startswith(before)
    entries = [orjson.loads(line) for line in data[len(before) :].split(b"\n") if line.strip()]
    assert [e["type"] for e in entries] == ["compaction", "custom_message"]
    return (entries[0]["summary"] + "\n" + entries[1]["content"]).encode(), entries


def test_verbatim_redact_masks_the_checkpoint_text_only(tmp_path: Path) -> None:
    plain = secrets_session(tmp_path / "plain.jsonl")
    plain_before = plain.read_bytes()
    assert run("compact", plain, "--no-cap", "--keep-recent-tokens", "600", env=ENV).code == 0
    plain_text, plain_entries = _model_text(plain, plain_before)
    quoted = _leaks(plain_text)
    assert {"anthropic-key", "openai-key", "github-token"} <= set(quoted)
    assert b"[REDACTED:" not in plain_text

    path = secrets_session(tmp_path / "s.jsonl")
    before = path.read_bytes()
    result = run("compact", path, "--redact", "--no-cap", "--keep-recent-tokens", "600", env=ENV)
    assert result.code == 0, result.stderr
    text, entries = _model_text(path, before)
    assert _leaks(text) == []
    for kind in quoted:
        assert f"[REDACTED:{kind}:1]".encode() in text, kind
    assert b"redaction: masked" in result.stderr_bytes
    # details (file lists and the spans later compactions carry) stay on the machine unchanged.
    assert entries[0]["details"] == plain_entries[0]["details"]


def test_lookup_sends_no_planted_secret(server: HTTPServer, tmp_path: Path, keys: dict[str, str]) -> None:
    scripted = ScriptedModel(server, "openai")
    scripted.tools(("grep", {"pattern": "TOKEN|KEY|PASSWORD|Bearer|PRIVATE"}))
    scripted.tools(("list_entries", {}))
    scripted.answer("Not found in this session.")
    path = secrets_session(tmp_path / "s.jsonl")
    result = run(
        "lookup", path, "Which keys were used?", "--model", scripted.model_arg, "--base-url", scripted.base_url
    )
    assert result.code in (0, 1), result.stderr
    sent = _received(server)
    assert len(server.log) >= 3
    assert b"[REDACTED:github-token:1]" in sent
    assert _leaks(sent) == []


def test_lookup_no_redact(server: HTTPServer, tmp_path: Path, keys: dict[str, str]) -> None:
    scripted = ScriptedModel(server, "openai")
    scripted.tools(("grep", {"pattern": "GITHUB_TOKEN"}))
    scripted.answer("Not found in this session.")
    path = secrets_session(tmp_path / "s.jsonl")
    result = run(
        "lookup", path, "Which keys?", "--model", scripted.model_arg, "--base-url", scripted.base_url, "--no-redact"
    )
    assert result.code in (0, 1), result.stderr
    assert PLANTED["github-token"].encode() in _received(server)


def test_one_secret_has_one_placeholder_in_every_request_of_a_run(server: HTTPServer, tmp_path: Path) -> None:
    """A split turn sends two requests at once; a secret in both is masked alike, a second secret differently."""
    from tests.checkpoint.summary.conftest import GOOD_PREFIX

    token, other = PLANTED["github-token"], "ghp_" + "Q1w2E3r4T5y6U7i8O9p0A1s2D3f4G5h6J7k8L9z0"
    sb = SessionBuilder()
    sb.user(f"Push with {token}, please. " + "e" * 300)
    sb.assistant("Pushed " + "o" * 300)
    sb.user("Fix every failing test, then push again. " + "u" * 300)
    for i in range(8):
        sb.assistant(f"Step {i}", tool_calls=[(f"fix_{i}", "bash", {"command": f"git push https://x:{token}@gh/r"})])
        sb.tool_result(f"fix_{i}", "bash", f"pushed with {token if i % 2 else other} " + "r" * 400)
    sb.assistant("All green now", usage=5000)
    path = sb.write(tmp_path / "split.jsonl")

    def reply(request: Any) -> Any:
        body = json.loads(request.get_data())
        prefix = body["messages"][-1]["content"].startswith("# Conversation")
        return openai_reply(GOOD_PREFIX if prefix else GOOD_SUMMARY)

    server.expect_request(OPENAI_PATH).respond_with_handler(reply)
    result = run(*summary_args(server, path, keep=300), env=ENV)
    assert result.code == 0, result.stderr
    users = [json.loads(r.get_data())["messages"][-1]["content"] for r, _ in server.log]
    assert len(users) == 2  # the history and the turn prefix
    for user in users:
        assert "[REDACTED:github-token:1]" in user and token not in user and other not in user
    assert "[REDACTED:github-token:2]" in users[1] or "[REDACTED:github-token:2]" in users[0]
    assert b"redaction: masked 2 secrets (github-token 2)" in result.stderr_bytes


# ---------------------------------------------------------------------------------------------------------------
# The corpus of formats, end to end


def _decoded(server: HTTPServer) -> str:
    """The strings of every request, decoded from their JSON (what the provider reads)."""
    return "\n".join(s for request, _ in server.log for s in _strings(json.loads(request.get_data())))


def test_summary_sends_no_secret_of_the_corpus_and_every_look_alike(server: HTTPServer, tmp_path: Path) -> None:
    server.expect_request(OPENAI_PATH).respond_with_response(openai_reply(GOOD_SUMMARY))
    path = corpus_session(tmp_path / "s.jsonl")
    result = run(*summary_args(server, path, keep=600), env=ENV)
    assert result.code == 0, result.stderr
    sent = _decoded(server)
    raw = b"".join(request.get_data() for request, _ in server.log).decode()
    assert case_leaks(sent) == [] and case_leaks(raw) == []
    for kind in {case.kind for case in CASES}:
        assert f"[REDACTED:{kind}:1]" in sent, kind
    assert f"redaction: masked {len(CASES)} secrets".encode() in result.stderr_bytes
    for name, text in LOOKALIKES.items():
        for line in text.splitlines():
            assert line in sent, (name, line)


def _page_through_grep(scripted: ScriptedModel, pattern: str, answer: str) -> None:
    scripted.page_through("grep", {"pattern": pattern}, answer)


def test_lookup_sends_no_secret_of_the_corpus_and_masks_the_question(
    server: HTTPServer, tmp_path: Path, keys: dict[str, str]
) -> None:
    scripted = ScriptedModel(server, "openai")
    scripted.tools(("list_entries", {}))
    _page_through_grep(scripted, "^(?!added package).", "Not found in this session.")
    path = corpus_session(tmp_path / "s.jsonl")
    asked = [c for c in CASES if c.name in ("glued-env", "openrouter", "curl-u", "passphrase-env", "basic-auth")]
    question = "Which of these is the right one? " + " ; ".join(case.text for case in asked)
    result = run("lookup", path, question, "--model", scripted.model_arg, "--base-url", scripted.base_url)
    assert result.code in (0, 1), result.stderr
    sent = _decoded(server)
    assert len(server.log) >= 4
    assert case_leaks(sent) == []
    assert "[REDACTED:openrouter-key:1]" in sent and "Which of these is the right one?" in sent
    for kind in {case.kind for case in CASES}:
        assert f"[REDACTED:{kind}:" in sent, kind
    for name, text in LOOKALIKES.items():
        for line in text.splitlines():
            assert line in sent or len(line) > 400, (name, line)


# ---------------------------------------------------------------------------------------------------------------
# Lookup masks an entry before it cuts a window or a page out of it

_KEY = PLANTED["anthropic-key"] + "Zc4Lf6Jd8Ga0Hq2Wm9Xn4Kp8Rt3Yv6Zc1Lf5Jd0Ga7Hq2Wm"  # 108 characters


def _fragments(secret: str, size: int = 12) -> list[str]:
    return [secret[i : i + size] for i in range(0, len(secret) - size + 1)]


def test_lookup_masks_a_key_the_grep_window_starts_inside(
    server: HTTPServer, tmp_path: Path, keys: dict[str, str]
) -> None:
    from pi_compact.search.grepping import grep
    from pi_compact.search.transcript import build_transcript
    from pi_compact.session import load_session

    line = "a" * 200 + " " + _KEY + " " + "b" * 40 + " NEEDLE-7731 " + "c" * 600
    sb = SessionBuilder()
    sb.user("Deploy with the key from the vault.\n" + line)
    sb.assistant("Deployed " + "o" * 300)
    path = sb.write(tmp_path / "s.jsonl")
    window = grep(build_transcript(load_session(path)), "NEEDLE-7731").matches[0].line
    key_at = line.index(_KEY)
    assert key_at < window.offset < key_at + len(_KEY)  # the window starts inside the key

    scripted = ScriptedModel(server, "openai")
    scripted.tools(("grep", {"pattern": "NEEDLE-7731"}))
    scripted.answer("Not found in this session.")
    result = run("lookup", path, "Where is the needle?", "--model", scripted.model_arg, "--base-url", scripted.base_url)
    assert result.code in (0, 1), result.stderr
    sent = _decoded(server)
    assert "NEEDLE-7731" in sent and "[REDACTED:anthropic-key:1]" in sent
    assert [f for f in _fragments(_KEY) if f in sent] == []


def test_lookup_masks_a_key_a_show_page_ends_inside(server: HTTPServer, tmp_path: Path, keys: dict[str, str]) -> None:
    from pi_compact.search.show import show_entry
    from pi_compact.search.transcript import build_transcript
    from pi_compact.session import load_session

    def session(line: str) -> tuple[Path, str, int]:
        sb = SessionBuilder()
        sb.user("Dump the vault. " + "u" * 100)
        sb.assistant("Dumping.", tool_calls=[("c1", "bash", {"command": "vault dump"})])
        entry = sb.tool_result("c1", "bash", "vault dump:\n" + line + "\ndone")
        sb.assistant("Dumped " + "o" * 300)
        path = sb.write(tmp_path / "s.jsonl")
        transcript = build_transcript(load_session(path))
        entry_at = transcript.find(entry)
        assert entry_at is not None
        number = transcript.render(entry_at).lines.index(line) + 1
        # Where a page ends in the long line: the second page starts with it and ends inside it.
        page = show_entry(transcript, entry, page=2)
        edge = next(shown.offset + len(shown.text) for shown in page.lines if shown.number == number)
        assert edge < len(line)
        return path, entry, edge

    _, _, edge = session("x" * 30_000)
    line = "x" * (edge - 51) + " " + _KEY + " " + "y" * (30_000 - edge - 58)
    path, entry, edge = session(line)
    assert line.index(_KEY) < edge < line.index(_KEY) + len(_KEY)  # a page ends inside the key

    scripted = ScriptedModel(server, "openai")
    scripted.page_through("show_entry", {"id": entry}, "Not found in this session.")
    result = run(
        "lookup", path, "What did the dump print?", "--model", scripted.model_arg, "--base-url", scripted.base_url
    )
    assert result.code in (0, 1), result.stderr
    sent = _decoded(server)
    assert len(server.log) >= 3  # both pages were read
    assert sent.count("[REDACTED:anthropic-key:1]") >= 1 and "yyyy" in sent
    assert [f for f in _fragments(_KEY) if f in sent] == []
