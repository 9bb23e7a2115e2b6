"""Turning entries into the messages Pi would put in the model's context, and back into plain text."""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from pi_compact.session.entries import Entry, JsonDict

COMPACTION_SUMMARY_PREFIX = (
    "The conversation history before this point was compacted into the following summary:\n\n<summary>\n"
)
COMPACTION_SUMMARY_SUFFIX = "\n</summary>"
BRANCH_SUMMARY_PREFIX = "The following is a summary of a branch that this conversation came back from:\n\n<summary>\n"
BRANCH_SUMMARY_SUFFIX = "</summary>"


def _ms(timestamp: Any) -> int | None:
    if not isinstance(timestamp, str):
        return None
    try:
        return int(datetime.fromisoformat(timestamp.replace("Z", "+00:00")).timestamp() * 1000)
    except (ValueError, OverflowError):
        return None


def entry_messages(entry: Entry) -> list[JsonDict]:
    """What one entry contributes to context before edits (Pi's sessionEntryToContextMessages)."""
    raw = entry.raw
    kind = entry.type
    if kind == "message":
        message = raw.get("message")
        if not isinstance(message, dict):
            return []
        role = message.get("role")
        if role == "system" and message.get("content") is None:
            return [{**message, "content": ""}]
        if role in ("user", "assistant", "toolResult") and message.get("content") is None:
            return [{**message, "content": []}]
        return [message]
    if kind == "custom_message":
        content = raw.get("content")
        return [
            {
                "role": "custom",
                "customType": raw.get("customType"),
                "content": [] if content is None else content,
                "display": raw.get("display"),
                "details": raw.get("details"),
                "timestamp": _ms(raw.get("timestamp")),
            }
        ]
    if kind == "branch_summary" and raw.get("summary"):
        return [
            {
                "role": "branchSummary",
                "summary": raw.get("summary"),
                "fromId": raw.get("fromId"),
                "timestamp": _ms(raw.get("timestamp")),
            }
        ]
    if kind == "compaction":
        summary = {
            "role": "compactionSummary",
            "summary": raw.get("summary"),
            "tokensBefore": raw.get("tokensBefore"),
            "timestamp": _ms(raw.get("timestamp")),
        }
        system = raw.get("systemMessage")
        return [system, summary] if system else [summary]
    return []


def content_text(content: Any, separator: str = "\n") -> str:
    """Text blocks joined (Pi's contentText); a string is returned as is."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return separator.join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")


def bash_execution_text(message: JsonDict) -> str:
    """How a user-run shell command reaches the model (Pi's bashExecutionToText)."""
    text = f"Ran `{message.get('command', '')}`\n"
    output = message.get("output")
    text += f"```\n{output}\n```" if output else "(no output)"
    exit_code = message.get("exitCode")
    if message.get("cancelled"):
        text += "\n\n(command cancelled)"
    elif exit_code is not None and exit_code != 0:
        text += f"\n\nCommand exited with code {exit_code}"
    if message.get("truncated") and message.get("fullOutputPath"):
        text += f"\n\n[Output truncated. Full output: {message.get('fullOutputPath')}]"
    return text


def convert_to_llm(messages: Iterable[JsonDict]) -> list[JsonDict]:
    """Pi's convertToLlm: custom, bash and summary messages become user messages, as on the wire."""
    out: list[JsonDict] = []
    for m in messages:
        role = m.get("role")
        if role == "bashExecution":
            if m.get("excludeFromContext"):
                continue
            out.append({"role": "user", "content": [{"type": "text", "text": bash_execution_text(m)}]})
        elif role == "custom":
            content = m.get("content")
            out.append(
                {
                    "role": "user",
                    "content": [{"type": "text", "text": content}] if isinstance(content, str) else content,
                }
            )
        elif role == "branchSummary":
            text = BRANCH_SUMMARY_PREFIX + str(m.get("summary")) + BRANCH_SUMMARY_SUFFIX
            out.append({"role": "user", "content": [{"type": "text", "text": text}]})
        elif role == "compactionSummary":
            text = COMPACTION_SUMMARY_PREFIX + str(m.get("summary")) + COMPACTION_SUMMARY_SUFFIX
            out.append({"role": "user", "content": [{"type": "text", "text": text}]})
        elif role in ("system", "user", "assistant", "toolResult"):
            out.append(m)
    return out


def current_system_message(messages: list[JsonDict]) -> JsonDict | None:
    """Replay every system message into one (Pi's getCurrentSystemMessage)."""
    content: list[str] = []
    sections: dict[str, str] = {}
    tools: dict[Any, Any] = {}  # keyed by tool name, as a JavaScript Map would be (any key)
    timestamp: Any = None
    for message in messages:
        if message.get("role") != "system":
            continue
        if timestamp is None:
            timestamp = message.get("timestamp")
        text = content_text(message.get("content") or "")
        if text:
            content.append(text)
        patch = message.get("sections")
        if isinstance(patch, dict):
            for name, value in patch.items():
                if value is None:
                    sections.pop(name, None)
                else:
                    sections[name] = value
        for tool in message.get("toolsRemoved") or []:
            if isinstance(tool, dict):
                tools.pop(tool.get("name"), None)
        for tool in message.get("toolsAdded") or []:
            if isinstance(tool, dict):
                tools[tool.get("name")] = tool  # like Map.set: a redefinition keeps its place
    if timestamp is None and not tools:
        return None
    result: JsonDict = {"role": "system", "content": "\n\n".join(content)}
    if sections:
        result["sections"] = sections
    if tools:
        result["toolsAdded"] = list(tools.values())
    result["timestamp"] = timestamp if timestamp is not None else 0
    return result
