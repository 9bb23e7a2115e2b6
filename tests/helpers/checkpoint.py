"""Hand-built Pi sessions for the checkpoint tests: a small builder that writes real JSONL files (ids e0000001, …,
which the golden files record), and helpers that plan and build a verbatim checkpoint from one."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from pi_compact.checkpoint import Checkpoint, VerbatimOptions, build_verbatim_checkpoint
from pi_compact.plan import CompactionPlan, plan_compaction
from pi_compact.session import get_branch, load_session

CWD = "/home/dev/repo"


@dataclass
class SessionBuilder:
    """Appends entries with ids e0000001, e0000002, …; each new entry's parent is the previous one unless given."""

    cwd: str = CWD
    entries: list[dict[str, Any]] = field(default_factory=list)
    header_extra: dict[str, Any] = field(default_factory=dict)
    _count: int = 0
    _calls: int = 0

    def _add(self, raw: dict[str, Any], parent: str | bool | None = True) -> str:
        self._count += 1
        entry_id = raw.pop("id", None) or f"e{self._count:07d}"
        parent_id = (self.entries[-1]["id"] if self.entries else None) if parent is True else parent or None
        ts = f"2025-01-01T00:{self._count // 60 % 60:02d}:{self._count % 60:02d}.000Z"
        self.entries.append({"type": raw.pop("type"), "id": entry_id, "parentId": parent_id, "timestamp": ts, **raw})
        return entry_id

    def message(self, message: dict[str, Any], parent: str | bool | None = True) -> str:
        return self._add({"type": "message", "message": {**message, "timestamp": 1735689600000 + self._count}}, parent)

    def user(self, content: Any, parent: str | bool | None = True) -> str:
        return self.message({"role": "user", "content": content}, parent)

    def call(self, name: str, arguments: dict[str, Any], call_id: str | None = None) -> dict[str, Any]:
        self._calls += 1
        return {"type": "toolCall", "id": call_id or f"call_{self._calls}", "name": name, "arguments": arguments}

    def assistant(
        self,
        *blocks: Any,
        stop: str = "stop",
        error: str | None = None,
        parent: str | bool | None = True,
    ) -> str:
        content = [{"type": "text", "text": b} if isinstance(b, str) else b for b in blocks]
        message: dict[str, Any] = {
            "role": "assistant",
            "content": content,
            "api": "anthropic-messages",
            "provider": "anthropic",
            "model": "claude-sonnet-4-5",
            "usage": {"input": 10, "output": 10, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 20},
            "stopReason": stop,
        }
        if error is not None:
            message["errorMessage"] = error
        return self.message(message, parent)

    def result(self, call: dict[str, Any], text: str = "output", is_error: bool = False, **extra: Any) -> str:
        return self.message(
            {
                "role": "toolResult",
                "toolCallId": call["id"],
                "toolName": call["name"],
                "content": [{"type": "text", "text": text}],
                "isError": is_error,
                **extra,
            }
        )

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
        return self._add({"type": "custom_message", "customType": custom_type, "content": content, "display": display})

    def branch_summary(self, summary: str, from_id: str, parent: str | bool | None = True) -> str:
        return self._add({"type": "branch_summary", "fromId": from_id, "summary": summary}, parent)

    def context_edit(self, target: str, replacement: Any) -> str:
        return self._add({"type": "context_edit", "targetId": target, "replacement": replacement})

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
        return self._add(raw)

    def other(self, entry_type: str, **fields: Any) -> str:
        return self._add({"type": entry_type, **fields})

    def data(self) -> bytes:
        """The session file's bytes: header line, then one line per entry."""
        header = {
            "type": "session",
            "version": 3,
            "id": "sess-0001",
            "timestamp": "2025-01-01T00:00:00.000Z",
            "cwd": self.cwd,
            **self.header_extra,
        }
        lines = [orjson.dumps(header)] + [orjson.dumps(e) for e in self.entries]
        return b"\n".join(lines) + b"\n"

    def write(self, path: Path) -> Path:
        path.write_bytes(self.data())
        return path


def plan_for(path: Path, keep_recent_tokens: int = 1) -> CompactionPlan:
    """Pi's plan for the session file (keep 1 token: only the last message is kept)."""
    return plan_compaction(get_branch(load_session(path)), keep_recent_tokens)


def compact(
    builder: SessionBuilder,
    tmp_path: Path,
    *,
    keep: int = 1,
    cap: int | None = None,
    lookup: bool = False,
    name: str = "session.jsonl",
) -> tuple[CompactionPlan, Checkpoint]:
    path = builder.write(tmp_path / name)
    plan = plan_for(path, keep)
    return plan, build_verbatim_checkpoint(plan, VerbatimOptions(str(path), cap, lookup_available=lookup))


def append_checkpoint(builder: SessionBuilder, plan: CompactionPlan, checkpoint: Checkpoint) -> str:
    """Record the checkpoint as the entry picompact writes (compaction + hidden re-orientation message)."""
    assert plan.first_kept is not None
    compaction_id = builder.compaction(
        checkpoint.summary, plan.first_kept.id, details=checkpoint.details, fromHook=True
    )
    builder.custom_message("picompact.reorientation", checkpoint.reminder, display=False)
    return compaction_id


def span_texts(summary: str) -> list[str]:
    """The <span …>…</span> blocks of a summary, in order."""
    out: list[str] = []
    rest = summary
    while "<span " in rest:
        start = rest.index("<span ")
        end = rest.index("</span>", start) + len("</span>")
        out.append(rest[start:end])
        rest = rest[end:]
    return out
