"""One-line signatures for tool calls and other non-prose content of a checkpoint span.

A signature tells the model *that* something happened and how it ended, in a few dozen characters; the full
arguments stay in the session file. All rules here are display-only: raw arguments are never changed.
"""

from __future__ import annotations

import re
from typing import Any

from pi_compact.js import js_stringify

ARG_PREVIEW_CHARS = 160
ELLIPSIS = "…"
CALL_MARK = "▸ "
NESTED_MARK = "  ↳ "

# Tool names whose ``command`` argument is a shell command (cwd abbreviated to ``.``).
SHELL_ARGUMENTS = frozenset({"command", "cmd"})
# Characters that make a bare path ambiguous inside ``name(key=value, ...)``.
_UNSAFE_PATH = re.compile(r"[\s,()\"'=\x00-\x1f\x7f\x85\u2028\u2029]|^$")
_WINDOWS_ROOT = re.compile(r"^[A-Za-z]:[\\/]")


def json_cut(value: Any, limit: int = ARG_PREVIEW_CHARS) -> str:
    """The JSON encoding of ``value`` cut to ``limit`` characters plus one ``…`` when longer.

    The cut never ends inside a JSON escape (``\\n``, ``\\u00e9``), so the prefix stays readable.
    """
    encoded = js_stringify(value)
    if encoded is None:
        encoded = "null"
    return cut_encoded(encoded, limit)


def shorten(text: str, limit: int) -> str:
    """``text`` at most ``limit`` characters: cut, trailing spaces dropped, and one ``…`` when longer."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + ELLIPSIS


def cut_encoded(encoded: str, limit: int = ARG_PREVIEW_CHARS) -> str:
    """Cut an already JSON-encoded text at an escape boundary (see ``json_cut``)."""
    if len(encoded) <= limit:
        return encoded
    i = 0
    while i < len(encoded):
        step = 1
        if encoded[i] == "\\" and i + 1 < len(encoded):
            step = 6 if encoded[i + 1] == "u" else 2
        if i + step > limit:
            break
        i += step
    return encoded[:i] + ELLIPSIS


def is_windows_path(cwd: str) -> bool:
    """A drive-letter or UNC path: compared without case, with either separator."""
    return bool(_WINDOWS_ROOT.match(cwd)) or cwd.startswith("\\\\")


def _norm_cwd(cwd: str) -> str:
    """The cwd without trailing separators; empty when it is a filesystem root (nothing useful to shorten)."""
    stripped = cwd.rstrip("/\\")
    if not stripped or re.fullmatch(r"[A-Za-z]:", stripped):
        return ""
    return stripped


def relative_path(path: str, cwd: str) -> str:
    """``path`` relative to ``cwd`` when it lies under it (``/repo/src/a.ts`` → ``src/a.ts``, ``/repo`` → ``.``).

    Only a whole-component prefix counts: ``/repository/x`` stays as it is. Windows paths compare without case
    and accept either separator. Nothing is resolved on disk (``..`` and links are left alone).
    """
    base = _norm_cwd(cwd)
    if not base or not path:
        return path
    windows = is_windows_path(base)
    head, probe = (path[: len(base)], base) if not windows else (path[: len(base)].lower(), base.lower())
    if windows:
        head = head.replace("/", "\\")
        probe = probe.replace("/", "\\")
    if head != probe:
        return path
    rest = path[len(base) :]
    if not rest:
        return "."
    separators = "/\\" if windows else "/"
    if rest[0] not in separators:
        return path
    rest = rest.lstrip(separators)
    return rest or "."


def abbreviate_cwd(command: str, cwd: str) -> str:
    """Write the session cwd as ``.`` where it occurs at a path boundary in a shell command.

    ``cd /repo && ls /repo/src`` → ``cd . && ls ./src``; ``/repository`` and ``/home/repo`` are left alone.
    This is display notation, not a command to replay.
    """
    base = _norm_cwd(cwd)
    if not base or (base not in command and not is_windows_path(base)):
        return command
    windows = is_windows_path(base)
    body = re.escape(base)
    if windows:  # either separator, any case: C:\\repo, c:/repo
        body = "[\\\\/]".join(re.escape(part) for part in re.split(r"[\\/]", base))
    before = r"(?<![\w.\-/~\\])"
    after = r"(?=[/\\]|$|[^\w.\-])"
    return re.sub(before + body + after, ".", command, flags=re.IGNORECASE if windows else 0)


def display_path(path: str, cwd: str) -> str:
    """A path for a signature: relative to cwd, JSON-quoted only when a bare form would be ambiguous."""
    rel = relative_path(path, cwd)
    if _UNSAFE_PATH.search(rel):
        quoted = js_stringify(rel) or '""'
        return quoted.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029").replace("\x85", "\\u0085")
    return rel


def char_count(text: str) -> str:
    return f"<{len(text)} chars>"


def format_arguments(tool: str, arguments: Any, cwd: str) -> str:
    """``key=value, ...`` by the checkpoint rules (V7–V10); key order as recorded."""
    if not isinstance(arguments, dict):
        return "" if arguments is None else json_cut(arguments)
    parts: list[str] = []
    for key, value in arguments.items():
        if key == "path" and isinstance(value, str):
            shown = display_path(value, cwd)
        elif key == "content" and tool == "write" and isinstance(value, str):
            shown = char_count(value)
        elif key == "edits" and isinstance(value, list):
            shown = str(len(value))
        elif key in ("oldText", "newText") and isinstance(value, str):
            shown = char_count(value)
        elif key in SHELL_ARGUMENTS and isinstance(value, str):
            shown = json_cut(abbreviate_cwd(value, cwd))
        else:
            shown = json_cut(value)
        parts.append(f"{key}={shown}")
    return ", ".join(parts)


def tool_name(name: Any) -> str:
    """A tool name as shown: plain when it is an ordinary identifier, else abbreviated like an argument."""
    if isinstance(name, str) and re.fullmatch(r"[\w.:/-]{1,80}", name):
        return name
    return json_cut(name)


def tool_signature(name: Any, arguments: Any, outcome: str, cwd: str) -> str:
    """``name(key=value, ...) → outcome``."""
    label = tool_name(name)
    return f"{label}({format_arguments(label, arguments, cwd)}) → {outcome}"


NESTED_STATUS = {"ok": "ok", "error": "error"}


def nested_signatures(result: dict[str, Any] | None, cwd: str) -> list[str]:
    """Calls a tool made on its own (``nestedCalls``), one indented signature line each."""
    if not isinstance(result, dict):
        return []
    nested = result.get("nestedCalls")
    calls = nested.get("calls") if isinstance(nested, dict) else None
    if not isinstance(calls, list):
        return []
    lines: list[str] = []
    for call in calls:
        if not isinstance(call, dict):
            continue
        outcome = NESTED_STATUS.get(str(call.get("status")), "unknown")
        if "arguments" in call:
            lines.append(NESTED_MARK + tool_signature(call.get("name"), call.get("arguments"), outcome, cwd))
        else:
            size = call.get("argumentsBytes")
            args = f"<{size} bytes of arguments>" if isinstance(size, int) else ""
            lines.append(f"{NESTED_MARK}{tool_name(call.get('name'))}({args}) → {outcome}")
    if isinstance(nested, dict) and nested.get("complete") is False:
        lines.append(f"{NESTED_MARK}{ELLIPSIS} (list of nested calls incomplete)")
    return lines


def bash_signature(message: dict[str, Any], cwd: str) -> str:
    """A user-run shell command (bashExecution): the command like a tool argument, then how it exited."""
    command = message.get("command")
    shown = json_cut(abbreviate_cwd(command, cwd)) if isinstance(command, str) else json_cut(command)
    code = message.get("exitCode")
    if message.get("cancelled"):
        outcome = "cancelled"
    elif isinstance(code, int) and not isinstance(code, bool):
        outcome = f"exit {code}"
    else:
        outcome = "unknown"
    suffix = " (not sent to the model)" if message.get("excludeFromContext") else ""
    return f"{shown} → {outcome}{suffix}"
