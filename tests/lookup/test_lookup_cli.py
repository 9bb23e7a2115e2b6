"""``picompact lookup`` through main (in process; Ctrl-C as a real process) against the scripted model on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Response as WResponse

from pi_compact.llm import model_available
from tests.helpers.cli import run
from tests.helpers.lookup_agent import BUILD_ERROR, History, ScriptedModel, tool_names, tool_results, user_texts


def lookup(scripted: ScriptedModel, history: History, *extra: str, question: str = "What failed?") -> object:
    return run("lookup", history.path, question, "--model", scripted.model_arg, "--base-url", scripted.base_url, *extra)


def test_an_answer_is_printed_with_its_checks(history: History, scripted: ScriptedModel) -> None:
    out = history.ids["build_output"]
    scripted.tools(("grep", {"pattern": "TS2339"}))
    scripted.answer(f'The build failed: "{BUILD_ERROR}" (ENTRY {out}).')
    result = lookup(scripted, history)

    assert result.code == 0, result.stderr
    lines = result.stdout.split("\n")
    assert lines[0] == f'The build failed: "{BUILD_ERROR}" (ENTRY {out}).'
    assert "[checked] 1 quote checked against the history, all found; 1 entry cited, all exist" in lines
    assert "[incomplete]" not in result.stdout and "[note]" not in result.stdout
    assert f"{scripted.model_arg}: 1 of 10 searches, 2 model calls" in result.stderr
    assert scripted.key not in result.stdout + result.stderr


def test_json_output(history: History, scripted: ScriptedModel) -> None:
    out = history.ids["build_output"]
    scripted.tools(("grep", {"pattern": "TS2339"}))
    scripted.answer(f'It printed "Compilation finished without errors" (ENTRY {out}, ENTRY cafe0123).')
    result = lookup(scripted, history, "--json", "--budget", "4")

    assert result.code == 0, result.stderr
    data = result.json
    assert data["schema_version"] == 1 and data["session"] == str(history.path)
    assert data["answer"].startswith("It printed") and data["complete"] is True and data["found"] is True
    assert data["citations"] == [
        {"id": out, "entry_id": out, "exists": True, "explicit": True},
        {"id": "cafe0123", "entry_id": None, "exists": False, "explicit": True},
    ]
    [quote] = data["quotes"]
    assert quote["text"] == "Compilation finished without errors" and quote["verified"] is False
    assert data["unverified_quotes"] == 1 and data["unknown_citations"] == 1
    assert data["searches"] == {"used": 1, "budget": 4}
    assert data["model_calls"] == {"used": 2, "limit": 13}
    assert data["tool_calls"][0]["tool"] == "grep" and data["tool_calls"][0]["kind"] == "search"
    assert data["model"] == {"ref": scripted.model_arg, "source": "--model"}
    assert data["usage"]["output_tokens"] == 40 and data["stopped_by"] is None and data["note"] is None
    assert data["leaf_id"] == history.ids["last"]


def test_flags_are_marked_in_the_text(history: History, scripted: ScriptedModel) -> None:
    scripted.answer('It said "the deploy went fine today" (ENTRY 99999999).')
    result = lookup(scripted, history)

    # The only id cited does not exist, so nothing was found.
    assert result.code == 1
    assert result.stdout.startswith(
        'It said "the deploy went fine today" [unverified quote] (ENTRY 99999999 [no such entry]).'
    )
    assert "1 not found there [unverified quote]" in result.stdout
    assert "1 not on this branch [no such entry]" in result.stdout


def test_not_found_exits_1(history: History, scripted: ScriptedModel) -> None:
    scripted.tools(("grep", {"pattern": "kubernetes", "ignore_case": True}))
    scripted.answer(f"Not found in this session. I searched for kubernetes (nothing near ENTRY {history.ids['last']}).")
    result = lookup(scripted, history, "--json", question="Which cluster did we deploy to?")

    assert result.code == 1
    assert result.json["not_found_reply"] is True and result.json["found"] is False


def test_the_budget_write_up_is_labelled_with_a_note(history: History, scripted: ScriptedModel) -> None:
    scripted.tools(("grep", {"pattern": "TS2339"}))
    scripted.tools(("grep", {"pattern": "token"}))
    scripted.answer(f"So far: TS2339 in ENTRY {history.ids['build_output']}.")
    result = lookup(scripted, history, "--budget", "1")

    assert result.code == 0, result.stderr
    lines = result.stdout.split("\n")
    assert lines[0].startswith("[incomplete] The search stopped (all searches of the budget were used)")
    assert f"So far: TS2339 in ENTRY {history.ids['build_output']}." in lines
    note = next(line for line in lines if line.startswith("[note] "))
    assert f"picompact grep '<regex>' {history.path}" in note and f"picompact show <entry-id> {history.path}" in note
    assert tool_names(scripted.bodies[-1]) == [] and len(scripted.bodies) == 3


def test_a_failed_write_up_exits_3_with_the_latest_text(history: History, scripted: ScriptedModel) -> None:
    scripted.tools(("grep", {"pattern": "TS2339"}), text=f"Found it in ENTRY {history.ids['build_output']}.")
    scripted.tools(("grep", {"pattern": "token"}))
    scripted.fail(400, "write-up rejected")
    result = lookup(scripted, history, "--budget", "1", "--json")

    assert result.code == 3
    data = result.json
    assert data["writeup"] == "failed" and data["complete"] is False and "write-up rejected" in data["error"]
    assert data["answer"] == f"Found it in ENTRY {history.ids['build_output']}."
    assert "picompact grep" in data["note"]

    scripted.tools(("grep", {"pattern": "TS2339"}), text="Searching.")
    scripted.tools(("grep", {"pattern": "token"}))
    scripted.fail(400, "write-up rejected")
    text = lookup(scripted, history, "--budget", "1")
    assert text.code == 3
    assert text.stdout.startswith("[incomplete] The search stopped (all searches of the budget were used) and the")
    assert "write-up failed" in text.stdout and "[note] for more detail" in text.stdout


def test_a_provider_failure_exits_3(history: History, scripted: ScriptedModel) -> None:
    scripted.fail(401, "invalid api key")
    result = lookup(scripted, history, "--json")
    assert result.code == 3
    assert "HTTP 401" in result.json["error"]["message"] and "picompact: error:" in result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--budget", "0"), "--budget must be a whole number from 1 to"),
        (("--timeout", "0"), "--timeout must be a positive number"),
        (("--model", "nonsense"), "is not of the form provider/model-id"),
        (("",), "the question is empty"),
    ],
)
def test_usage_errors_exit_2(history: History, args: tuple[str, ...], message: str) -> None:
    question = () if args == ("",) else ("What failed?",)
    result = run("lookup", history.path, *question, *args)
    assert result.code == 2 and message in result.stderr


def test_no_model_or_no_key_exits_2(history: History, tmp_path: Path) -> None:
    result = run("lookup", history.path, "What failed?")
    assert result.code == 2 and "no model to use" in result.stderr
    result = run("lookup", history.path, "What failed?", env={"PICOMPACT_MODEL": "openai/gpt-4.1-mini"})
    assert result.code == 2 and "no API key for openai" in result.stderr
    missing = run("lookup", tmp_path / "nope.jsonl", "What failed?")
    assert missing.code == 2


def test_the_sessions_model_is_used_when_it_has_a_key(history: History, server: HTTPServer, keys: dict) -> None:
    """The session's assistant replies came from anthropic/claude-sonnet-4-5: with its key, no --model needed."""
    scripted = ScriptedModel(server, "anthropic")
    scripted.answer(f"ENTRY {history.ids['build_output']} holds the error.")
    result = run("lookup", history.path, "What failed?", "--base-url", scripted.base_url, "--json")
    assert result.code == 0, result.stderr
    assert result.json["model"] == {"ref": "anthropic/claude-sonnet-4-5", "source": "session"}
    assert scripted.bodies[0]["model"] == "claude-sonnet-4-5"


def test_lookup_configured_agrees_with_the_command(
    history: History, server: HTTPServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The checkpoint advertises lookup exactly when ``picompact lookup SESSION "…"`` can pick a model and key."""
    for path in ("/v1/messages", "/v1/chat/completions"):
        server.expect_request(path, method="POST").respond_with_json({"error": {"message": "no"}}, status=401)
    session_model = ("anthropic", "claude-sonnet-4-5")
    cases = [
        {},
        {"ANTHROPIC_API_KEY": "sk-ant-x"},
        {"PICOMPACT_MODEL": "openai/gpt-4.1-mini", "OPENAI_API_KEY": "sk-x"},
    ]
    for env in cases:
        for name in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "PICOMPACT_MODEL"):
            monkeypatch.delenv(name, raising=False)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        available = model_available(session_model)
        base = server.url_for("/").rstrip("/") + ("/v1" if "PICOMPACT_MODEL" in env else "")
        result = run("lookup", history.path, "What failed?", "--base-url", base)
        # Exit 2 when no model or key could be found; else the request reached the server (which refused it).
        assert result.code == (3 if available else 2), (env, result.stderr)


@pytest.mark.process
def test_ctrl_c_while_the_model_thinks_exits_130(history: History, server: HTTPServer, keys: dict) -> None:
    import subprocess
    import threading

    from tests.helpers.cli import picompact_exe
    from tests.helpers.process import interrupt_when_arrived, start_interruptible

    arrived, release = threading.Event(), threading.Event()

    def slow(request: object) -> object:
        arrived.set()
        release.wait(30)
        return WResponse("{}", status=500)

    server.expect_request("/v1/chat/completions", method="POST").respond_with_handler(slow)
    args = ["lookup", str(history.path), "What failed?", "--model", "openai/gpt-4.1-mini"]
    proc = start_interruptible(
        [*picompact_exe(), *args, "--base-url", server.url_for("/v1")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    stdout, stderr = interrupt_when_arrived(proc, arrived, release)
    assert proc.returncode == 130, stderr
    assert b"interrupted" in stderr and stdout == b""


def test_without_a_session_argument_the_directorys_latest_session_is_searched(
    tmp_path: Path, scripted: ScriptedModel
) -> None:
    from pi_compact.pi.sessions import session_dir_for_cwd
    from tests.helpers.lookup_agent import build_history

    project = tmp_path / "project"
    project.mkdir()
    sessions = session_dir_for_cwd(str(project))
    sessions.mkdir(parents=True)
    history = build_history(sessions / "2026-01-01T00-00-00-000Z_0199aaaa-0000-7000-8000-000000000001.jsonl")
    scripted.answer(f"ENTRY {history.ids['build_output']} has the error.")
    args = ("--model", scripted.model_arg, "--base-url", scripted.base_url, "--json")
    result = run("lookup", "What failed?", *args, cwd=project)
    assert result.code == 0, result.stderr
    assert result.json["session"] == str(history.path) and result.json["question"] == "What failed?"
    assert "the last entry is " + history.ids["last"] in user_texts(scripted.bodies[0])[0]
    assert run("lookup", "a", "b", "c", *args).code == 2


def test_leaf_picks_the_branch_searched(tmp_path: Path, scripted: ScriptedModel) -> None:
    from tests.helpers.sessions import SessionBuilder

    sb = SessionBuilder()
    root = sb.user("Which database?")
    old = sb.assistant("Use sqlite for now.")
    sb.user("Reconsider please", parent=root)
    new = sb.assistant("Use postgres instead.")
    path = sb.write(tmp_path / "branchy.jsonl")
    scripted.tools(("grep", {"pattern": "Use "}))
    scripted.answer(f"On this branch: sqlite (ENTRY {old}); postgres is ENTRY {new}.")
    result = run(
        "lookup", path, "Which database?", "--leaf", old, "--model", scripted.model_arg,
        "--base-url", scripted.base_url, "--json",
    )  # fmt: skip
    assert result.code == 0, result.stderr
    data = result.json
    assert data["leaf_id"] == old
    assert [(c["id"], c["exists"]) for c in data["citations"]] == [(old, True), (new, False)]
    grep_result = tool_results(scripted.bodies[1])[0][1]
    assert f"{old}:text:3:Use sqlite for now." in grep_result and "postgres" not in grep_result


def test_json_keys_are_the_declared_ones(history: History, scripted: ScriptedModel) -> None:
    from pi_compact.cli.schema import DOCUMENTS, keys

    scripted.answer("Not found in this session.")
    result = lookup(scripted, history, "--json")
    assert result.code == 1, result.stderr
    assert list(result.json) == keys(DOCUMENTS["lookup"])
