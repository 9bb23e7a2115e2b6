"""What a picompact verbatim checkpoint records in its compaction's ``details``, read without the builder.

``check --json`` reports the cumulative file lists (Pi's plus the previous picompact checkpoint's); reading them
needs only these few names, not the verbatim builder (``verbatim.py`` imports the cap, the spans and the envelope),
so they live here and ``verbatim`` re-exports them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pi_compact.pi.plan import CompactionPlan

FORMAT = "verbatim"
FORMAT_VERSION = 1
DETAILS_KEY = "picompact"


def is_verbatim_details(details: Any) -> bool:
    """Whether a compaction's ``details`` was written by this module (any version)."""
    if not isinstance(details, dict):
        return False
    mine = details.get(DETAILS_KEY)
    return isinstance(mine, dict) and mine.get("format") == FORMAT


def _string_list(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def cumulative_files(plan: CompactionPlan) -> tuple[list[str], list[str]]:
    """Pi's lists for this compaction plus the previous picompact checkpoint's, combined by Pi's rule
    (modified = written ∪ edited; read = read − modified). Pi itself skips lists of ``fromHook`` compactions."""
    read = set(plan.read_files)
    modified = set(plan.modified_files)
    previous = plan.previous_compaction
    if previous is not None and is_verbatim_details(previous.raw.get("details")):
        details = previous.raw["details"]
        read.update(_string_list(details.get("readFiles")))
        modified.update(_string_list(details.get("modifiedFiles")))
    return sorted(read - modified), sorted(modified)


__all__ = ["DETAILS_KEY", "FORMAT", "FORMAT_VERSION", "cumulative_files", "is_verbatim_details"]
