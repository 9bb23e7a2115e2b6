"""What ``--json`` means for a command line: one document, or JSON Lines. Apart from ``schema.py`` (whose
TypedDicts cost a few milliseconds to create) so that ``--json`` does not import them; ``schema`` re-exports these."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

# Commands whose --json output is JSON Lines (an error is then an ``error`` record, not a document): always
# (None), or only when the given flag is on the command line.
JSON_LINES: dict[str, str | None] = {"grep": None, "lint": "--all"}
JSON_LINES_COMMANDS = frozenset(JSON_LINES)


def json_mode_for(command: str | None, args: Sequence[str]) -> Literal["document", "lines"]:
    """Whether ``--json`` means JSON Lines or one document for this command line (``args``: all of its words)."""
    if command not in JSON_LINES:
        return "document"
    flag = JSON_LINES[command]
    end = list(args).index("--") if "--" in args else len(args)
    return "lines" if flag is None or flag in args[:end] else "document"


__all__ = ["JSON_LINES", "JSON_LINES_COMMANDS", "json_mode_for"]
