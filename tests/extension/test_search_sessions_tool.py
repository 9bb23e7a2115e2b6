"""context_search_sessions in the extension (node with the harness's stand-in for Pi, a fake picompact that logs its
calls): registered unless picompact.crossSession is false, run as `picompact pi tool` on the whole of other
sessions (no --leaf), and context_show_entry's session argument passed through."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from pi_compact.extension.install import extension_source
from pi_compact.extension.tools import extension_tools
from tests.oracle import NODE22, NOT_INSTALLED

HARNESS = Path(__file__).with_name("extension_harness.mjs")

FAKE = r"""#!{python}
import json, sys
args = sys.argv[1:]
with open({log!r}, "a") as f:
    f.write(json.dumps(args) + "\n")
if args[:2] == ["pi", "config"]:
    config = {{"enabled": True, "mode": None, "cap": None, "lookupModel": None, "capArgs": [],
              "lookupAvailable": False, "warnings": []}}
    config.update({extra})
    config["tools"] = json.loads({tools!r})
    print(json.dumps(config))
elif args[:2] == ["pi", "tool"]:
    print(json.dumps({{"text": "TEXT " + args[2]}}))
else:
    sys.exit(2)
"""


def _run(work: Path, extra: dict[str, Any], steps: list[Any]) -> tuple[list[Any], list[list[str]]]:
    if not NODE22.exists():
        pytest.skip(NOT_INSTALLED)
    log = work / "calls.jsonl"
    fake = work / "fake-picompact"
    setting = extra.get("crossSession", "project")
    tools = extension_tools(None if setting is False else setting, lookup=False)  # what picompact pi config sends
    fake.write_text(
        FAKE.format(python=sys.executable, log=str(log), extra=repr(extra), tools=orjson.dumps(tools).decode())
    )
    fake.chmod(0o755)
    (work / "index.ts").write_bytes(extension_source())
    (work / "install.json").write_bytes(orjson.dumps({"command": [str(fake)], "version": "0", "mode": "verbatim"}))
    (work / "session.jsonl").write_bytes(b" ")
    (work / "script.json").write_bytes(orjson.dumps([["start"], *steps]))
    proc = subprocess.run(
        [str(NODE22), str(HARNESS), str(work), "script", str(work / "script.json")],
        capture_output=True,
        timeout=120,
        check=False,
        cwd=work,
    )
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")[-3000:]
    done = orjson.loads(proc.stdout)["steps"]
    calls = [orjson.loads(line) for line in log.read_bytes().split(b"\n") if line]
    shutil.rmtree(work, ignore_errors=True)
    return done, calls


def test_the_tool_searches_other_sessions_whole_and_show_entry_reads_one(tmp_path: Path) -> None:
    steps = [
        ["tool", {"name": "context_search_sessions", "params": {"query": "timeout retry", "max_count": 5}}],
        ["tool", {"name": "context_show_entry", "params": {"id": "8c2e91aa", "session": "sess-b"}}],
        ["tool", {"name": "context_show_entry", "params": {"id": "a1"}}],
        ["schema", "context_show_entry"],
        ["schema", "context_search_sessions"],
    ]
    done, calls = _run(tmp_path, {}, steps)  # no crossSession (an older picompact): the project's sessions
    assert "context_search_sessions" in done[0]["tools"]
    assert [d["result"] for d in done[1:4]] == [
        f"TEXT context_{n}" for n in ("search_sessions", "show_entry", "show_entry")
    ]
    tool_calls = [c for c in calls if c[:2] == ["pi", "tool"]]
    session = str(tmp_path / "session.jsonl")
    assert tool_calls[0] == [
        "pi",
        "tool",
        "context_search_sessions",
        session,
        "--args",
        '{"query":"timeout retry","max_count":5}',
        "--untrusted",  # Pi's answer for the project (the harness's Pi trusts none)
    ]
    assert tool_calls[1] == [
        "pi",
        "tool",
        "context_show_entry",
        session,
        "--args",
        '{"id":"8c2e91aa","session":"sess-b"}',
        "--untrusted",
    ]
    assert "--leaf" in tool_calls[2]  # this session's own branch, before the call that asked
    assert "session" in done[4]["result"]["properties"]
    schema = done[5]["result"]
    assert schema["required"] == ["query"] and schema["properties"]["max_count"]["maximum"] == 20


def test_cross_session_false_registers_no_such_tool(tmp_path: Path) -> None:
    done, _ = _run(tmp_path, {"crossSession": False}, [["schema", "context_show_entry"]])
    assert "context_search_sessions" not in done[0]["tools"] and "context_grep" in done[0]["tools"]
    assert "session" not in done[1]["result"]["properties"]
