"""What resume.py and drive.py share: where Pi and its node are, a private Pi home, running the real Pi CLI in it,
and telling which session entry each message of a request came from."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
MODULES = Path(os.environ.get("PICOMPACT_PI_MODULES") or HERE.parent / "node_modules")
PACKAGE = MODULES / "@earendil-works" / "pi-coding-agent"
NODE = (MODULES / ".bin" / "node").resolve()
SUMMARY_PREFIX = "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
SUMMARY_SUFFIX = "\n</summary>"
# Nothing of the user's is loaded: no skills, templates, themes, context files or MCP servers, no network.
QUIET = ["--no-skills", "--no-prompt-templates", "--no-themes", "--no-context-files", "--no-mcp", "--no-approve"]


def pi_cli() -> Path:
    """The package's ``pi`` bin entry, as ``npm install -g`` would run it."""
    manifest = json.loads((PACKAGE / "package.json").read_text())
    entry = manifest["bin"]["pi"] if isinstance(manifest["bin"], dict) else manifest["bin"]
    return PACKAGE / entry


def check_installed() -> None:
    if not NODE.is_file() or not (PACKAGE / "package.json").is_file():
        raise SystemExit(f"Pi 1.6 and its node are not installed in {MODULES} (make pi)")


class PiHome:
    """A private temp dir for Pi: ``agent/`` (PI_CODING_AGENT_DIR), ``home/``, ``run/`` (TMPDIR and logs),
    ``sessions/`` and ``work/`` (the project Pi runs in). Nothing outside it is read or written."""

    def __init__(self, prefix: str, keep: bool = False) -> None:
        self.root = Path(tempfile.mkdtemp(prefix=prefix))
        self.keep = keep
        for name in ("agent", "home", "run", "sessions", "work"):
            (self.root / name).mkdir()
        self.agent, self.work, self.sessions, self.run = (self.root / n for n in ("agent", "work", "sessions", "run"))

    def env(self) -> dict[str, str]:
        return {
            "PATH": f"{NODE.parent}:/usr/bin:/bin",
            "HOME": str(self.root / "home"),
            "TERM": "dumb",
            "LANG": "C.UTF-8",
            "TMPDIR": str(self.run),
            "PI_CODING_AGENT_DIR": str(self.agent),
            "PI_OFFLINE": "1",
            "PI_SKIP_VERSION_CHECK": "1",
            "PI_TELEMETRY": "0",
        }

    def configure(
        self, port: int, context_window: int, settings: dict[str, Any], model_extra: dict[str, Any] | None = None
    ) -> None:
        """models.json: provider ``fake`` (Chat Completions on 127.0.0.1:port) with ``fake-model`` (plus
        ``model_extra``: a ``promptCache``, say); settings.json gets ``settings`` merged over what is there."""
        model = {
            "id": "fake-model",
            "name": "Fake Model",
            "reasoning": False,
            "input": ["text"],
            "contextWindow": context_window,
            "maxTokens": 4096,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0},
            **(model_extra or {}),
        }
        provider = {
            "name": "Local test model",
            "baseUrl": f"http://127.0.0.1:{port}/v1",
            "api": "openai-completions",
            "apiKey": "local-test-key",
            "models": [model],
        }
        (self.agent / "models.json").write_text(json.dumps({"providers": {"fake": provider}}, indent=1))
        path = self.agent / "settings.json"
        try:
            current = json.loads(path.read_text()) if path.exists() else {}
        except ValueError:
            current = {}
        current = current if isinstance(current, dict) else {}
        path.write_text(json.dumps({**current, **settings}, indent=1))

    def pi(self, *args: str, extensions: list[str] | None = None) -> list[str]:
        """The Pi command line: ``args``, the fake model, and ``extensions`` (None: ``--no-extensions``)."""
        loading = ["--no-extensions"] if extensions is None else extensions
        model = ["--provider", "fake", "--model", "fake-model", "--thinking", "off"]
        return [str(NODE), str(pi_cli()), *args, *model, *loading, *QUIET, "--offline"]

    def close(self) -> None:
        if not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)


def run_logged(argv: list[str], home: PiHome, name: str, timeout: float, stdin: bytes | None = None) -> dict[str, Any]:
    """Run ``argv`` in the work dir, in its own process group; stdout and stderr go to run/NAME.out|err."""
    out, err = home.run / f"{name}.out", home.run / f"{name}.err"
    with open(out, "wb") as fo, open(err, "wb") as fe:
        proc = subprocess.Popen(
            argv,
            cwd=home.work,
            env=home.env(),
            stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
            stdout=fo,
            stderr=fe,
            start_new_session=True,
        )
        try:
            proc.communicate(stdin, timeout=timeout)
            code = proc.returncode
        except subprocess.TimeoutExpired:
            code = 124
        finally:
            _end_group(proc)
    return {"exitCode": code, "stdout": out.read_bytes(), "stderr": err.read_bytes()}


def _end_group(proc: subprocess.Popen[bytes]) -> None:
    """End the process (if still running) and whatever it left in its group (a tool's `sleep`, say)."""
    if proc.poll() is None:
        proc.kill()
        proc.wait()
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, 9)


def read_jsonl(path: Path) -> list[Any]:
    """Every physical line of a JSON Lines file, parsed (None for a blank or unparsable one)."""
    out: list[Any] = []
    for line in path.read_bytes().decode("utf-8", "replace").split("\n")[: -1 or None]:
        try:
            out.append(json.loads(line) if line.strip() else None)
        except ValueError:
            out.append(None)
    return out


def requests(log: Path) -> list[dict[str, Any]]:
    """The chat requests in a model server's log, in order."""
    if not log.exists():
        return []
    records = [json.loads(line) for line in log.read_text().splitlines() if line.strip()]
    return [r for r in records if r.get("method") == "POST" and isinstance(r.get("body"), dict)]


def wire_text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if isinstance(p, dict) and p.get("type") == "text")
    return ""


def content_text(content: Any) -> str:
    """A session message's text as Pi sends it: the non-empty text blocks, joined by newlines."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            b["text"] for b in content if isinstance(b, dict) and b.get("type") == "text" and b.get("text")
        )
    return ""


def wire_call_id(session_id: str) -> str:
    """The id Pi sends for a tool call over Chat Completions (a "call|item" id is sanitised)."""
    if "|" not in session_id:
        return session_id
    call, item = session_id.split("|", 1)
    call, item = re.sub(r"[^A-Za-z0-9_-]", "_", call), re.sub(r"[^A-Za-z0-9_-]", "_", item)
    combined = f"{call}_{item}" if item else call
    return combined if len(combined) <= 40 else call[:31] + "_"  # a prefix: the rest is a hash of the id


def _keys(entry: dict[str, Any]) -> list[tuple[str, str]]:
    """How an entry shows on the wire: (kind, key) pairs a request message can match."""
    kind = entry.get("type")
    if kind == "custom_message":
        return [("user", content_text(entry.get("content")))]
    if kind == "compaction":
        return [("user", SUMMARY_PREFIX + str(entry.get("summary")) + SUMMARY_SUFFIX)]
    if kind != "message" or not isinstance(entry.get("message"), dict):
        return []
    message = entry["message"]
    role = message.get("role")
    if role == "toolResult" and isinstance(message.get("toolCallId"), str):
        return [("tool", wire_call_id(message["toolCallId"]))]
    if role == "assistant":
        blocks = message.get("content") if isinstance(message.get("content"), list) else []
        calls = [b["id"] for b in blocks if isinstance(b, dict) and b.get("type") == "toolCall" and "id" in b]
        if calls:
            return [("call", wire_call_id(str(calls[0])))]
        return [
            ("assistant", "".join(b.get("text", "") for b in blocks if isinstance(b, dict) and b.get("type") == "text"))
        ]
    if role in ("user", "custom", "hookMessage"):
        return [("user", content_text(message.get("content")))]
    return []


def _key(message: dict[str, Any]) -> tuple[str, str]:
    role = message.get("role")
    if role == "tool":
        return ("tool", str(message.get("tool_call_id")))
    if role == "assistant":
        calls = message.get("tool_calls") or []
        return ("call", str(calls[0].get("id"))) if calls else ("assistant", wire_text(message))
    return (str(role), wire_text(message))


def match_entries(messages: list[dict[str, Any]], path: list[dict[str, Any]]) -> list[int | None]:
    """For each request message, the position on ``path`` (root to leaf) of the entry it came from, or None (a
    system message, or nothing matches). Equal texts are told apart by order: the earliest unused candidate after
    the previous match."""
    where: dict[tuple[str, str], list[int]] = {}
    for at, entry in enumerate(path):
        for key in _keys(entry):
            where.setdefault(key, []).append(at)
    used: set[int] = set()
    out: list[int | None] = []
    cursor = 0
    for message in messages:
        if message.get("role") in ("system", "developer"):
            out.append(None)
            continue
        role, text = _key(message)
        candidates = [c for c in where.get((role, text), []) if c not in used]
        if not candidates and role == "tool":  # a long "call|item" id is sent as a prefix and a hash
            candidates = [c for k, cs in where.items() if k[0] == "tool" and text.startswith(k[1]) for c in cs]
        pick = next((c for c in candidates if c >= cursor), candidates[-1] if candidates else None)
        if pick is not None:
            used.add(pick)
            cursor = pick + 1
        out.append(pick)
    return out


def branch_of(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Root to leaf (the last entry), following parentId."""
    by_id = {e.get("id"): e for e in entries if isinstance(e.get("id"), str)}
    path: list[dict[str, Any]] = []
    entry = entries[-1] if entries else None
    while entry is not None and all(entry is not p for p in path):
        path.append(entry)
        entry = by_id.get(entry.get("parentId"))
    return path[::-1]
