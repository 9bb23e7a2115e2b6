"""The API key Pi resolved for the session's provider is the one picompact's summary mode and ``context_lookup``
send, inside the real Pi 1.6 CLI, for providers whose key variable picompact once did not read (google:
``GEMINI_API_KEY``; moonshotai: ``MOONSHOT_API_KEY``).

For each provider, a sandbox where Pi's session model is that provider's model, the provider routed to the local
model on 127.0.0.1 (its ``baseUrl`` set in models.json, as Pi documents for a proxy), the key given the way a user
gives it: a key helper in auth.json (``"key": "!command"``), which Pi runs once and caches. The helper prints a new
key each time it runs, so a picompact that found a key of its own (running the helper again) would send another
one. One more google sandbox gives the key only on Pi's command line (``--api-key``), a key picompact cannot find
itself: ``context_lookup`` is offered and answers only when the extension passes it. And one more has
``picompact.lookupModel`` of another provider (moonshotai, with its own key in auth.json): the lookup sends that
key, never the one Pi resolved for google. No key variable is in the environment. Pi runs in RPC mode: two prompts,
``compact``, then a prompt the local model answers with a ``context_lookup`` call (``Call context_lookup:
QUESTION``), which the extension runs as ``picompact lookup``; the extension is installed with ``picompact pi install
--mode summary``. Skips cleanly without Pi.
"""

from __future__ import annotations

import hashlib
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import orjson
import pytest

from pi_compact.checkpoint.summary.prompts import SYSTEM_PROMPT
from pi_compact.llm.keys import RUN_KEY_ENV
from pi_compact.llm.providers import resolve_model
from pi_compact.lookup.prompts import system_prompt
from pi_compact.pi.catalog import find_model
from tests.helpers.cli import picompact_exe
from tests.helpers.real_pi import local_model, logged_requests, pi_env, pi_rpc
from tests.oracle import NOT_INSTALLED, pi_installed

pytestmark = pytest.mark.skipif(not pi_installed(), reason=NOT_INSTALLED)

# What the local model writes in a checkpoint for picompact (tools/pi/e2e/model.py, PICOMPACT_SUMMARY_MARK).
MARK = "Checkpoint written by the local test model for picompact"
PI_SUMMARIZER = "You are a context summarization assistant"  # Pi's own summary request
PROMPTS = ["first question " + "x" * 400, "second question " + "y" * 400]
QUESTION = "What did the user ask first?"
LOOKUP_PROMPT = f"Call context_lookup: {QUESTION}"  # the local model calls the tool (tools/pi/e2e/model.py)
# How picompact's lookup model is addressed: the first line of its system prompt.
LOOKUP_SYSTEM = system_prompt(10, 30).split("\n", 1)[0]
FLAG_KEY = "pi-flag-key-only-pi-knows-3d9c"  # given as Pi's --api-key


@dataclass(frozen=True)
class Lookup:
    """``picompact.lookupModel`` of another provider than the session's, with a key of its own in auth.json."""

    provider: str
    model: str
    base_path: str
    via: str
    key: str


@dataclass(frozen=True)
class Case:
    provider: str
    model: str
    api: str  # the API Pi's catalog names for the model
    base_path: str  # the path of the provider's baseUrl, on the local model
    via: str  # where that API carries the key (the local model's log: ``auth.via``)
    summary_path: str  # where picompact's summary request goes
    key_from: str = "helper"  # how Pi gets the key: "helper" (auth.json) or "flag" (--api-key)
    lookup: Lookup | None = None  # the lookup model when it is not the session's

    @property
    def name(self) -> str:
        name = self.provider if self.key_from == "helper" else f"{self.provider}-{self.key_from}"
        return f"{name}-lookup-{self.lookup.provider}" if self.lookup else name


GOOGLE = Case(
    "google",
    "gemini-2.5-flash",
    "google-generative-ai",
    "/v1beta",
    "x-goog-api-key",
    "/v1beta/models/gemini-2.5-flash:generateContent",
)
CASES = [
    GOOGLE,
    Case("moonshotai", "kimi-k2.6", "openai-completions", "/v1", "bearer", "/v1/chat/completions"),
    replace(GOOGLE, key_from="flag"),
    replace(
        GOOGLE, lookup=Lookup("moonshotai", "kimi-k2.6", "/v1", "bearer", "sk-moonshot-own-key-for-the-lookup-71c2")
    ),
]


@dataclass
class Run:
    case: Case
    env: dict[str, str]
    keys: list[str]  # every key the helper printed, in order (the --api-key given, for a "flag" case)
    requests: list[dict[str, Any]]  # what the local model logged
    events: list[dict[str, Any]]  # what Pi printed in RPC mode
    entries: list[dict[str, Any]]  # the session file Pi wrote
    session_bytes: bytes
    stderr: str


def _helper(root: Path, provider: str) -> Path:
    """A key helper printing a new key each time it runs, each one also appended to ``keys.log``."""
    log = root / "keys.log"
    script = root / "key-helper.sh"
    script.write_text(
        "#!/bin/sh\n"
        f'n=$(( $(cat "{log}" 2>/dev/null | wc -l) + 1 ))\n'
        f'echo "pi-resolved-{provider}-$n-$$" | tee -a "{log}"\n'
    )
    script.chmod(0o755)
    return script


def _session(tmp_path_factory: pytest.TempPathFactory, case: Case) -> Run:
    root = tmp_path_factory.mktemp(case.provider)
    for name in ("agent", "home", "run", "sessions", "work"):
        (root / name).mkdir()
    agent, run_dir = root / "agent", root / "run"
    auth: dict[str, Any] = {}
    if case.key_from == "helper":
        auth[case.provider] = {"type": "api_key", "key": f"!{_helper(root, case.provider)}"}
    settings: dict[str, Any] = {"compaction": {"enabled": True, "reserveTokens": 4096, "keepRecentTokens": 50}}
    if case.lookup:
        auth[case.lookup.provider] = {"type": "api_key", "key": case.lookup.key}
        settings["picompact"] = {"lookupModel": f"{case.lookup.provider}/{case.lookup.model}"}
    if auth:
        (agent / "auth.json").write_bytes(orjson.dumps(auth))
    (agent / "settings.json").write_bytes(orjson.dumps(settings))
    env = pi_env(root)
    installed = subprocess.run(
        [*picompact_exe(), "pi", "install", "--mode", "summary"], env=env, capture_output=True, check=False
    )
    assert installed.returncode == 0, installed.stderr
    with local_model(run_dir) as port:
        providers = {case.provider: {"baseUrl": f"http://127.0.0.1:{port}{case.base_path}"}}
        if case.lookup:
            providers[case.lookup.provider] = {"baseUrl": f"http://127.0.0.1:{port}{case.lookup.base_path}"}
        (agent / "models.json").write_bytes(orjson.dumps({"providers": providers}))
        args = ["--session-dir", str(root / "sessions"), "--provider", case.provider, "--model", case.model]
        if case.key_from == "flag":
            args += ["--api-key", FLAG_KEY]
        commands: list[dict[str, Any]] = [
            *({"id": f"p{n}", "type": "prompt", "message": text} for n, text in enumerate(PROMPTS)),
            {"id": "compact", "type": "compact"},
            {"id": "lookup", "type": "prompt", "message": LOOKUP_PROMPT},
        ]
        events = pi_rpc([*args, "--thinking", "off"], env, root / "work", commands, run_dir / "pi.err")
    (session,) = (root / "sessions").glob("*.jsonl")
    data = session.read_bytes()
    log = root / "keys.log"
    return Run(
        case=case,
        env=env,
        keys=[FLAG_KEY] if case.key_from == "flag" else log.read_text().split() if log.exists() else [],
        requests=logged_requests(run_dir),
        events=events,
        entries=[orjson.loads(line) for line in data.split(b"\n") if line.strip()],
        session_bytes=data,
        stderr=(run_dir / "pi.err").read_text(errors="replace"),
    )


@pytest.fixture(scope="module", params=CASES, ids=[c.name for c in CASES])
def run(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Run]:
    yield _session(tmp_path_factory, request.param)


def _system(request: dict[str, Any]) -> str:
    """The system prompt of a logged request, in either API's shape."""
    body = request.get("body") or {}
    if request.get("api") == "google":
        return "".join(p.get("text", "") for p in (body.get("systemInstruction") or {}).get("parts") or [])
    messages = [m for m in body.get("messages") or [] if m.get("role") in ("system", "developer")]
    return "".join(m["content"] if isinstance(m.get("content"), str) else "" for m in messages)


def _user_text(request: dict[str, Any]) -> str:
    body = request.get("body") or {}
    if request.get("api") == "google":
        return "".join(p.get("text", "") for c in body.get("contents") or [] for p in c.get("parts") or [])
    return "".join(m["content"] for m in body.get("messages") or [] if isinstance(m.get("content"), str))


def _picompacts(run: Run) -> list[dict[str, Any]]:
    return [r for r in run.requests if _system(r) == SYSTEM_PROMPT]


def _lookups(run: Run) -> list[dict[str, Any]]:
    """The requests of picompact's lookup model (context_lookup)."""
    return [r for r in run.requests if _system(r).startswith(LOOKUP_SYSTEM)]


def _offered(request: dict[str, Any]) -> set[str]:
    """The tools a logged request offers, in either API's shape."""
    body = request.get("body") or {}
    if request.get("api") == "google":
        return {d.get("name") for t in body.get("tools") or [] for d in t.get("functionDeclarations") or []}
    return {(t.get("function") or {}).get("name") for t in body.get("tools") or []}


def _notices(run: Run) -> list[str]:
    """What the extension told the user (RPC mode: extension UI notifications)."""
    return [str(e.get("message", "")) for e in run.events if e.get("method") == "notify"]


def _digest(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


def _pis_key(run: Run) -> str:
    """The key Pi resolved: the helper's first output (Pi runs it for its first request and keeps it), or the
    --api-key given."""
    assert run.keys, ("the key helper never ran", run.stderr[-2000:])
    return run.keys[0]


def test_the_case_is_what_the_catalogs_say(run: Run) -> None:
    """The model is in the table with the API the case expects; the environment holds no key of the provider
    that picompact reads itself, nor PICOMPACT_API_KEY."""
    case = run.case
    info = find_model(case.provider, case.model)
    assert info is not None and info.api == case.api
    names = {*resolve_model(f"{case.provider}/{case.model}").key_env, RUN_KEY_ENV}
    assert not names & set(run.env), names
    assert not [name for name in run.env if name.endswith(("_API_KEY", "_TOKEN"))]


def test_pi_resolved_the_key_once_and_sent_it_itself(run: Run) -> None:
    key = _pis_key(run)
    picompacts = [*_picompacts(run), *_lookups(run)]
    mine = [r for r in run.requests if r.get("method") == "POST" and r not in picompacts]
    # A request per prompt, and for the lookup prompt a second one with the tool's result.
    assert len(mine) == len(PROMPTS) + 2, [r["path"] for r in run.requests]
    for request in mine:
        assert request["status"] == 200 and request["api"] == ("google" if run.case.provider == "google" else "openai")
        assert request["auth"] == {"via": run.case.via, "sha256": _digest(key)}
        assert PI_SUMMARIZER not in _system(request)  # no compaction of Pi's own


def test_the_key_helper_ran_once(run: Run) -> None:
    """Pi ran it and kept its key; nothing ran it again to find a key of its own (neither the summary nor the
    lookup)."""
    assert len(run.keys) == 1, run.keys


def test_picompacts_summary_request_carries_the_key_pi_resolved(run: Run) -> None:
    key = _pis_key(run)
    summaries = _picompacts(run)
    assert len(summaries) == 1, ([r["path"] for r in run.requests], _notices(run), run.stderr[-2000:])
    (summary,) = summaries
    assert summary["path"] == run.case.summary_path
    assert summary["status"] == 200 and summary["reply"]["kind"] == "picompact-summary"
    assert summary["auth"] == {"via": run.case.via, "sha256": _digest(key)}, "not the key Pi resolved"
    if run.case.api == "openai-completions":
        assert summary["body"]["model"] == run.case.model
    # It summarises this session: the first prompt is in the transcript, the kept second one is not.
    assert PROMPTS[0] in _user_text(summary) and PROMPTS[1] not in _user_text(summary)


def test_the_compaction_pi_wrote_is_picompacts_summary(run: Run) -> None:
    response = next(e for e in run.events if e.get("type") == "response" and e.get("id") == "compact")
    assert response["success"] is True, response
    compactions = [e for e in run.entries if e["type"] == "compaction"]
    assert len(compactions) == 1
    (compaction,) = compactions
    assert compaction["fromHook"] is True, _notices(run)
    assert compaction["summary"] == response["data"]["summary"]
    assert compaction["summary"].startswith("## Goal\n- " + MARK)
    assert "Pi compacts its own way" not in run.stderr
    assert not [n for n in _notices(run) if "picompact" in n], _notices(run)


def test_the_key_is_not_written_anywhere(run: Run) -> None:
    key = _pis_key(run)
    assert key.encode() not in run.session_bytes
    assert key not in run.stderr
    assert key not in orjson.dumps(run.events).decode()


def test_context_lookup_is_offered_and_its_request_carries_the_key_pi_resolved(run: Run) -> None:
    """The extension registered context_lookup (picompact saw the key to decide it), the local model called it, and
    picompact's lookup model was asked with the key Pi resolved, at the provider's server. A lookup model of another
    provider is asked with its own key: the one Pi resolved for the session's provider is not sent to it."""
    key = _pis_key(run)
    prompted = [r for r in run.requests if r.get("reply", {}).get("kind") == "tool-call"]
    assert len(prompted) == 1, ([r.get("reply", {}).get("kind") for r in run.requests], _notices(run))
    assert "context_lookup" in _offered(prompted[0])
    lookups = _lookups(run)
    assert lookups, ([r["path"] for r in run.requests], _notices(run), run.stderr[-2000:])
    other = run.case.lookup
    base_path, via = (other.base_path, other.via) if other else (run.case.base_path, run.case.via)
    for request in lookups:
        assert request["path"].startswith(base_path), request["path"]
        assert request["status"] == 200
        if other:
            assert request["auth"] == {"via": via, "sha256": _digest(other.key)}, "not the lookup model's own key"
        else:
            assert request["auth"] == {"via": via, "sha256": _digest(key)}, "not the key Pi resolved"
        assert QUESTION in _user_text(request)
        assert _offered(request) == {"list_entries", "grep", "show_entry"}
        if other or run.case.api == "openai-completions":
            assert request["body"]["model"] == (other.model if other else run.case.model)


def test_the_lookups_answer_is_the_tools_result(run: Run) -> None:
    results = [
        e["message"]
        for e in run.entries
        if e["type"] == "message"
        and e["message"]["role"] == "toolResult"
        and e["message"]["toolName"] == "context_lookup"
    ]
    assert len(results) == 1, _notices(run)
    (result,) = results
    text = "".join(c.get("text", "") for c in result["content"])
    assert result["isError"] is False, text
    assert text.startswith("OK from fake model"), text  # the local model's answer, through picompact lookup
