"""Build small Pi session files for tests: v3 entries with 8-hex ids chained by parentId."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import orjson


class SessionBuilder:
    """Append entries like Pi does (each a child of the previous one) and write them as JSONL."""

    def __init__(self, cwd: str = "/repo", session_id: str = "0199aaaa-0000-7000-8000-000000000001") -> None:
        self.header: dict[str, Any] = {
            "type": "session",
            "version": 3,
            "id": session_id,
            "timestamp": "2026-01-01T00:00:00.000Z",
            "cwd": cwd,
        }
        self.entries: list[dict[str, Any]] = []
        self._ids = (f"{n:08x}" for n in itertools.count(0xA0000001))
        self._clock = itertools.count(1)
        self.leaf: str | None = None

    def _ts(self) -> str:
        n = next(self._clock)
        return f"2026-01-01T00:{n // 60 % 60:02d}:{n % 60:02d}.000Z"

    def add(self, entry: dict[str, Any], parent: str | bool | None = True) -> str:
        entry_id = entry.get("id") or next(self._ids)
        parent_id = self.leaf if parent is True else (None if parent is False else parent)
        full = {"type": entry["type"], "id": entry_id, "parentId": parent_id, "timestamp": self._ts()}
        full.update({k: v for k, v in entry.items() if k not in ("type", "id")})
        self.entries.append(full)
        self.leaf = entry_id
        return entry_id

    def message(self, message: dict[str, Any], **kw: Any) -> str:
        return self.add({"type": "message", "message": message}, **kw)

    def user(self, text: str | list[dict[str, Any]], **kw: Any) -> str:
        return self.message({"role": "user", "content": text, "timestamp": 1}, **kw)

    def assistant(
        self,
        text: str = "",
        *,
        tool_calls: list[tuple[str, str, dict[str, Any]]] = (),  # type: ignore[assignment]
        thinking: str | None = None,
        usage: int | None = None,
        stop_reason: str = "stop",
        model: tuple[str, str] = ("anthropic", "claude-sonnet-4-5"),
        **kw: Any,
    ) -> str:
        content: list[dict[str, Any]] = []
        if thinking is not None:
            content.append({"type": "thinking", "thinking": thinking})
        if text:
            content.append({"type": "text", "text": text})
        for call_id, name, args in tool_calls:
            content.append({"type": "toolCall", "id": call_id, "name": name, "arguments": args})
        msg: dict[str, Any] = {
            "role": "assistant",
            "content": content,
            "api": "anthropic-messages",
            "provider": model[0],
            "model": model[1],
            "stopReason": "toolUse" if tool_calls and stop_reason == "stop" else stop_reason,
            "timestamp": 2,
        }
        if usage is not None:
            msg["usage"] = {
                "input": usage,
                "output": 0,
                "cacheRead": 0,
                "cacheWrite": 0,
                "totalTokens": usage,
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
            }
        return self.message(msg, **kw)

    def tool_result(self, call_id: str, name: str, text: str, *, is_error: bool = False, **extra: Any) -> str:
        msg = {
            "role": "toolResult",
            "toolCallId": call_id,
            "toolName": name,
            "content": [{"type": "text", "text": text}],
            "isError": is_error,
            "timestamp": 3,
            **extra,
        }
        return self.message(msg)

    def lines(self) -> list[bytes]:
        return [orjson.dumps(self.header)] + [orjson.dumps(e) for e in self.entries]

    def to_bytes(self) -> bytes:
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
