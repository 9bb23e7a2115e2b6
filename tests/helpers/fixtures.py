"""Where the test fixture files are, and facts about Pi's files that tests compare with."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PI_FIXTURES = FIXTURES / "pi"

# The keys of a compaction entry as Pi writes them, in its order.
PI_COMPACTION_KEYS = [
    "type",
    "id",
    "parentId",
    "timestamp",
    "summary",
    "firstKeptEntryId",
    "tokensBefore",
    "details",
    "usage",
    "fromHook",
]
