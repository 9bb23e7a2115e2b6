"""The extension's own logic, run by node with a stand-in for Pi's API and a fake picompact that logs its calls:
context_lookup's one-attempt rule, the filter that keeps only the newest reminder, the agreement check on Pi's cut,
and where the reminder is delivered. (The same behaviour in the real Pi CLI: test_pi_e2e.py.)"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from pi_compact.pi.install import extension_source
from tests.oracle import NODE22

HARNESS = Path(__file__).with_name("extension_harness.mjs")

FAKE = r"""#!{python}
import json, sys
args = sys.argv[1:]
with open({log!r}, "a") as f:
    f.write(json.dumps(args) + "\n")
if args[:2] == ["pi", "config"]:
    print(json.dumps({{"enabled": {enabled}, "mode": None, "cap": None, "lookupModel": None, "capArgs": [],
                      "lookupAvailable": True, "warnings": []}}))
elif args[:2] == ["pi", "checkpoint"]:
    print(json.dumps({{"mode": "verbatim", "summary": "# Verbatim checkpoint (picompact)\nS",
                      "firstKeptEntryId": "k1", "tokensBefore": 1234, "details": {{"picompact": {{}}}},
                      "reminder": "REMINDER", "reminderCustomType": "picompact.reorientation",
                      "settings": {{"enabled": True, "reserveTokens": 4096, "keepRecentTokens": 4000}},
                      "stats": {{"tokens_before": 1234, "tokens_after": 600, "freed_tokens": 634,
                                "freed_percent": 51.4}}, "trimmed": True, "warnings": []}}))
elif args[:1] == ["lookup"]:
    print(json.dumps({{"answer": "ANSWER " + args[-1], "note": None}}))
else:
    sys.exit(2)
"""


def _run_harness(work: Path, *, enabled: bool = True) -> dict[str, Any]:
    if not NODE22.exists():
        pytest.skip("node 22 (the Pi oracle's) is not installed")
    log = work / "calls.jsonl"
    fake = work / "fake-picompact"
    fake.write_text(FAKE.format(python=sys.executable, log=str(log), enabled=enabled))
    fake.chmod(0o755)
    (work / "index.ts").write_bytes(extension_source())
    (work / "install.json").write_bytes(orjson.dumps({"command": [str(fake)], "version": "0", "mode": "verbatim"}))
    (work / "session.jsonl").write_text("")
    args = [str(NODE22), str(HARNESS), str(work), *([] if enabled else ["disabled"])]
    proc = subprocess.run(args, capture_output=True, timeout=120, check=False, cwd=work)
    assert proc.returncode == 0, proc.stderr.decode("utf-8", "replace")[-3000:]
    data = orjson.loads(proc.stdout)
    data["calls"] = [orjson.loads(line) for line in log.read_bytes().split(b"\n") if line]
    data["stderr"] = proc.stderr.decode("utf-8", "replace")
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


def test_tools_and_command_are_registered(observed: dict[str, Any]) -> None:
    assert observed["tools"] == ["context_grep", "context_list_entries", "context_lookup", "context_show_entry"]
    assert observed["commands"] == ["picompact"]


def test_context_lookup_allows_one_attempt_until_a_reset(observed: dict[str, Any]) -> None:
    allowed = {k: observed[k].startswith("ANSWER") for k in "abcdefg"}
    # a and b share one assistant message: only the first runs; a fallback search (c) does not reset; another
    # tool's result (d), a user message (e, then f refused) and a bash execution (g) do.
    assert allowed == {"a": True, "b": False, "c": False, "d": True, "e": True, "f": False, "g": True}
    assert "context_grep" in observed["b"]
    lookups = [c for c in observed["calls"] if c[0] == "lookup"]
    assert [c[-1] for c in lookups] == ["q a", "q d", "q e", "q g"]
    assert all(c[-3] == "--" for c in lookups)
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
