"""Every field of a session a command prints reaches a terminal shown, not obeyed.

A session is any file: its entry ids, timestamps, types, roles, model and provider names, labels, session names,
tool names, paths and file names can hold an escape sequence (CSI, OSC, the clipboard-writing OSC 52), a C1
control (U+009B is a one-character CSI), a bidirectional mark or override, or Unicode tag characters (invisible
text). On a terminal every command writes each of them as an escape (``\\e``, ``\\uNNNN``, ``\\UNNNNNNNN``); the
only escape sequences that reach the terminal are picompact's own colours. A line break inside a field does not
start a line of its own. JSON on a terminal holds them as ``\\u`` escapes: the same JSON, the same strings.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from pi_compact.cli import main
from pi_compact.cli.env import _RESET, _STYLES, Environment, terminal_json, terminal_line, terminal_text
from tests.helpers.cli import run
from tests.helpers.sessions import SessionBuilder

# What a hostile field carries: OSC 52 (writes the clipboard), a CSI that clears the screen, the one-character CSI
# and OSC, ST, right-to-left override and isolate, the bidi marks, tag characters, NEL, and a line break.
PAYLOADS = {
    "osc52": "\x1b]52;c;Y3VybCBldmlsfHNo\x07",
    "csi": "\x1b[2J\x1b[31m",
    "c1": "\u009b2J\u009d0;title\u009c\u0085",
    "bidi": "\u202e\u2067\u200e\u200f\u061c\u202c",
    "tags": "\U000e0001\U000e0041\U000e0042\U000e007f",
    "newline": "\nFAKE LINE\r",
}
HOSTILE = "X" + "".join(PAYLOADS.values()) + "Z"
# What must not reach a terminal: ESC, C0 but tab and line feed, DEL, C1, the bidi controls and marks, tags.
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\U000e0000-\U000e007f]")
OWN_COLOURS = re.compile("|".join(re.escape(c) for c in {*_STYLES.values(), _RESET}))


def _encoded(cwd: Path) -> str:
    return "--" + str(cwd).strip("/").replace("/", "-") + "--"


def _hostile_session(sb: SessionBuilder, h: str) -> None:
    sb.header["timestamp"] = "2026-01-01T00:00:00.000Z" + h
    sb.add({"type": "model_change", "provider": "prov" + h, "modelId": "model" + h, "id": "mc" + h})
    sb.add({"type": "thinking_level_change", "thinkingLevel": "high" + h})
    sb.add({"type": "session_info", "name": "name" + h})
    user = sb.user("Always run the tests before committing. " + h)
    sb.add({"type": "label", "targetId": user, "label": "label" + h})
    call = sb.call("read" + h, {"path": "/repo/file" + h + ".py"}, call_id="call" + h)
    sb.assistant("Reading " + h, call, usage=1000, stop="stop" + h, error="error" + h)
    sb.result(call, "contents " + h)
    sb.assistant("a reply", model=("anthropic" + h, "claude" + h))
    sb.add({"type": "custom" + h, "data": 1})
    sb.custom_message("kind" + h, "injected " + h)
    sb.add({"type": "message", "id": "id" + h, "message": {"role": "user" + h, "content": "hi " + h, "timestamp": 5}})
    sb.compaction("summary " + h, sb.entries[4]["id"], details={"readFiles": ["/r" + h], "modifiedFiles": ["/m" + h]})
    sb.user("after " + h)
    sb.assistant("ok", usage=2000)
    for entry in sb.entries:
        entry["timestamp"] += h


@pytest.fixture
def project(agent: Path, tmp_path: Path) -> dict[str, Any]:
    cwd = tmp_path / "proj"
    cwd.mkdir()
    folder = agent / "sessions" / _encoded(cwd)
    folder.mkdir(parents=True)
    sb = SessionBuilder(cwd=str(cwd), session_id="sid" + HOSTILE)
    _hostile_session(sb, HOSTILE)
    path = sb.write(folder / "s.jsonl")
    sb.header["id"] = "sid2" + HOSTILE
    sb.write(folder / "s2\x1b]0;title\x07\u202e.jsonl")  # a second session (rules), its file name hostile too
    return {"cwd": cwd, "path": path, "label_id": sb.entries[4]["id"], "hostile_id": "id" + HOSTILE}


COMMANDS: list[tuple[str, ...]] = [
    ("check", "{path}"),
    ("audit", "{path}"),
    ("audit", "{path}", "--plot"),
    ("lint", "{path}"),
    ("list", "{path}"),
    ("list", "{path}", "--all-branches"),
    ("grep", "contents", "{path}"),
    ("grep", "Always", "{path}", "-C", "3"),
    ("grep", "-c", "X", "{path}"),
    ("show", "{label_id}", "{path}"),
    ("show", "{hostile_id}", "{path}"),
    ("context", "{path}"),
    ("coverage", "{path}"),
    ("search", "contents"),
    ("search", "--regex", "contents"),
    ("sessions", "--all"),
    ("sessions",),
    ("rules",),
    ("pi", "status"),
    ("compact", "{path}", "--dry-run", "--no-cap", "--keep-recent-tokens", "1", "--json"),
    ("prune", "{path}", "--dry-run", "--min-tokens", "1"),
    ("pi", "config"),
    ("search", "--stats"),
    ("lint", "--all", "{path}"),
    ("grep", "-l", "X", "{path}"),
    ("list", "{path}", "--leaf", "{hostile_id}"),
    ("context", "{path}", "--leaf", "{hostile_id}"),
    ("check", "{path}", "--leaf", "{hostile_id}", "--context-window", "200000"),
    ("audit", "{path}", "--leaf", "{hostile_id}", "--context-window", "200000"),
    ("lint", "{path}", "--leaf", "{hostile_id}"),
    ("grep", "X", "{path}", "--leaf", "{hostile_id}"),
    ("prune", "{path}", "--dry-run", "--leaf", "{hostile_id}", "--context-window", "200000"),
]
# Errors that name a field of the session: shown escaped on one line too.
FAILING: list[tuple[str, ...]] = [
    ("show", "nosuch{hostile_id}", "{path}"),
    ("check", "{path}", "--leaf", "{hostile_id}"),  # its model is unknown: the error names it
    ("list", "{path}", "--leaf", "nosuch{hostile_id}"),
]


def _on_terminal(args: list[str], cwd: Path, colour: bool) -> tuple[int, str, str]:
    environ = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    if not colour:
        environ["NO_COLOR"] = "1"
    env = Environment.captured(environ=environ, tty=True)
    saved = os.getcwd()
    os.chdir(cwd)
    try:
        code = main(args, env)
    finally:
        os.chdir(saved)
    return int(code), env.stdout_bytes().decode("utf-8"), env.stderr_bytes().decode("utf-8")


@pytest.mark.parametrize("command", COMMANDS, ids=lambda c: " ".join(c).replace("{", "").replace("}", ""))
def test_no_field_of_a_hostile_session_drives_the_terminal(project: dict[str, Any], command: tuple[str, ...]) -> None:
    args = [part.format(**project) for part in command]
    for colour in (False, True):
        code, out, err = _on_terminal(args, project["cwd"], colour)
        assert code in (0, 1), (code, err)
        assert out or err
        for stream in (out, err):
            shown = OWN_COLOURS.sub("", stream) if colour else stream
            assert not RAW.findall(shown), [line for line in shown.split("\n") if RAW.search(line)][:3]
            if args[0] == "show":  # the text of a message keeps its lines; its header stays one
                assert "\\nFAKE LINE" in out.split("\n")[0]
            else:
                assert not [line for line in stream.split("\n") if line.startswith("FAKE LINE")]


@pytest.mark.parametrize("command", FAILING, ids=lambda c: " ".join(c).replace("{", "").replace("}", ""))
def test_an_error_naming_a_hostile_field_is_one_line_shown(project: dict[str, Any], command: tuple[str, ...]) -> None:
    args = [part.format(**project) for part in command]
    code, out, err = _on_terminal(args, project["cwd"], False)
    assert code == 2 and out == ""
    assert err.startswith("picompact: error: ") and err.count("\n") == 1, err
    assert not RAW.findall(err) and "\\e]52;c;" in err


@pytest.mark.parametrize(
    "command", [("list", "{path}", "--json"), ("show", "{hostile_id}", "{path}", "--json"), ("search", "X", "--json")]
)
def test_json_on_a_terminal_is_the_same_json_with_nothing_raw(
    project: dict[str, Any], command: tuple[str, ...]
) -> None:
    args = [part.format(**project) for part in command]
    code, out, _err = _on_terminal(args, project["cwd"], colour=True)
    assert code == 0
    assert not RAW.search(out)
    saved = os.getcwd()
    os.chdir(project["cwd"])
    try:
        piped = run(*args)
    finally:
        os.chdir(saved)
    assert orjson.loads(out) == orjson.loads(piped.stdout_bytes)  # exactly the session's strings
    assert HOSTILE.replace("\n", "") in piped.stdout.replace("\\n", "") or "\\u009b" not in piped.stdout


def test_show_raw_on_a_terminal_escapes_and_in_a_pipe_is_the_line(project: dict[str, Any]) -> None:
    args = ["show", "--raw", project["label_id"], str(project["path"])]
    _code, out, _err = _on_terminal(args, project["cwd"], colour=False)
    raw = run(*args).stdout_bytes
    assert not RAW.search(out)
    assert orjson.loads(out) == orjson.loads(raw)
    assert raw.rstrip(b"\n") in project["path"].read_bytes()


@pytest.mark.parametrize("name", PAYLOADS)
def test_each_payload_is_escaped_by_the_one_function(name: str) -> None:
    text = f"a{PAYLOADS[name]}b"
    shown = terminal_text(text)
    assert not RAW.search(shown) and "\n" not in shown
    assert shown.startswith("a") and shown.endswith("b")
    # tag characters and the astral escapes are unambiguous: \U and eight digits
    if name == "tags":
        assert shown == "a\\U000e0001\\U000e0041\\U000e0042\\U000e007fb"
    if name == "bidi":
        assert shown == "a\\u202e\\u2067\\u200e\\u200f\\u061c\\u202cb"
    assert terminal_text("naïve 日本 עברית العربية 🏳️\u200d🌈\ttab") == "naïve 日本 עברית العربية 🏳️\u200d🌈\ttab"


def test_the_last_guard_keeps_own_colours_and_line_ends_and_escapes_the_rest() -> None:
    styled = f"{_STYLES['id']}abc{_RESET}\tx\ny"
    assert terminal_line(styled, colors=True) == styled
    assert terminal_line(styled + "\x1b]52;c;eA==\x07", colors=True) == styled + "\\e]52;c;eA==\\x07"
    assert terminal_line(styled, colors=False) == "\\e[35mabc\\e[0m\tx\ny"  # no colour asked: no escape at all
    for payload in PAYLOADS.values():
        assert not RAW.search(terminal_line(payload, colors=True))


def test_terminal_json_keeps_the_document() -> None:
    value = {"k" + HOSTILE: [HOSTILE, 1, None], "n": "\U000e0041"}
    data = orjson.dumps(value)
    shown = terminal_json(data)
    assert not RAW.search(shown.decode("utf-8"))
    assert orjson.loads(shown) == value
    assert b"\\udb40\\udc41" in shown  # a tag character as its surrogate pair
    assert terminal_json(b'{"a": "plain"}') == b'{"a": "plain"}'
