"""The extension's own logic, run by node with a stand-in for Pi's API and a fake picompact that logs its calls:
context_lookup's one-attempt rule, the filter that keeps only the newest reminder, the agreement check on Pi's cut,
and where the reminder is delivered. (The same behaviour in the real Pi CLI: test_pi_e2e.py.)"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest

from pi_compact.extension.install import extension_source
from pi_compact.extension.tools import extension_tools
from tests.helpers.cli import run
from tests.oracle import NODE22, NOT_INSTALLED

HARNESS = Path(__file__).with_name("extension_harness.mjs")

FAKE = r"""#!{python}
import json, os, signal, sys, time
args = sys.argv[1:]
with open({log!r}, "a") as f:
    f.write(json.dumps(args) + "\n")
with open({log!r} + ".key", "a") as f:  # the key the extension passed
    f.write(json.dumps(os.environ.get("PICOMPACT_API_KEY")) + "\n")
with open({log!r} + ".provider", "a") as f:  # the provider it is bound to
    f.write(json.dumps(os.environ.get("PICOMPACT_API_KEY_PROVIDER")) + "\n")
# What to do instead of answering (a script's "behave" step writes it): hang, hang ignoring SIGTERM, reply with
# something that is not JSON, crash, or report an error.
try:
    with open({behaviour!r}) as f:
        behaviour = json.load(f)
except FileNotFoundError:
    behaviour = {{}}
what = behaviour.get({{"config": "config", "checkpoint": "checkpoint"}}.get(args[1] if len(args) > 1 else "", ""), "ok")
if what in ("hang", "stubborn"):
    if what == "stubborn":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    with open({pids!r}, "a") as f:
        f.write(str(os.getpid()) + "\n")
    time.sleep(600)
elif what == "garbage":
    print("Checkpoint written.")
    sys.exit(0)
elif what == "crash":
    sys.stderr.write("picompact: error: internal error (RuntimeError); run with --debug for the traceback\n")
    sys.exit(70)
elif what == "error":
    sys.stderr.write("picompact: error: s.jsonl: line 3 is not valid JSON\n")
    sys.exit(2)
if args[:2] == ["pi", "config"]:
    print(json.dumps({{"enabled": {enabled}, "mode": None, "cap": None, "lookupModel": None, "capArgs": [],
                      "lookupAvailable": True, "warnings": [], "tools": json.loads({tools!r})}}))
elif args[:2] == ["pi", "checkpoint"]:
    print(json.dumps({{"mode": "verbatim", "summary": "# Verbatim checkpoint (picompact)\nS",
                      "firstKeptEntryId": "k1", "tokensBefore": 1234, "details": {{"picompact": {{}}}},
                      "reminder": "REMINDER", "reminderCustomType": "picompact.reorientation",
                      "settings": {{"enabled": True, "reserveTokens": 4096, "keepRecentTokens": 4000}},
                      "stats": {{"tokens_before": 1234, "tokens_after": 600, "freed_tokens": 634,
                                "freed_percent": 51.4}}, "trimmed": True, "warnings": []}}))
elif args[:1] == ["lookup"]:
    print(json.dumps({{"answer": "ANSWER " + args[-2], "note": None}}))
elif args[:2] == ["pi", "tool"]:
    print(json.dumps({{"text": "RESULT " + args[2]}}))
else:
    sys.exit(2)
"""


def _run_harness(
    work: Path,
    *,
    enabled: bool = True,
    script: list[Any] | None = None,
    session_bytes: int = 0,
    mode: str = "verbatim",
) -> dict[str, Any]:
    """Run the harness with the fake picompact; ``script``: steps to run instead of the fixed sequence."""
    if not NODE22.exists():
        pytest.skip(NOT_INSTALLED)
    log = work / "calls.jsonl"
    pids = work / "hung.pids"
    fake = work / "fake-picompact"
    behaviour = work / "behaviour.json"
    fake.write_text(
        FAKE.format(
            python=sys.executable,
            log=str(log),
            enabled=enabled,
            behaviour=str(behaviour),
            pids=str(pids),
            tools=orjson.dumps(extension_tools("project", lookup=True)).decode(),
        )
    )
    fake.chmod(0o755)
    (work / "index.ts").write_bytes(extension_source())
    (work / "install.json").write_bytes(orjson.dumps({"command": [str(fake)], "version": "0", "mode": mode}))
    (work / "session.jsonl").write_bytes(b" " * session_bytes)
    scenario = [] if enabled else ["disabled"]
    if script is not None:
        (work / "script.json").write_bytes(orjson.dumps(script))
        scenario = ["script", str(work / "script.json")]
    args = [str(NODE22), str(HARNESS), str(work), *scenario]
    proc = subprocess.run(args, capture_output=True, timeout=120, check=False, cwd=work)
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")[-3000:]
    data = orjson.loads(proc.stdout)
    data["calls"] = [orjson.loads(line) for line in log.read_bytes().split(b"\n") if line] if log.exists() else []
    data["stderr"] = proc.stderr.decode("utf-8", "replace")
    for name, suffix in (("keys", "key"), ("providers", "provider")):
        path = Path(f"{log}.{suffix}")
        data[name] = [orjson.loads(line) for line in path.read_bytes().split(b"\n") if line] if path.exists() else []
    data["hung"] = [int(pid) for pid in pids.read_text().split()] if pids.exists() else []
    shutil.rmtree(work, ignore_errors=True)
    return data


@pytest.fixture(scope="module")
def observed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _run_harness(tmp_path_factory.mktemp("ext"))


def test_disabled_in_settings_does_nothing(tmp_path: Path) -> None:
    """picompact.enabled false: no tools, and Pi compacts its own way without picompact being asked."""
    data = _run_harness(tmp_path, enabled=False)
    assert data["tools"] == [] and data["compaction"] is None
    assert [c[:2] for c in data["calls"]] == [["pi", "config"]]


def test_the_tools_registered_are_the_ones_picompact_defines(observed: dict[str, Any]) -> None:
    """The extension holds no copy of the tools: it registers what `picompact pi config --json` sends."""
    python = [
        {k: t[k] for k in ("name", "label", "description", "parameters")} for t in extension_tools("project", True)
    ]
    assert observed["toolSpecs"] == python
    real = run("pi", "config", "--json").json["tools"]  # what the command sends (no lookup model here)
    assert [t["name"] for t in real] == [t["name"] for t in python if t["name"] != "context_lookup"]


def test_tools_and_command_are_registered(observed: dict[str, Any]) -> None:
    assert observed["tools"] == [
        "context_grep",
        "context_list_entries",
        "context_lookup",
        "context_search_sessions",
        "context_show_entry",
    ]
    assert observed["commands"] == ["picompact"]


def test_context_lookup_allows_one_attempt_until_a_reset(observed: dict[str, Any]) -> None:
    allowed = {k: observed[k].startswith("ANSWER") for k in "abcdefg"}
    # a and b share one assistant message: only the first runs; a fallback search (c) does not reset; another
    # tool's result (d), a user message (e, then f refused) and a bash execution (g) do.
    assert allowed == {"a": True, "b": False, "c": False, "d": True, "e": True, "f": False, "g": True}
    assert "context_grep" in observed["b"]
    lookups = [c for c in observed["calls"] if c[0] == "lookup"]
    assert [c[-2] for c in lookups] == ["q a", "q d", "q e", "q g"]  # QUESTION [SESSION], as grep takes them
    assert all(c[-3] == "--" and c[-1].endswith(".jsonl") for c in lookups)
    # Searched up to the message before the assistant message holding the call.
    assert all(c[c.index("--leaf") + 1] == "u1" for c in lookups)


def test_only_the_reminder_of_the_latest_compaction_reaches_the_model(observed: dict[str, Any]) -> None:
    assert observed["context"] == ["u", [], "r3"]  # the newest one tagged with the latest compaction
    assert observed["contextUnchanged"] is None
    assert observed["contextStale"] == ["u"]  # Pi compacted its own way since: no picompact reminder applies


def test_a_disagreeing_cut_leaves_pi_to_compact(observed: dict[str, Any]) -> None:
    assert observed["disagree"] is None
    assert "picompact: picompact would cut at k1, Pi at u1" in observed["stderr"]
    assert "Pi compacts its own way" in observed["stderr"]
    checkpoint = next(c for c in observed["calls"] if c[:2] == ["pi", "checkpoint"])
    assert checkpoint[checkpoint.index("--leaf") + 1] == "a1"
    assert checkpoint[checkpoint.index("--keep-recent-tokens") + 1] == "4000"
    assert checkpoint[checkpoint.index("--context-window") + 1] == "24000"


def test_the_reminder_goes_where_the_work_resumes(observed: dict[str, Any]) -> None:
    for key in ("agreeIdle", "agreeRunning", "overflow", "manual"):
        assert observed[key]["compaction"]["firstKeptEntryId"] == "k1"
        assert observed[key]["compaction"]["tokensBefore"] == 1234
    delivered = [(m["message"]["details"]["compactionId"], m["options"]) for m in observed["sent"]]
    assert delivered == [
        ("c-threshold", {"triggerTurn": False}),  # after a run: before the next prompt
        ("c-threshold", {"deliverAs": "steer"}),  # mid-run: before the next request of the run
        ("c-overflow", {"deliverAs": "steer"}),  # the retried request
        ("c-manual", {"triggerTurn": False}),
    ]
    assert all(m["message"]["content"] == "REMINDER" and m["message"]["display"] is False for m in observed["sent"])


def test_picompact_command_shows_configuration_and_last_compaction(observed: dict[str, Any]) -> None:
    shown = observed["stderr"].split("--- /picompact ---\n", 1)[1]
    assert "picompact: enabled, mode verbatim, cap default (keepRecentTokens / 2), lookup session model" in shown
    assert "last compaction (manual, verbatim): 1234 -> 600 tokens, 634 freed (51%), trimmed by the cap: yes" in shown


# --------------------------------------------------------------------------------------------------------------
# When picompact does not answer in time, crashes or replies with something that is not its JSON


def _gone(pid: int) -> bool:
    """The process has exited (a zombie nobody reaps counts as gone)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state in ("Z", "X")


def _all_gone(pids: list[int]) -> bool:
    deadline = time.monotonic() + 10  # the SIGKILL follows a grace period after the SIGTERM
    while not all(_gone(pid) for pid in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    leftover = [pid for pid in pids if not _gone(pid)]
    for pid in leftover:
        os.kill(pid, signal.SIGKILL)
    return not leftover


def _texts(step: dict[str, Any]) -> list[str]:
    return [n["text"] for n in step["notices"]]


def test_a_hung_pi_config_is_given_up_and_picompact_is_off_until_picompact_retries(tmp_path: Path) -> None:
    data = _run_harness(
        tmp_path,
        script=[
            ["behave", {"config": "hang"}],
            ["start"],
            ["compact"],
            ["compact"],
            ["behave", {}],
            ["command", ""],
            ["compact"],
        ],
    )
    _behave, start, compact1, compact2, _ok, command, compact3 = data["steps"]
    assert data["limits"][0] == 5000  # the configuration's limit (cut short here)
    # At start: one notice, and no tools (there is no configuration to offer them with).
    assert start["calls"] == 1 and start["tools"] == []
    assert len(start["notices"]) == 1
    notice = start["notices"][0]["text"]
    assert "did not answer within 5 s" in notice and "off for the rest of this session" in notice
    assert "/picompact retries" in notice
    # Compactions in the same session leave it to Pi without running picompact again, and without another notice.
    for step in (compact1, compact2):
        assert step["result"] is None and step["calls"] == 1 and step["notices"] == []
    # /picompact retries: the configuration loads, the tools come, and the next compaction is picompact's.
    assert command["calls"] == 2
    assert "picompact: enabled, mode verbatim" in _texts(command)[0]
    assert command["tools"] == [
        "context_grep",
        "context_list_entries",
        "context_lookup",
        "context_search_sessions",
        "context_show_entry",
    ]
    assert compact3["calls"] == 3 and compact3["result"]["compaction"]["firstKeptEntryId"] == "k1"
    assert [c[:2] for c in data["calls"]] == [["pi", "config"], ["pi", "config"], ["pi", "checkpoint"]]
    assert _all_gone(data["hung"]), "the hung picompact is still running"


def test_a_hung_checkpoint_is_killed_and_later_compactions_do_not_wait_for_it(tmp_path: Path) -> None:
    data = _run_harness(
        tmp_path,
        session_bytes=2 * 1_048_576,
        script=[
            ["start"],
            ["behave", {"checkpoint": "stubborn"}],  # it ignores SIGTERM: the SIGKILL after the grace ends it
            ["compact"],
            ["compact"],
            ["compact"],
            ["behave", {}],
            ["command", ""],
            ["compact"],
        ],
    )
    start, _behave, hung, later1, later2, _ok, command, after = data["steps"]
    assert start["calls"] == 1 and start["notices"] == []
    # 5 s and 25 ms a MB of session file: 5,050 ms for 2 MB.
    assert data["limits"][:2] == [5000, 5050]
    assert hung["result"] is None and hung["calls"] == 2
    assert len(hung["notices"]) == 1
    assert "did not answer within 5.05 s" in hung["notices"][0]["text"]
    assert "off for the rest of this session" in hung["notices"][0]["text"]
    for step in (later1, later2):
        assert step["result"] is None and step["calls"] == 2 and step["notices"] == []
    shown = _texts(command)[0]
    assert command["calls"] == 3  # the retry loads the configuration again
    assert "last compaction (threshold): Pi's own, because picompact is off for this session" in shown
    assert after["calls"] == 4 and after["result"]["compaction"]["firstKeptEntryId"] == "k1"
    assert _all_gone(data["hung"]), "the hung picompact outlived its SIGKILL"


@pytest.mark.parametrize(
    ("behaviour", "said"),
    [
        ("garbage", "picompact exited normally but printed 20 bytes that are not the JSON answer expected"),
        ("crash", "picompact crashed (exit status 70: internal error (RuntimeError); run with --debug"),
    ],
)
def test_a_reply_that_is_not_its_json_or_a_crash_turns_picompact_off_saying_what_happened(
    tmp_path: Path, behaviour: str, said: str
) -> None:
    data = _run_harness(
        tmp_path, script=[["start"], ["behave", {"checkpoint": behaviour}], ["compact"], ["compact"], ["command", ""]]
    )
    _start, _behave, failed, later, command = data["steps"]
    assert failed["result"] is None and failed["calls"] == 2
    assert len(failed["notices"]) == 1
    notice = failed["notices"][0]["text"]
    assert said in notice and "off for the rest of this session" in notice
    assert "exit 0" not in notice
    assert later["calls"] == 2 and later["notices"] == []
    assert command["calls"] == 3


def test_an_error_picompact_reports_falls_back_this_time_only(tmp_path: Path) -> None:
    data = _run_harness(
        tmp_path, script=[["start"], ["behave", {"checkpoint": "error"}], ["compact"], ["behave", {}], ["compact"]]
    )
    _start, _behave, failed, _ok, again = data["steps"]
    assert failed["result"] is None
    assert _texts(failed) == [
        "picompact: picompact failed: s.jsonl: line 3 is not valid JSON; Pi compacts its own way this time"
    ]
    assert again["calls"] == 3 and again["result"]["compaction"]["firstKeptEntryId"] == "k1"


def test_a_summary_checkpoint_is_given_the_key_pi_resolved(tmp_path: Path) -> None:
    """As PICOMPACT_API_KEY, first in picompact's order: a key helper of models.json or auth.json is not run again;
    bound to the provider it was resolved for (PICOMPACT_API_KEY_PROVIDER)."""
    data = _run_harness(tmp_path, mode="summary", script=[["start"], ["compact"]])
    _config, checkpoint = data["calls"]
    assert checkpoint[:2] == ["pi", "checkpoint"] and checkpoint[checkpoint.index("--mode") + 1] == "summary"
    assert checkpoint[checkpoint.index("--model") + 1] == "fake/fake-model"
    # The configuration too: whether context_lookup is offered is decided with the key the lookup gets.
    assert data["keys"] == ["sk-pi-resolved-key", "sk-pi-resolved-key"]
    assert data["providers"] == ["fake", "fake"]
    # The summary waits for the model: its own, long limit, not the verbatim checkpoint's.
    assert data["limits"][:2] == [5000, 600_000]


def test_context_lookup_is_given_the_key_pi_resolved_bound_to_its_provider(tmp_path: Path) -> None:
    """The lookup, the configuration that decides whether it is offered and a verbatim checkpoint (which mentions
    it or not) get the key Pi resolved for the session model's provider, with that provider; after /model, the new
    provider's key; a provider Pi has no key for, none. The search tools, which call no model, get no key."""
    lookup = ["tool", {"name": "context_lookup", "params": {"question": "where was it?"}}]
    grep = ["tool", {"name": "context_grep", "params": {"pattern": "x"}}]
    user = ["event", {"type": "before_agent_start", "messageType": "user", "prompt": "next", "systemPrompt": ""}]
    data = _run_harness(
        tmp_path,
        script=[
            ["start"],
            ["compact"],
            lookup,
            grep,
            ["model", {"provider": "other", "id": "other-model", "contextWindow": 24000}],
            user,
            lookup,
            ["model", {"provider": "keyless", "id": "m", "contextWindow": 24000}],
            user,
            lookup,
            ["model", {"provider": "login", "id": "m", "contextWindow": 24000}],
            user,
            lookup,
        ],
    )
    steps = data["steps"]
    assert [s["result"] for s in steps if s["kind"] == "tool"] == [
        "ANSWER where was it?",
        "RESULT context_grep",
        "ANSWER where was it?",
        "ANSWER where was it?",
        "ANSWER where was it?",
    ]
    runs = [c[:2] if c[0] == "pi" else c[:1] for c in data["calls"]]
    assert runs == [
        ["pi", "config"],
        ["pi", "checkpoint"],
        ["lookup"],
        ["pi", "tool"],
        ["lookup"],
        ["lookup"],
        ["lookup"],
    ]
    key, other = "sk-pi-resolved-key", "sk-pi-resolved-other"
    # A login's token is not passed on as an API key (picompact says it uses API keys only).
    assert data["keys"] == [key, key, key, None, other, None, None]
    assert data["providers"] == ["fake", "fake", "fake", None, "other", None, None]
