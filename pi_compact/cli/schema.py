"""The JSON every command prints, declared in one place.

``Environment.emit`` stamps ``schema_version`` on each document; JSON Lines commands wrap each record as
``{"type", "version", "data"}``. The README's "JSON output" section documents the same keys (a test compares them).
"""

from __future__ import annotations

# Commands whose --json output is JSON Lines (an error is then an ``error`` record, not a document).
JSON_LINES_COMMANDS = frozenset({"grep"})
