"""Build Pi session files for tests: v3 entries chained by parentId, written as real JSONL.

One builder, two id schemes: ``PLAIN`` (ids a0000001, a0000002, … in hex, 2026 timestamps, messages without usage
unless asked) for most tests, and ``SERIAL`` (ids e0000001, e0000002, …, 2025 timestamps, every assistant reply
with a small usage) which the checkpoint tests and their golden files in tests/golden/ record.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson


@dataclass(frozen=True)
class Scheme:
    """How a builder names and dates what it writes."""

    serial_ids: bool  # e0000001 numbered by entry; else a0000001 in hex, numbered by generated id only
    day: str  # the date of the header and of every entry
    session_id: str
    cwd: str
    message_clock: int | None  # message timestamps: this + the entry's number; None: 1 user, 2 assistant, 3 result
    usage: dict[str, Any] | None  # the usage of an assistant reply that names none


PLAIN = Scheme(
    serial_ids=False,
    day="2026-01-01",
    session_id="0199aaaa-0000-7000-8000-000000000001",
    cwd="/repo",
    message_clock=None,
    usage=None,
)
SERIAL = Scheme(
    serial_ids=True,
    day="2025-01-01",
    session_id="sess-0001",
    cwd="/home/dev/repo",
    message_clock=1735689600000,
    usage={"input": 10, "output": 10, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 20},
)
_DEFAULT_USAGE: Any = object()


class SessionBuilder:
    """Append entries like Pi does (each a child of the previous one unless ``parent`` says otherwise) and write
    them as JSONL. ``header`` is the session header; edit it (or ``cwd``) before writing."""

    def __init__(self, cwd: str | None = None, session_id: str | None = None, *, scheme: Scheme = PLAIN) -> None:
        self.scheme = scheme
        self.header: dict[str, Any] = {
            "type": "session",
            "version": 3,
            "id": session_id or scheme.session_id,
            "timestamp": f"{scheme.day}T00:00:00.000Z",
            "cwd": cwd or scheme.cwd,
        }
        self.entries: list[dict[str, Any]] = []
        self.leaf: str | None = None
        self._count = 0  # entries added
        self._generated = 0  # ids generated
        self._calls = 0

    @property
    def cwd(self) -> str:
        return str(self.header["cwd"])

    @cwd.setter
    def cwd(self, value: str) -> None:
        self.header["cwd"] = value

    def _next_id(self) -> str:
        if self.scheme.serial_ids:
            return f"e{self._count:07d}"
        self._generated += 1
        return f"{0xA0000000 + self._generated:08x}"

    def add(self, entry: dict[str, Any], parent: str | bool | None = True) -> str:
        """Append ``entry`` (its ``type`` and fields; an ``id`` of its own is kept); returns its id."""
        self._count += 1
        entry_id = entry.get("id") or self._next_id()
        parent_id = self.leaf if parent is True else (parent or None)
        n = self._count
        timestamp = f"{self.scheme.day}T00:{n // 60 % 60:02d}:{n % 60:02d}.000Z"
        full = {"type": entry["type"], "id": entry_id, "parentId": parent_id, "timestamp": timestamp}
        full.update({k: v for k, v in entry.items() if k not in ("type", "id")})
        self.entries.append(full)
        self.leaf = entry_id
        return entry_id

    def _role_time(self, value: int) -> dict[str, int]:
        return {"timestamp": value} if self.scheme.message_clock is None else {}

    def message(self, message: dict[str, Any], parent: str | bool | None = True) -> str:
        if self.scheme.message_clock is not None:
            message = {**message, "timestamp": self.scheme.message_clock + self._count}
        return self.add({"type": "message", "message": message}, parent)

    def user(self, content: str | list[dict[str, Any]], parent: str | bool | None = True) -> str:
        return self.message({"role": "user", "content": content, **self._role_time(1)}, parent)

    def call(self, name: str, arguments: dict[str, Any], call_id: str | None = None) -> dict[str, Any]:
        """A toolCall block (ids call_1, call_2, …) to pass to ``assistant`` and then ``result``."""
        self._calls += 1
        return {"type": "toolCall", "id": call_id or f"call_{self._calls}", "name": name, "arguments": arguments}

    def assistant(
        self,
        *blocks: str | dict[str, Any],
        tool_calls: list[tuple[str, str, dict[str, Any]]] = (),  # type: ignore[assignment]
        thinking: str | None = None,
        usage: int | None = _DEFAULT_USAGE,
        stop: str = "stop",
        error: str | None = None,
        model: tuple[str, str] = ("anthropic", "claude-sonnet-4-5"),
        parent: str | bool | None = True,
    ) -> str:
        """A reply: ``thinking``, then the blocks (a string is a text block; an empty one is left out), then
        ``tool_calls`` as (id, name, arguments), which also make the stop reason toolUse. ``usage``: the input
        tokens it reports (None: no usage; default: the scheme's)."""
        content: list[dict[str, Any]] = []
        if thinking is not None:
            content.append({"type": "thinking", "thinking": thinking})
        content += [{"type": "text", "text": b} if isinstance(b, str) else b for b in blocks if b != ""]
        for call_id, name, args in tool_calls:
            content.append({"type": "toolCall", "id": call_id, "name": name, "arguments": args})
        if usage is _DEFAULT_USAGE:
            usage_field = self.scheme.usage
        elif usage is None:
            usage_field = None
        else:
            usage_field = {
                "input": usage,
                "output": 0,
                "cacheRead": 0,
                "cacheWrite": 0,
                "totalTokens": usage,
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
            }
        msg: dict[str, Any] = {
            "role": "assistant",
            "content": content,
            "api": "anthropic-messages",
            "provider": model[0],
            "model": model[1],
        }
        if self.scheme.message_clock is not None and usage_field is not None:
            msg["usage"] = usage_field
        msg["stopReason"] = "toolUse" if tool_calls and stop == "stop" else stop
        msg.update(self._role_time(2))
        if self.scheme.message_clock is None and usage_field is not None:
            msg["usage"] = usage_field
        if error is not None:
            msg["errorMessage"] = error
        return self.message(msg, parent)

    def tool_result(self, call_id: str, name: str, text: str, *, is_error: bool = False, **extra: Any) -> str:
        msg = {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": name,
            "content": [{"type": "text", "text": text}],
            "isError": is_error,
            **self._role_time(3),
            **extra,
        }
        return self.message(msg)

    def result(self, call: dict[str, Any], text: str = "output", is_error: bool = False, **extra: Any) -> str:
        """The result of a block from ``call``."""
        return self.tool_result(call["id"], call["name"], text, is_error=is_error, **extra)

    def tool(self, name: str, arguments: dict[str, Any], output: str = "output", is_error: bool = False) -> str:
        """An assistant message with one call, followed by its result; returns the assistant's id."""
        call = self.call(name, arguments)
        assistant_id = self.assistant(call, stop="toolUse")
        self.result(call, output, is_error)
        return assistant_id

    def bash(self, command: str, output: str = "", exit_code: int | None = 0, **extra: Any) -> str:
        return self.message(
            {
                "role": "bashExecution",
                "command": command,
                "output": output,
                "exitCode": exit_code,
                "cancelled": False,
                "truncated": False,
                **extra,
            }
        )

    def custom_message(self, custom_type: str, content: Any = "injected text", display: bool = True) -> str:
        return self.add({"type": "custom_message", "customType": custom_type, "content": content, "display": display})

    def branch_summary(self, summary: str, from_id: str, parent: str | bool | None = True) -> str:
        return self.add({"type": "branch_summary", "fromId": from_id, "summary": summary}, parent)

    def context_edit(self, target: str, replacement: Any) -> str:
        return self.add({"type": "context_edit", "targetId": target, "replacement": replacement})

    def compaction(self, summary: str, first_kept: str, details: Any = None, **extra: Any) -> str:
        raw: dict[str, Any] = {
            "type": "compaction",
            "summary": summary,
            "firstKeptEntryId": first_kept,
            "tokensBefore": 1000,
        }
        if details is not None:
            raw["details"] = details
        raw.update(extra)
        return self.add(raw)

    def other(self, entry_type: str, **fields: Any) -> str:
        return self.add({"type": entry_type, **fields})

    def lines(self) -> list[bytes]:
        return [orjson.dumps(self.header)] + [orjson.dumps(e) for e in self.entries]

    def to_bytes(self) -> bytes:
        """The session file's bytes: header line, then one line per entry."""
        return b"".join(line + b"\n" for line in self.lines())

    def write(self, path: Path) -> Path:
        path.write_bytes(self.to_bytes())
        return path


def simple_session(turns: int = 6, size: int = 400, usage: bool = True) -> SessionBuilder:
    """A plain conversation: user → assistant with a read call → tool result → assistant, repeated."""
    sb = SessionBuilder()
    sb.add({"type": "model_change", "provider": "anthropic", "modelId": "claude-sonnet-4-5"})
    for i in range(turns):
        sb.user(f"Turn {i}: please look at src/mod{i}.py " + "x" * size)
        sb.assistant(f"Reading mod{i}", tool_calls=[(f"call_{i}", "read", {"path": f"/repo/src/mod{i}.py"})])
        sb.tool_result(f"call_{i}", "read", f"contents of mod{i}\n" + "y" * size)
        sb.assistant(f"Done with turn {i}", usage=1000 * (i + 1) if usage else None)
    return sb


def written_long_ago(path: Path) -> Path:
    """Date the file's last change a minute back, as a torn line left by a crash is: picompact then needs no quiet
    time to tell it from a line another program is still writing (that wait is tested where it matters)."""
    then = time.time() - 60
    os.utime(path, (then, then))
    return path


def side_branch_session(path: Path, question: str) -> tuple[Path, str]:
    """Six plain turns, then ``question`` (and an answer) branching off the second turn's last reply, so the file
    ends on the side branch. Returns the written file and the id of the main branch's tip."""
    sb = simple_session(turns=6, size=400)
    main_tip = sb.leaf
    assert main_tip is not None
    sb.user(question, parent=sb.entries[8]["id"])
    sb.assistant("side answer")
    return sb.write(path), main_tip
