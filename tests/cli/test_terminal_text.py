"""A session's text shown on a terminal: what the terminal would act on is shown, not obeyed.

Tool outputs carry what a web page, a log or a file held: escape sequences that paint or retitle the terminal or move
its cursor, C1 controls (U+009B is a one-character CSI on many terminals), and the bidirectional overrides and
isolates that reorder what a line shows ("Trojan source"). On a terminal each is written as an escape (``\\e``,
``\\xNN``, ``\\uNNNN``); a tab stays a tab. In a pipe, and in JSON, the text is exactly the session's.
"""

from __future__ import annotations

import os
from pathlib import Path

from pi_compact.cli import main
from pi_compact.cli.env import Environment, terminal_text
from tests.helpers.cli import run
from tests.helpers.sessions import SessionBuilder

HOSTILE = "ok\x1b]0;owned\x07 \x1b[2J\u009b31m\tcol \u202eevil\u202c \u2066iso\u2069 end"
SHOWN = "ok\\e]0;owned\\x07 \\e[2J\\u009b31m\tcol \\u202eevil\\u202c \\u2066iso\\u2069 end"


def _on_terminal(*args: str | Path) -> tuple[int, str]:
    env = Environment.captured(environ={**os.environ, "NO_COLOR": "1"}, tty=True)
    code = main([str(a) for a in args], env)
    return int(code), env.stdout_bytes().decode("utf-8") + env.stderr_bytes().decode("utf-8")


def _session(path: Path, cwd: str = "/work/app") -> Path:
    sb = SessionBuilder(cwd=cwd, session_id="sess-t")
    sb.user("show me the log")
    sb.tool("bash", {"command": "cat log"}, HOSTILE)
    return sb.write(path)


def test_terminal_text_escapes_controls_and_bidi_but_keeps_tabs_and_text() -> None:
    assert terminal_text(HOSTILE) == SHOWN
    assert terminal_text("naïve 日本 עברית\ttab") == "naïve 日本 עברית\ttab"  # right-to-left text itself is text


def test_grep_and_show_escape_on_a_terminal_and_not_in_a_pipe(tmp_path: Path) -> None:
    path = _session(tmp_path / "s.jsonl")
    for args in (("grep", "evil", path), ("show", path, run("grep", "evil", path, "-l").stdout.split()[0])):
        code, out = _on_terminal(*args)
        assert code == 0
        assert SHOWN in out and "\x1b" not in out and "\u202e" not in out and "\u009b" not in out
        piped = run(*args)
        assert HOSTILE in piped.stdout
    matches = [r for r in run("grep", "evil", path, "--json").jsonl if r["type"] == "match"]
    assert matches[0]["data"]["text"] == HOSTILE  # JSON: exact


def test_search_snippets_escape_on_a_terminal(tmp_path: Path, agent: Path) -> None:
    folder = agent / "sessions" / "--work-app--"
    folder.mkdir(parents=True)
    _session(folder / "s.jsonl")
    code, out = _on_terminal("search", "evil")
    assert code == 0, out
    assert "\\u202eevil" in out and "\x1b" not in out and "\u202e" not in out and "\u009b" not in out
    assert "\u202eevil" in run("search", "evil").stdout
