"""The characters that mark a snippet's highlights are never ones the entry holds: a session whose text holds the
private-use pair FTS5 is asked to mark with (or the next ones) cannot fake a highlight, nor hide a real one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.cli import run
from tests.helpers.sessions import SessionBuilder

S, E = "\ue000", "\ue001"


def _write(agent: Path, text: str) -> Path:
    folder = agent / "sessions" / "--work-app--"
    folder.mkdir(parents=True, exist_ok=True)
    sb = SessionBuilder(cwd="/work/app", session_id="sess-a")
    sb.user("hello")
    sb.tool("bash", {"command": "make"}, text)
    return sb.write(folder / "a.jsonl")


@pytest.mark.parametrize(
    "planted",
    [
        f"{S}FAKE{E}",
        f"{S}FAKE",
        f"FAKE{E}",
        f"{E}FAKE{S}",
        f"{S}{E}\ue002\ue003FAKE\ue002\ue003",
        "".join(chr(c) for c in range(0xE000, 0xE100)) + "FAKE",
    ],
)
def test_markers_in_a_session_fake_no_highlight(agent: Path, planted: str) -> None:
    _write(agent, f"the build of walrus failed; {planted} is only text, and walrus again")
    result = run("search", "walrus", "--json")
    assert result.code == 0, result.stderr
    [hit] = result.json["results"]
    snippet = hit["snippet"]
    marked = [snippet[h["start"] : h["end"]] for h in hit["highlights"]]
    assert marked == ["walrus", "walrus"]
    assert all(ch in snippet for ch in planted)  # the planted characters are shown as text


def test_the_tool_marks_only_what_matched(agent: Path) -> None:
    session = _write(agent, f"walrus and {S}FAKE{E}")
    result = run("pi", "tool", "context_search_sessions", session, "--args", json.dumps({"query": "walrus"}))
    text = result.json["text"]
    assert "«walrus»" in text and "«FAKE»" not in text
