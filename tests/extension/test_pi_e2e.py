"""The extension inside the real Pi 1.6 CLI, as a user runs it: `picompact pi install` in Pi's agent dir, then many
prompts against a scripted model on 127.0.0.1 (``tools/pi/e2e/drive.py``), Pi compacting by itself.

A few Pi sessions are shared by the tests here (module fixtures): one with a threshold compaction mid-run, an
overflow with retry and a compaction before a prompt (``TestMidRun``); one with post-run and manual (RPC ``compact``)
compactions and the model calling the ``context_*`` tools (``TestIdle``); one whose install points at a picompact
that does not exist. Each session runs only as many prompts as it takes to reach what its tests look at (the scripted
model's plan for a seed does not depend on the number of prompts, except that the recall comes last). Each class is
its own unit for ``pytest -n --dist loadscope``, so the sessions run in parallel. Skips cleanly without Pi.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from tests.helpers.cli import picompact_exe, run
from tests.helpers.real_pi import drive_session, local_model, pi_rpc
from tests.oracle import NODE22, NOT_INSTALLED, PACKAGE, pi_installed

REMINDER = "custom:picompact.reorientation"
TOOLS = ("context_list_entries", "context_grep", "context_show_entry")

pytestmark = pytest.mark.skipif(not pi_installed(), reason=NOT_INSTALLED)


def _install_command(extra: str = "") -> str:
    exe = picompact_exe()
    command = " ".join(exe) + " pi install"
    return command + extra


# An in-memory session (no file) on the scripted ``fake`` model, thinking off: what an RPC run here gives Pi.
FAKE_MODEL = ["--no-session", "--provider", "fake", "--model", "fake-model", "--thinking", "off"]


def _pi(*args: str) -> list[str]:
    """Pi's CLI with ``args``, on the scripted ``fake`` model and with nothing of the user's loaded."""
    return [
        str(NODE22),
        str(PACKAGE / "dist" / "bundle" / "cli.js"),
        *args,
        "--provider",
        "fake",
        "--model",
        "fake-model",
        "--thinking",
        "off",
        "--no-skills",
        "--no-prompt-templates",
        "--no-themes",
        "--no-context-files",
        "--no-mcp",
        "--no-approve",
        "--offline",
    ]


def _drive(
    factory: pytest.TempPathFactory,
    name: str,
    *args: str,
    seed: int,
    prompts: int,
    context_window: int,
    setup: str | None = None,
) -> contextlib.AbstractContextManager[dict[str, Any]]:
    """One Pi session driven by the scripted model, picompact installed by ``setup`` (``pi install`` by default)."""
    setup = setup or _install_command()
    return drive_session(factory, name, *args, seed=seed, prompts=prompts, context_window=context_window, setup=setup)


@pytest.fixture(scope="module")
def midrun(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A threshold compaction between tool results and the next request (prompt 3), a context overflow with retry
    (prompt 4), and one before a prompt: the user raises reserveTokens in settings.json before prompt 5."""
    with _drive(
        tmp_path_factory,
        "midrun",
        "--overflow-early",
        "--raise-reserve-to",
        "12000",
        "--settings",
        '{"picompact": {"prune": false}}',  # pruning would put it off
        seed=3,
        prompts=5,
        context_window=32000,
    ) as manifest:
        yield manifest


@pytest.fixture(scope="module")
def idle(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """A compaction after a run (prompt 4), one by hand (RPC compact, before prompt 5) and threshold compactions
    later, and the model calling the recovery tools (prompt 2 leaves the error they look for, the last one calls
    them)."""
    with _drive(
        tmp_path_factory,
        "idle",
        "--overflow-early",
        "--post-run",
        "2",
        "--manual-compact-at",
        "4",
        "--context-tools",
        seed=7,
        prompts=9,
        context_window=24000,
    ) as manifest:
        yield manifest


def _entries(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    path = Path(manifest["tempDir"]) / "sessions" / Path(manifest["session"]).name
    return [orjson.loads(line) for line in path.read_bytes().split(b"\n") if line.strip()]


def _sandbox_env(manifest: dict[str, Any]) -> dict[str, str]:
    temp = Path(manifest["tempDir"])
    return {"HOME": str(temp / "home"), "PI_CODING_AGENT_DIR": str(temp / "agent"), "PATH": "/usr/bin:/bin"}


def _contexts(manifest: dict[str, Any]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return list(zip(manifest["compactions"], manifest["compactionContexts"], strict=True))


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """An install whose recorded picompact no longer exists."""
    code = (
        "import json, os; p = os.path.join(os.environ['PI_CODING_AGENT_DIR'], 'extensions', 'picompact', "
        "'install.json'); d = json.load(open(p)); d['command'] = ['/nonexistent/picompact']; "
        "json.dump(d, open(p, 'w'))"
    )
    fix = f" && {shlex.quote(sys.executable)} -c {shlex.quote(code)}"
    with _drive(  # Pi compacts mid-run in prompt 2 (the server log read into a 20k window)
        tmp_path_factory, "broken", seed=3, prompts=2, context_window=20000, setup=_install_command(fix)
    ) as manifest:
        yield manifest


def test_a_broken_picompact_falls_back_to_pis_own_compaction(broken: dict[str, Any]) -> None:
    assert broken["agentSetup"][0]["exitCode"] == 0
    assert all(run["ok"] for run in broken["runs"])
    assert broken["compactions"], "Pi compacted"
    for compaction in broken["compactions"]:
        assert compaction["fromHook"] is False
    assert [r for r in broken["requests"] if r.get("summarization")]  # Pi's own summary
    stderr = "".join(run.get("stderrTail") or "" for run in broken["runs"])
    assert "picompact" in stderr and "Pi compacts its own way" in stderr
    assert "/nonexistent/picompact" in stderr or "ENOENT" in stderr
    offered = {name for request in broken["requests"] for name in request.get("tools") or []}
    assert not set(TOOLS) & offered  # no tools that could not work


def test_an_in_memory_session_falls_back_with_a_notice(tmp_path: Path) -> None:
    """`pi --no-session` in RPC mode: no file to read, so Pi summarises its own way; the user is told why, and
    no recovery tools are offered."""
    agent, home, work = tmp_path / "agent", tmp_path / "home", tmp_path / "work"
    for d in (agent, home, work):
        d.mkdir()
    with local_model(tmp_path, lifetime=120) as port:
        model = {
            "id": "fake-model",
            "name": "Fake",
            "reasoning": False,
            "input": ["text"],
            "contextWindow": 100000,
            "maxTokens": 4096,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
        }
        provider = {"baseUrl": f"http://127.0.0.1:{port}/v1", "api": "openai-completions", "apiKey": "k"}
        (agent / "models.json").write_bytes(orjson.dumps({"providers": {"fake": {**provider, "models": [model]}}}))
        settings = {"compaction": {"enabled": True, "reserveTokens": 4096, "keepRecentTokens": 1}}
        (agent / "settings.json").write_bytes(orjson.dumps(settings))
        env = {**_sandbox_env({"tempDir": str(tmp_path)}), "PATH": f"{NODE22.parent}:/usr/bin:/bin"}
        env["TMPDIR"] = str(tmp_path)
        assert subprocess.run([*picompact_exe(), "pi", "install"], env=env, capture_output=True).returncode == 0
        events = pi_rpc(
            FAKE_MODEL,
            env,
            work,
            [
                {"id": "p0", "type": "prompt", "message": "first question " + "x" * 400},
                {"id": "p1", "type": "prompt", "message": "second question " + "y" * 400},
                {"id": "c", "type": "compact"},
            ],
            tmp_path / "pi.err",
        )
    response = next(e for e in events if e.get("type") == "response" and e.get("id") == "c")
    assert response["success"] is True
    assert response["data"]["summary"].startswith("OK from fake model")  # Pi's own summary, by the model
    notices = [e["message"] for e in events if e.get("type") == "extension_ui_request" and e.get("method") == "notify"]
    assert any("in memory only" in n and "Pi compacts its own way" in n for n in notices), notices
    requests = [orjson.loads(line) for line in (tmp_path / "requests.jsonl").read_bytes().split(b"\n") if line]
    offered = {t["function"]["name"] for r in requests for t in (r.get("body") or {}).get("tools") or []}
    assert "bash" in offered and not set(TOOLS) & offered


class _EverySession:
    """What holds in every session with the extension installed; a subclass names the session (``session``).
    Each class is one unit for ``pytest -n --dist loadscope``, so the Pi sessions run on different workers."""

    def test_pi_appends_picompacts_checkpoint_and_keeps_working(self, session: dict[str, Any]) -> None:
        assert session["agentSetup"][0]["exitCode"] == 0
        assert all(run["ok"] for run in session["runs"]), [r["stderrTail"] for r in session["runs"] if not r["ok"]]
        assert len(session["compactions"]) >= 3
        for compaction in session["compactions"]:
            assert compaction["fromHook"] is True, compaction
        compactions = [e for e in _entries(session) if e["type"] == "compaction"]
        assert compactions and all(c["summary"].startswith("# Verbatim checkpoint (picompact)") for c in compactions)

    def test_verbatim_mode_sends_no_summarization_request(self, session: dict[str, Any]) -> None:
        assert not [r for r in session["requests"] if r.get("summarization")]
        for _, context in _contexts(session):
            assert context["summarizationRequests"] == []

    def test_the_model_reads_checkpoint_kept_tail_one_reminder_then_the_prompt(self, session: dict[str, Any]) -> None:
        checked = 0
        for compaction, context in _contexts(session):
            first = context.get("firstRequestAfter")
            if not first:
                continue  # another compaction came before any request
            order = first["order"]
            assert order[:2] == ["system", "summary"], order
            assert order.count(REMINDER) == 1, order
            assert all(not label.startswith(("summarized:", "unmatched:")) for label in order), order
            at = order.index(REMINDER)
            assert all(label.startswith("kept") for label in order[2:at]), order
            if compaction["site"] in ("mid-run",) or compaction["reason"] == "overflow":
                # the run continues: the reminder closes the request the model continues with
                assert at == len(order) - 1, (compaction, order)
            else:
                # after a run or by hand: the reminder comes right before the next prompt
                assert order[at + 1 :] == ["prompt"], (compaction, order)
            checked += 1
        assert checked >= 3

    def test_each_compaction_gets_its_own_reminder_and_older_ones_stay_hidden(self, session: dict[str, Any]) -> None:
        entries = _entries(session)
        reminders = [
            e for e in entries if e["type"] == "custom_message" and e["customType"] == "picompact.reorientation"
        ]
        compaction_ids = [e["id"] for e in entries if e["type"] == "compaction"]
        assert [r["details"]["compactionId"] for r in reminders] == compaction_ids
        assert all(r["display"] is False for r in reminders)
        # After the second compaction, older reminders (some still in the kept tail) are not in what the model reads.
        later = [c["firstRequestAfter"]["order"] for _, c in _contexts(session)[1:] if c.get("firstRequestAfter")]
        assert later and all(order.count(REMINDER) == 1 for order in later)

    def test_checkpoint_is_byte_identical_to_the_dry_run(
        self, session: dict[str, Any], monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The same prefix, settings and environment give the same checkpoint from `picompact compact --dry-run`."""
        entries = _entries(session)
        path = Path(session["tempDir"]) / "sessions" / Path(session["session"]).name
        window = str(session["model"]["contextWindow"])
        for key in [k for k in os.environ if k.endswith("_API_KEY")]:  # Pi ran with none
            monkeypatch.delenv(key)
        for compaction in (e for e in entries if e["type"] == "compaction"):
            result = run(
                "compact",
                path,
                "--mode",
                "verbatim",
                "--dry-run",
                "--json",
                "--leaf",
                compaction["parentId"],
                "--context-window",
                window,
                "--reserve-tokens",
                "4096",
                "--keep-recent-tokens",
                "4000",
                env=_sandbox_env(session),
            )
            assert result.code == 0, result.stderr
            dry = result.json["entries"][0]
            assert dry["summary"].encode() == compaction["summary"].encode()
            assert dry["details"] == compaction["details"]
            assert (dry["firstKeptEntryId"], dry["tokensBefore"]) == (
                compaction["firstKeptEntryId"],
                compaction["tokensBefore"],
            )
            # Installed: the checkpoint advertises the tools, not shell commands.
            assert "context_grep(pattern)" in compaction["summary"]
            assert "picompact grep" not in compaction["summary"]

    def test_later_compactions_carry_the_spans_forward(self, session: dict[str, Any]) -> None:
        compactions = [e for e in _entries(session) if e["type"] == "compaction"]
        assert len(compactions) >= 3
        previous: list[Any] = []
        for n, compaction in enumerate(compactions, 1):
            spans = compaction["details"]["picompact"]["spans"]
            assert len(spans) == n
            assert spans[: n - 1] == previous  # saved spans are not rewritten
            previous = spans


class TestMidRun(_EverySession):
    """Threshold compactions between tool results and the next request, and an overflow with retry."""

    @pytest.fixture
    def session(self, midrun: dict[str, Any]) -> dict[str, Any]:
        return midrun

    def test_mid_run_and_overflow_compactions_happened(self, session: dict[str, Any]) -> None:
        seen = {(c["reason"], c["site"]) for c in session["compactions"]}
        assert ("threshold", "mid-run") in seen
        assert any(reason == "overflow" for reason, _ in seen)

    def test_a_compaction_before_a_prompt_puts_the_reminder_before_it(self, session: dict[str, Any]) -> None:
        assert all(run["ok"] for run in session["runs"])
        contexts = [(c, x) for c, x in _contexts(session) if c["site"] == "pre-run"]
        assert contexts, [c["site"] for c in session["compactions"]]
        for compaction, context in contexts:
            assert compaction["fromHook"] is True and context["summarizationRequests"] == []
            order = context["firstRequestAfter"]["order"]
            assert order[:2] == ["system", "summary"] and order[-2:] == [REMINDER, "prompt"], order
            assert all(label.startswith("kept") for label in order[2:-2]), order


class TestIdle(_EverySession):
    """Compactions after a run and by hand, and the model calling the recovery tools."""

    @pytest.fixture
    def session(self, idle: dict[str, Any]) -> dict[str, Any]:
        return idle

    def test_post_run_and_manual_compactions_happened(self, session: dict[str, Any]) -> None:
        seen = {(c["reason"], c["site"]) for c in session["compactions"]}
        assert ("threshold", "post-run") in seen
        assert ("manual", "manual") in seen

    def test_the_model_is_offered_the_tools_and_they_answer_from_the_raw_branch(self, session: dict[str, Any]) -> None:
        offered = {name for request in session["requests"] for name in request.get("tools") or []}
        assert set(TOOLS) <= offered
        # The session's model is the sandbox's models.json provider, whose apiKey serves picompact's lookup too.
        assert "context_lookup" in offered
        calls = session["contextTools"]["calls"]
        results = {r["tool"]: r["result"] for r in session["contextTools"]["results"]}
        assert [c["tool"] for c in calls] == list(TOOLS)
        probe = session["sandbox"]["probeError"]
        entries = _entries(session)
        probe_entry = next(
            e
            for e in entries
            if e["type"] == "message"
            and e["message"]["role"] == "toolResult"
            and probe in "".join(c.get("text", "") for c in e["message"]["content"])
        )
        assert results["context_list_entries"].startswith("list_entries: ")
        assert f"{probe_entry['id']}  toolResult" in results["context_list_entries"]
        grep_lines = results["context_grep"].split("\n")
        assert f"{probe_entry['id']}:toolResult:" in results["context_grep"]
        # The search does not find the assistant message holding the grep call itself.
        grep_call = next(c for c in calls if c["tool"] == "context_grep")
        holder = next(
            e
            for e in entries
            if e["type"] == "message"
            and e["message"]["role"] == "assistant"
            and any(
                c.get("type") == "toolCall" and c.get("arguments") == grep_call["arguments"]
                for c in e["message"]["content"]
            )
        )
        assert not [line for line in grep_lines if line.startswith(holder["id"])]
        shown = results["context_show_entry"]
        assert shown.startswith(f"show_entry {probe_entry['id']} (toolResult")
        assert probe in shown

    def test_tools_report_bad_arguments_as_a_tool_error(self, session: dict[str, Any]) -> None:
        """A tool call with bad arguments comes back as the tool's error text (here: an unknown entry id)."""
        entries = _entries(session)
        path = Path(session["tempDir"]) / "sessions" / Path(session["session"]).name
        result = run("pi", "tool", "context_show_entry", path, "--args", '{"id": "zzzzzzzz"}')
        assert result.code == 2 and "zzzzzzzz" in result.stderr
        assert entries  # the session is untouched by searching

    def test_picompact_compact_command_compacts_now(self, session: dict[str, Any], tmp_path: Path) -> None:
        """`/picompact compact` typed as a prompt (print mode runs extension commands) compacts through ctx.compact():
        Pi appends picompact's checkpoint (fromHook) and the reminder, with no model call."""
        temp = Path(session["tempDir"])
        source = temp / "sessions" / Path(session["session"]).name
        lines = source.read_bytes().split(b"\n")
        # The prefix before the second compaction: plenty to compact.
        at = [i for i, line in enumerate(lines) if line.startswith(b'{"type":"compaction"')][1]
        copy = tmp_path / "manual.jsonl"
        copy.write_bytes(b"\n".join(lines[:at]) + b"\n")
        node_dir = NODE22.parent
        proc = subprocess.run(
            [
                *_pi("-p", "--mode", "json", "--session", str(copy), "--session-dir", str(temp / "sessions")),
                "--",
                "/picompact compact",
            ],
            capture_output=True,
            cwd=temp / "work",
            env={**_sandbox_env(session), "PATH": f"{node_dir}:/usr/bin:/bin", "TMPDIR": str(tmp_path)},
            timeout=180,
            check=False,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        added = [orjson.loads(line) for line in copy.read_bytes().split(b"\n")[at:] if line.strip()]
        kinds = [e["type"] for e in added]
        assert kinds == ["compaction", "custom_message"], (kinds, proc.stderr[-2000:])
        compaction, reminder = added
        assert compaction["fromHook"] is True
        assert compaction["summary"].startswith("# Verbatim checkpoint (picompact)")
        assert reminder["details"] == {"compactionId": compaction["id"]}
        assert not [e for e in added if e["type"] == "message"]  # no model call, no prompt sent to the model
