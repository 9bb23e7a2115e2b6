#!/usr/bin/env python3
"""Let the real Pi 1.6 CLI run a whole session: many prompts, Pi's own tools executed in a sandbox project, against a
scripted local model (model.ScriptedModel) on 127.0.0.1, Pi compacting by itself.

    drive.py session --name NAME --seed S --prompts N --context-window W --out DIR [options]

Each prompt is one ``pi -p --mode json`` process on the same session file, in a private Pi home (harness.PiHome) with
a sandbox project in ``work/``. The driver plans each prompt from where the context stands (Pi's own estimate, asked
of the oracle) so that Pi compacts in the ways asked for:

- mid-run (always): files read in several steps until the model's reply is over Pi's threshold (context window minus
  reserveTokens) while a tool call is pending: Pi compacts between its tool results and the next request;
- ``--overflow-early``: a file of CJK characters, which the model counts one token each and Pi a quarter, sent while
  Pi thinks it fits: the model refuses it with ``context_length_exceeded``, Pi compacts (reason overflow) and retries;
- ``--post-run N``: up to N times a long answer without tools whose usage lands just over the threshold: Pi compacts
  after the run;
- ``--raise-reserve-to R2``: the user raises reserveTokens in settings.json between two prompts while the context is
  between the new and the old threshold: Pi compacts before the next prompt;
- ``--manual-compact-at I``: before prompt I (again before each later one until Pi has something to compact), the
  user's ``/compact``: Pi in RPC mode gets one ``{"type": "compact"}`` command;
- ``--prompt-cache S``: the model declares a prompt-cache lifetime of S seconds (``promptCache.short``);
  ``--slow-reads S``: each note read by a mid-run or growing prompt runs ``sleep S`` first (a slow tool: the cache
  may lapse while it runs); ``--settings JSON``: merged into settings.json before the first run;
- ``--context-tools``: prompt 2 cats a notes file that does not exist (its error text is ``sandbox.probeError``); the
  last prompt has the model call ``context_list_entries``, ``context_grep`` for that text and ``context_show_entry``
  on the id the grep result gives for it, each only if Pi offers it.

``--agent-setup CMD`` (repeatable) runs CMD through the shell in the sandbox before Pi's first run, with
PI_CODING_AGENT_DIR and HOME pointing into it (``--agent-setup "picompact pi install"``); ``--discover-extensions``
lets Pi load the extensions it finds there (else ``--no-extensions``). ``--keep`` keeps the private home (``tempDir``).

DIR/NAME.jsonl is a copy of the session; DIR/NAME.manifest.json describes the run:

- ``runs[]``: per prompt (or manual compaction) ``ok``, ``exitCode``, the session's lines before and after,
  ``requestSeqs``, Pi's compaction events and the end of stderr (kept when extensions are on: their notices);
- ``compactions[]``: every compaction entry (``line``, ``id``, ``fromHook``, ``reason``, ``site``: mid-run, post-run,
  pre-run or manual, ``firstKeptEntryId``, ``tokensBefore``);
- ``compactionContexts[]``: per compaction, ``summarizationRequests`` (seqs of Pi's summarization requests for it) and
  ``firstRequestAfter``: the first request that carries its summary, each message labelled (``system``,
  ``summary``, ``kept``, ``custom:TYPE``, ``prompt``, ``new:ROLE``, ``summarized:ROLE``, ``unmatched:ROLE``) in
  ``messages`` and compressed in ``order`` (``kept x12`` for a run of kept messages);
- ``requests[]``: every chat request (``seq``, ``run``, ``summarization``, ``tools`` offered, ``roles``, ``reply``);
- ``contextTools``: the context-tool ``calls`` the model made and the ``results`` Pi sent back;
- ``agentSetup``, ``model``, ``settings``, ``sandbox``, ``tempDir``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import queue
import random
import shutil
import subprocess
import sys
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from harness import (
    MODULES,
    NODE,
    SUMMARY_PREFIX,
    SUMMARY_SUFFIX,
    PiHome,
    check_installed,
    match_entries,
    read_jsonl,
    requests,
    run_logged,
    wire_text,
)
from model import ModelServer, ScriptedModel, answered_calls, is_summarization, offered

ORACLE = Path(__file__).resolve().parent.parent / "oracle.mjs"
CHUNK_TOKENS = 9000  # the most one tool result carries (Pi's tools cut their output at 50 KB)
WORDS = [
    "stock",
    "shelf",
    "order",
    "supplier",
    "invoice",
    "count",
    "reorder",
    "batch",
    "audit",
    "label",
    "barcode",
    "receipt",
    "return",
    "damage",
    "transfer",
    "warehouse",
    "aisle",
    "bin",
    "pallet",
    "forecast",
    "season",
    "discount",
    "margin",
    "unit",
    "price",
    "total",
    "report",
    "export",
    "import",
    "sync",
]


# --------------------------------------------------------------------------------------------------------- sandbox


class Sandbox:
    """The project Pi works in: a small inventory package, and text files the driver writes for a prompt to read."""

    def __init__(self, root: Path, seed: int) -> None:
        self.root = root
        self.rng = random.Random(seed)
        tag = hashlib.sha256(f"probe/{seed}".encode()).hexdigest()[:7]
        self.probe = f"notes/todo-{tag}.md"  # never written
        files = {
            "README.md": "# stock\n\nA small inventory tool: items, counts per shelf, reorder reports.\n\n"
            "- `src/stock/store.py`: the model\n- `src/stock/report.py`: reports\n- `tests/`: unittest\n\n"
            + self.prose(900),
            "pyproject.toml": '[project]\nname = "stock"\nversion = "0.2.0"\n',
            "src/stock/__init__.py": '"""stock: a small inventory tool."""\n',
            "src/stock/store.py": "class Store:\n    def __init__(self):\n        self.items = {}\n\n"
            "    def add(self, name, count):\n        self.items[name] = self.items.get(name, 0) + count\n\n"
            "    def total(self):\n        return sum(self.items.values())\n",
            "src/stock/report.py": "def report(store):\n    return '\\n'.join(f'{k}: {v}' for k, v in "
            "sorted(store.items.items()))\n",
            "tests/test_store.py": "import unittest\n\nfrom stock.store import Store\n\n\n"
            "class StoreTest(unittest.TestCase):\n    def test_total(self):\n        s = Store()\n"
            "        s.add('bolt', 3)\n        self.assertEqual(s.total(), 3)\n",
        }
        for name, text in files.items():
            self.write(name, text)

    def write(self, name: str, text: str) -> str:
        path = self.root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return name

    def prose(self, chars: int) -> str:
        """ASCII sentences in lines of about 90 characters, ``chars`` characters in all."""
        lines, size = [], 0
        while size < chars:
            words = [self.rng.choice(WORDS) for _ in range(self.rng.randint(10, 15))]
            line = " ".join(words).capitalize() + "."
            lines.append(line)
            size += len(line) + 1
        return "\n".join(lines)[:chars]

    def cjk(self, chars: int) -> str:
        return "\n".join(
            "".join(chr(0x4E00 + self.rng.randrange(0x5000)) for _ in range(min(60, chars - i)))
            for i in range(0, chars, 60)
        )


def bash(command: str) -> dict[str, Any]:
    return {"name": "bash", "arguments": {"command": command}}


def read(path: str) -> dict[str, Any]:
    return {"name": "read", "arguments": {"path": path}}


# --------------------------------------------------------------------------------------------------------- planning


class Planner:
    """Chooses each prompt's plan from the context Pi has now, so that the compactions asked for happen."""

    def __init__(self, cfg: argparse.Namespace, sandbox: Sandbox) -> None:
        self.cfg = cfg
        self.sandbox = sandbox
        self.window = cfg.context_window
        self.reserve = cfg.reserve_tokens
        self.keep = cfg.keep_recent_tokens
        self.midrun = True
        self.overflow = cfg.overflow_early
        self.post_runs = cfg.post_run
        self.raise_to = cfg.raise_reserve_to
        self.count = 0

    @property
    def threshold(self) -> int:
        return self.window - self.reserve

    def unique(self, text: str) -> str:
        self.count += 1
        return f"{text} (task {self.count})"

    def plan(self, i: int, n: int, context: int, manual_pending: bool) -> tuple[str, dict[str, Any]]:
        """(scenario, {"text", "steps"}) for prompt i of n, the context being ``context`` tokens by Pi's estimate."""
        sb, t = self.sandbox, self.threshold
        if i == 0:
            return "explore", self._explore()
        if self.cfg.context_tools and i == 1:
            text = self.unique("Show me my notes file with the open TODOs for this project.")
            steps = [{"text": "Opening the notes.", "calls": [bash(f"cat {sb.probe}")]}, {"text": "No notes file."}]
            return "probe", {"text": text, "steps": steps}
        if self.cfg.context_tools and i == n - 1:
            return "recall", self._recall()
        if self.raise_to and self.window - self.raise_to < context <= t - 300:
            self.raise_to, self.reserve = None, self.raise_to
            return "settings", self._chat("I raised reserveTokens in settings.json. Go on with the work.")
        if self.overflow and self._overflow_fits(context):
            self.overflow = False
            return "overflow", self._overflow(i, context)
        if self.post_runs and 300 < t - context <= 4500:
            self.post_runs -= 1
            return "essay", self._essay(t - context + 600)
        if self.midrun and not manual_pending:
            self.midrun = False
            return "mid-run", self._reads(i, t + 1500 - context, extra_step=True)
        # Grow towards where the next compaction asked for can happen, staying under the threshold.
        goals = []
        if self.raise_to:
            goals.append((self.window - self.raise_to + t) // 2)
        if self.overflow:
            goals.append(self.window // 2)
        if self.post_runs:
            goals.append(t - 2500)
        if manual_pending:
            goals.append(context + self.keep + 2000)
        room = t - 1200 - context
        want = min(max(goals, default=context + 2000) - context, room)
        if want < 800:
            if self.post_runs and t - context <= 4500:
                self.post_runs -= 1
                return "essay", self._essay(max(t - context, 0) + 600)
            return "chat", self._chat("Anything else worth doing here?")
        return "read", self._reads(i, want, extra_step=False)

    def _explore(self) -> dict[str, Any]:
        steps = [
            {"text": "Listing the project.", "calls": [bash("find . -type f | sort")]},
            {"text": "Reading the README and the model.", "calls": [read("README.md"), read("src/stock/store.py")]},
            {"text": "This is **stock**, a small inventory tool: `Store` keeps counts, `report` prints them."},
        ]
        return {"text": self.unique("Give me an overview of this repository."), "steps": steps}

    def _chat(self, text: str) -> dict[str, Any]:
        return {"text": self.unique(text), "steps": [{"text": "Nothing more is needed right now."}]}

    def _essay(self, tokens: int) -> dict[str, Any]:
        body = self.sandbox.prose(4 * tokens)
        return {"text": self.unique("Write a thorough review of the design."), "steps": [{"text": body}]}

    def _reads(self, i: int, tokens: int, extra_step: bool) -> dict[str, Any]:
        """Read ``tokens`` tokens of notes in steps of at most CHUNK_TOKENS (then one more small tool call)."""
        steps = []
        k = 0
        while tokens > 0:
            size = min(tokens, CHUNK_TOKENS)
            name = self.sandbox.write(f"notes/part-{i}-{k}.txt", self.sandbox.prose(4 * size))
            command = f"sleep {self.cfg.slow_reads}; cat {name}" if self.cfg.slow_reads else f"cat {name}"
            steps.append({"text": f"Reading part {k + 1} of the notes.", "calls": [bash(command)]})
            tokens -= size
            k += 1
        if extra_step:
            steps.append({"text": "Counting the notes.", "calls": [bash("wc -c notes/*")]})
        steps.append({"text": "I read the notes: they are about stock counts and reorder levels."})
        return {"text": self.unique("Read the notes in notes/ and tell me what they are about."), "steps": steps}

    def _overflow_size(self, context: int) -> int:
        return self.window - context + 2000

    def _overflow_fits(self, context: int) -> bool:
        """The CJK file is sent (Pi's estimate stays under the threshold), overflows the model, and the retry after
        Pi's compaction fits (the file stays in the kept tail: about 6000 tokens more besides it)."""
        chars = self._overflow_size(context)
        beyond_file = 6000 + max(0, self.keep - chars // 4)
        return context + chars // 4 < self.threshold - 800 and chars + beyond_file < self.window

    def _overflow(self, i: int, context: int) -> dict[str, Any]:
        """Files of CJK characters read in one step (Pi's tools cut a result at 50 KB: 15000 characters a file)."""
        chars, names = self._overflow_size(context), list[str]()
        while chars > 0:
            names.append(self.sandbox.write(f"i18n/strings-{i}-{len(names)}.txt", self.sandbox.cjk(min(chars, 15000))))
            chars -= 15000
        steps = [
            {"text": "Reading the Chinese strings.", "calls": [bash(f"cat {name}") for name in names]},
            {"text": "The Chinese strings are all there."},
        ]
        return {"text": self.unique("Check the Chinese strings in i18n/."), "steps": steps}

    def _recall(self) -> dict[str, Any]:
        error = f"{self.sandbox.probe}: No such file or directory"
        steps = [
            {"text": "Listing the session history first.", "context": {"tool": "context_list_entries", "value": ""}},
            {"text": "Searching the history for that error.", "context": {"tool": "context_grep", "value": error}},
            {
                "text": "Opening the entry that holds it.",
                "context": {"tool": "context_show_entry", "value": {"idFrom": "context_grep", "near": error}},
            },
            {"text": "Found it: the failed `cat` of the notes file, with its error, in the entry shown above."},
        ]
        text = "Earlier a command failed because a notes file was missing. Find that error in the session history."
        return {"text": self.unique(text), "steps": steps}


# --------------------------------------------------------------------------------------------------------- running


class Oracle:
    """Pi's own context estimate for the session, from one long-running ``oracle.mjs serve``."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [str(NODE), str(ORACLE), "serve"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def context(self, session: Path, window: int, reserve: int, keep: int) -> int:
        if not session.exists():
            return 0
        argv = ["analyze", str(session), "--brief", "--context-window", str(window), "--reserve", str(reserve)]
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps([*argv, "--keep", str(keep)]) + "\n")
        self.proc.stdin.flush()
        answer = json.loads(json.loads(self.proc.stdout.readline())["stdout"])
        return int(answer.get("contextEstimate", {}).get("tokens") or 0)

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(10)


def pi_events(stdout: bytes) -> tuple[list[dict[str, Any]], str | None]:
    """Pi's compaction events, and the stop reason of its last turn, from ``--mode json`` output."""
    events: list[dict[str, Any]] = []
    final = None
    for line in stdout.decode("utf-8", "replace").splitlines():
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        kind = event.get("type")
        if kind in ("compaction_start", "compaction_end"):
            events.append({k: event[k] for k in ("type", "reason", "willRetry", "errorMessage") if k in event})
        elif kind == "turn_end":
            final = (event.get("message") or {}).get("stopReason")
    return events, final


def rpc_compact(home: PiHome, session: Path, extensions: list[str] | None, timeout: float) -> dict[str, Any]:
    """``/compact`` as a user gives it outside the TUI: one ``compact`` command to Pi in RPC mode."""
    argv = home.pi(
        "--mode", "rpc", "--session", str(session), "--session-dir", str(home.sessions), extensions=extensions
    )
    err = home.run / "rpc.err"
    lines: queue.Queue[bytes | None] = queue.Queue()
    with open(err, "wb") as fe:
        proc = subprocess.Popen(
            argv, cwd=home.work, env=home.env(), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=fe,
            start_new_session=True,
        )  # fmt: skip
        assert proc.stdin is not None and proc.stdout is not None
        stdout = proc.stdout

        def pump() -> None:
            for line in iter(stdout.readline, b""):
                lines.put(line)
            lines.put(None)

        threading.Thread(target=pump, daemon=True).start()
        response, events = None, []
        end = time.monotonic() + timeout
        try:
            proc.stdin.write(b'{"id": "manual", "type": "compact"}\n')
            proc.stdin.flush()
            while response is None and time.monotonic() < end:
                try:
                    line = lines.get(timeout=max(0.1, end - time.monotonic()))
                except queue.Empty:
                    break
                if line is None:
                    break
                try:
                    event = json.loads(line)
                except ValueError:
                    continue
                if event.get("type") == "response" and event.get("id") == "manual":
                    response = event
                elif event.get("type") in ("compaction_start", "compaction_end"):
                    events.append({k: event[k] for k in ("type", "reason", "errorMessage") if k in event})
            proc.stdin.close()
            proc.wait(max(5.0, end - time.monotonic()))
            code = proc.returncode
        except (subprocess.TimeoutExpired, BrokenPipeError):
            code = 124
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    ok = code == 0 and bool(response and response.get("success"))
    return {
        "exitCode": code,
        "ok": ok,
        "events": events,
        "error": (response or {}).get("error"),
        "stderrTail": err.read_bytes().decode("utf-8", "replace")[-1500:],
    }


def drive(cfg: argparse.Namespace) -> dict[str, Any]:
    check_installed()
    home = PiHome(f"picompact-drive.{cfg.name}.", keep=cfg.keep)
    sandbox = Sandbox(home.work, cfg.seed)
    planner = Planner(cfg, sandbox)
    session = home.sessions / f"{cfg.name}.jsonl"
    log = home.run / "requests.jsonl"
    extensions: list[str] | None = [] if cfg.discover_extensions else None
    for path in cfg.extension:
        extensions = (extensions or ["--no-extensions"]) + ["-e", str(Path(path).resolve())]
    model = ScriptedModel(cfg.seed, cfg.context_window)
    runs: list[dict[str, Any]] = []
    setup: list[dict[str, Any]] = []
    changes: list[dict[str, Any]] = []
    oracle = Oracle()
    manual_due = False
    error = None
    try:
        with ModelServer(model, log) as server:

            def settings() -> dict[str, Any]:
                comp = {"enabled": True, "reserveTokens": planner.reserve, "keepRecentTokens": planner.keep}
                return {"compaction": comp, **json.loads(cfg.settings)}

            extra = {"promptCache": {"short": cfg.prompt_cache}} if cfg.prompt_cache else None
            home.configure(server.port, cfg.context_window, settings(), extra)
            for command in cfg.agent_setup:
                env = {**home.env(), "PATH": "/usr/local/bin:/usr/bin:/bin", **_passed_through()}
                done = subprocess.run(command, shell=True, cwd=home.work, env=env, capture_output=True, timeout=300)
                setup.append(
                    {
                        "command": command,
                        "exitCode": done.returncode,
                        "stdout": done.stdout.decode("utf-8", "replace")[-3000:],
                        "stderr": done.stderr.decode("utf-8", "replace")[-3000:],
                    }
                )
                if done.returncode != 0:
                    error = f"agent setup failed (exit {done.returncode}): {command}"
                    break
            for i in range(0 if error else cfg.prompts):
                if i in cfg.manual_compact_at:
                    manual_due = True
                if manual_due:
                    before, seq = _lines(session), server.seq
                    result = rpc_compact(home, session, extensions, cfg.run_timeout)
                    refused = not result["ok"] and "compact" in str(result["error"] or "").lower()
                    if not refused:
                        manual_due = False
                        run = {"prompt": None, "scenario": "/compact", "manual": True, "linesBefore": before}
                        runs.append(
                            {**run, "linesAfter": _lines(session), "requestSeqs": [seq + 1, server.seq], **result}
                        )
                reserve_before = planner.reserve
                context = oracle.context(session, cfg.context_window, planner.reserve, planner.keep)
                scenario, plan = planner.plan(i, cfg.prompts, context, manual_due)
                if planner.reserve != reserve_before:
                    home.configure(server.port, cfg.context_window, settings(), extra)
                    changes.append({"beforePrompt": i, "reserveTokens": planner.reserve})
                model.plan.append(plan)
                before, seq = _lines(session), server.seq
                argv = home.pi("-p", "--mode", "json", "--session", str(session), "--session-dir", str(home.sessions),
                               extensions=extensions)  # fmt: skip
                ran = run_logged([*argv, "--", plan["text"]], home, f"pi-{i}", cfg.run_timeout)
                events, final = pi_events(ran["stdout"])
                ok = ran["exitCode"] == 0 and final not in (None, "error", "aborted")
                stderr = ran["stderr"].decode("utf-8", "replace")
                runs.append(
                    {
                        "prompt": i,
                        "scenario": scenario,
                        "text": plan["text"],
                        "contextBefore": context,
                        "ok": ok,
                        "exitCode": ran["exitCode"],
                        "finalStopReason": final,
                        "linesBefore": before,
                        "linesAfter": _lines(session),
                        "requestSeqs": [seq + 1, server.seq],
                        "events": events,
                        "stderrTail": stderr[-1500:] if (not ok or extensions is not None) else "",
                    }
                )
                if cfg.verbose:
                    print(f"[{cfg.name}] {i + 1}/{cfg.prompts} {scenario:9s} context {context:6d} ok={ok} "
                          f"compactions {[e.get('reason') for e in events if e['type'] == 'compaction_start']}",
                          file=sys.stderr)  # fmt: skip
    finally:
        oracle.close()
    manifest = report(cfg, home, session, log, runs)
    manifest.update(agentSetup=setup, settingsChanges=changes)
    manifest["sandbox"] = {"probeFile": sandbox.probe, "probeError": f"{sandbox.probe}: No such file or directory"}
    if error:
        manifest["error"] = error
    cfg.out.mkdir(parents=True, exist_ok=True)
    if session.exists():
        shutil.copyfile(session, cfg.out / f"{cfg.name}.jsonl")
    (cfg.out / f"{cfg.name}.manifest.json").write_text(json.dumps(manifest, indent=1) + "\n")
    home.close()
    return manifest


def _passed_through() -> dict[str, str]:
    """The caller's environment, for the setup commands (a virtualenv's picompact, say), without its Pi dirs."""
    import os

    return {k: v for k, v in os.environ.items() if k not in ("HOME", "PI_CODING_AGENT_DIR", "TMPDIR")}


def _lines(session: Path) -> int:
    return len(read_jsonl(session)) if session.exists() else 0


# --------------------------------------------------------------------------------------------------------- report


def _epoch(stamp: Any) -> float:
    try:
        return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def _site(run: dict[str, Any], line: int, lines: list[Any]) -> str:
    previous = lines[line - 2] if line >= 2 else None
    role = (previous or {}).get("message", {}).get("role") if (previous or {}).get("type") == "message" else None
    if run.get("manual"):
        return "manual"
    if role == "toolResult":
        return "mid-run"
    if line == run["linesBefore"] + 1:
        return "pre-run"
    return "post-run"


def label(messages: list[dict[str, Any]], path: list[dict[str, Any]], at: int, prompt: str | None) -> list[list[Any]]:
    """[label, entryId] for each message of a request sent after the compaction path[at]."""
    compaction = path[at]
    ids = [e.get("id") for e in path]
    kept_from = ids.index(compaction.get("firstKeptEntryId")) if compaction.get("firstKeptEntryId") in ids else at
    matched = match_entries(messages, path)
    out: list[list[Any]] = []
    for message, position in zip(messages, matched, strict=True):
        role = message.get("role")
        if role in ("system", "developer"):
            out.append(["system", None])
        elif position is None:
            out.append([f"unmatched:{role}", None])
        elif position == at:
            out.append(["summary", compaction.get("id")])
        else:
            entry = path[position]
            if position < kept_from:
                name = f"summarized:{role}"
            elif position < at:
                name = "kept"
            elif entry.get("type") == "custom_message":
                name = f"custom:{entry.get('customType')}"
            elif role == "user" and wire_text(message) == prompt:
                name = "prompt"
            else:
                name = f"new:{role}"
            out.append([name, entry.get("id")])
    return out


def compress(labels: list[list[Any]]) -> list[str]:
    out: list[str] = []
    for name, _ in labels:
        if name == "kept" and out and out[-1].startswith("kept x"):
            out[-1] = f"kept x{int(out[-1][6:]) + 1}"
        else:
            out.append("kept x1" if name == "kept" else name)
    return out


def report(
    cfg: argparse.Namespace, home: PiHome, session: Path, log: Path, runs: list[dict[str, Any]]
) -> dict[str, Any]:
    lines = read_jsonl(session) if session.exists() else []
    chat = requests(log)
    run_of = {}
    for n, run in enumerate(runs):
        for seq in range(run["requestSeqs"][0], run["requestSeqs"][1] + 1):
            run_of[seq] = n
    out_requests, calls, results = [], [], []
    for record in chat:
        body = record["body"]
        run_at = run_of.get(record["seq"])
        out_requests.append(
            {
                "seq": record["seq"],
                "run": run_at,
                "status": record.get("status"),
                "summarization": is_summarization(body),
                "tools": list(offered(body)),
                "roles": [m.get("role") for m in body.get("messages") or []],
                "reply": record.get("reply"),
            }
        )
        if (record.get("reply") or {}).get("contextCall"):
            calls.append({"seq": record["seq"], "run": run_at, **record["reply"]["contextCall"]})
        for answered in answered_calls(body):
            if str(answered.get("tool") or "").startswith("context_"):
                results.append({"seq": record["seq"], "run": run_at, **answered})
    # Pi's sessions here are linear: the path is every entry after the header, in file order.
    numbered = [(n + 1, e) for n, e in enumerate(lines) if n > 0 and isinstance(e, dict)]
    path = [e for _, e in numbered]
    compactions, contexts = [], []
    previous_time = 0.0
    for at, (line, entry) in enumerate(numbered):
        if entry.get("type") != "compaction":
            continue
        made_in = next((k for k, r in enumerate(runs) if r["linesBefore"] < line <= r["linesAfter"]), None)
        run = runs[made_in] if made_in is not None else {"linesBefore": 0, "events": []}
        earlier = sum(1 for ln, e in numbered if e.get("type") == "compaction" and run["linesBefore"] < ln < line)
        starts = [e for e in run.get("events", []) if e["type"] == "compaction_start"]
        reason = starts[earlier]["reason"] if earlier < len(starts) else None
        compactions.append(
            {
                "line": line,
                "id": entry.get("id"),
                "run": made_in,
                "fromHook": entry.get("fromHook"),
                "reason": reason,
                "site": _site(run, line, lines),
                "firstKeptEntryId": entry.get("firstKeptEntryId"),
                "tokensBefore": entry.get("tokensBefore"),
            }
        )
        made = _epoch(entry.get("timestamp"))
        asked = [
            q["seq"]
            for q, r in zip(out_requests, chat, strict=True)
            if q["summarization"] and q["run"] == made_in and previous_time < r["t"] <= made + 0.5
        ]
        previous_time = made
        wrapped = SUMMARY_PREFIX + str(entry.get("summary")) + SUMMARY_SUFFIX
        first_after = None
        for q, r in zip(out_requests, chat, strict=True):
            messages = r["body"].get("messages") or []
            firsts = [m for m in messages if m.get("role") not in ("system", "developer")][:1]
            if not q["summarization"] and firsts and wire_text(firsts[0]) == wrapped:
                prompt = runs[q["run"]].get("text") if q["run"] is not None else None
                labels = label(messages, path, at, prompt)
                first_after = {"seq": q["seq"], "run": q["run"], "order": compress(labels), "messages": labels}
                break
        contexts.append(
            {"compactionId": entry.get("id"), "summarizationRequests": asked, "firstRequestAfter": first_after}
        )
    node = subprocess.run([str(NODE), "--version"], capture_output=True, text=True).stdout.strip()
    package = json.loads((MODULES / "@earendil-works" / "pi-coding-agent" / "package.json").read_text())
    return {
        "name": cfg.name,
        "session": f"{cfg.name}.jsonl",
        "pi": {"version": package["version"], "node": node},
        "model": {"provider": "fake", "id": "fake-model", "contextWindow": cfg.context_window, "maxTokens": 4096},
        "settings": {"reserveTokens": cfg.reserve_tokens, "keepRecentTokens": cfg.keep_recent_tokens},
        "seed": cfg.seed,
        "runs": runs,
        "compactions": compactions,
        "compactionContexts": contexts,
        "requests": out_requests,
        "contextTools": {"calls": calls, "results": results},
        "tempDir": str(home.root) if cfg.keep else None,
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    s = sub.add_parser("session", help="drive one session")
    s.add_argument("--name", required=True)
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--prompts", type=int, default=6)
    s.add_argument("--context-window", type=int, default=32000)
    s.add_argument("--reserve-tokens", type=int, default=16384)
    s.add_argument("--keep-recent-tokens", type=int, default=20000)
    s.add_argument("--overflow-early", action="store_true")
    s.add_argument("--post-run", type=int, default=0)
    s.add_argument("--raise-reserve-to", type=int)
    s.add_argument("--manual-compact-at", type=int, action="append", default=[])
    s.add_argument("--context-tools", action="store_true")
    s.add_argument("--prompt-cache", type=float, default=0.0)
    s.add_argument("--slow-reads", type=float, default=0.0)
    s.add_argument("--settings", default="{}")
    s.add_argument("--agent-setup", action="append", default=[])
    s.add_argument("--discover-extensions", action="store_true")
    s.add_argument("--extension", action="append", default=[])
    s.add_argument("--run-timeout", type=float, default=180.0)
    s.add_argument("--keep", action="store_true")
    s.add_argument("--verbose", action="store_true", help="one line per prompt on stderr")
    s.add_argument("--out", type=Path, required=True)
    cfg = parser.parse_args(argv)
    manifest = drive(cfg)
    failed = manifest.get("error") or not all(r["ok"] for r in manifest["runs"])
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
