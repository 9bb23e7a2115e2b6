"""`picompact pi tool context_search_sessions` (what the extension runs): the scope picompact.crossSession gives,
the text the agent reads, and context_show_entry reading an entry of another session by its session id."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from tests.helpers.cli import run
from tests.helpers.sessions import SessionBuilder


def _write(agent: Path, cwd: str, session_id: str, text: str) -> tuple[Path, str]:
    folder = agent / "sessions" / ("--" + cwd.strip("/").replace("/", "-") + "--")
    folder.mkdir(parents=True, exist_ok=True)
    sb = SessionBuilder(cwd=cwd, session_id=session_id)
    sb.user("hello")
    entry = sb.tool("bash", {"command": "make"}, text, is_error=True)
    return sb.write(folder / f"{session_id}.jsonl"), entry


@pytest.fixture
def sessions(agent: Path) -> dict[str, tuple[Path, str]]:
    return {
        "here": _write(agent, "/work/app", "sess-here", "nothing to see"),
        "sibling": _write(agent, "/work/app", "sess-sibling", "linker error: undefined symbol frobnicate"),
        "elsewhere": _write(agent, "/work/lib", "sess-elsewhere", "frobnicate failed again"),
    }


def _tool(name: str, session: Path, args: dict) -> object:
    return run("pi", "tool", name, session, "--args", json.dumps(args))


def _settings(agent: Path, value: object) -> None:
    (agent / "settings.json").write_text(json.dumps({"picompact": {"crossSession": value}}))


def test_the_project_by_default_every_session_with_all(sessions: dict, agent: Path) -> None:
    current = sessions["here"][0]
    result = _tool("context_search_sessions", current, {"query": "frobnicate"})
    assert result.code == 0, result.stderr
    text = result.json["text"]
    assert "sess-sibling" in text and "sess-elsewhere" not in text
    assert "the sessions of /work/app" in text and "«frobnicate»" in text
    assert 'context_show_entry {"id": ENTRY_ID, "session": SESSION_ID}' in text
    _settings(agent, "all")
    text = _tool("context_search_sessions", current, {"query": "frobnicate", "errors": True}).json["text"]
    assert "sess-sibling" in text and "sess-elsewhere" in text
    _settings(agent, False)
    off = _tool("context_search_sessions", current, {"query": "frobnicate"})
    assert off.code == 2 and "crossSession is false" in off.stderr


def test_show_entry_reads_an_entry_of_another_session_in_scope(sessions: dict, agent: Path) -> None:
    current = sessions["here"][0]
    _, entry = sessions["sibling"]
    result = _tool("context_show_entry", current, {"id": entry, "session": "sess-sibling"})
    assert result.code == 0, result.stderr
    assert "make" in result.json["text"]
    _, other = sessions["elsewhere"]
    refused = _tool("context_show_entry", current, {"id": other, "session": "sess-elsewhere"})
    assert refused.code == 2 and "no session 'sess-elsewhere'" in refused.stderr


def test_bad_arguments_are_the_tools_error(sessions: dict) -> None:
    current = sessions["here"][0]
    for args in ({}, {"query": ""}, {"query": "x", "max_count": 50}, {"query": "x", "colour": 1}, {"query": '"x'}):
        result = _tool("context_search_sessions", current, args)
        assert result.code == 2 and "error:" in result.stderr, args
    assert orjson.loads(_tool("context_search_sessions", current, {"query": "zzzz"}).stdout_bytes)["text"].startswith(
        "No entry matches"
    )
