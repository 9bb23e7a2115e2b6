"""Compaction checkpoints: the verbatim checkpoint (no model) and the entries a compaction appends."""

from pi_compact.checkpoint.verbatim import (
    REORIENTATION_CUSTOM_TYPE,
    Checkpoint,
    VerbatimOptions,
    build_verbatim_checkpoint,
    is_verbatim_details,
    saved_spans,
    stale_reminder_ids,
)

__all__ = [
    "REORIENTATION_CUSTOM_TYPE",
    "Checkpoint",
    "VerbatimOptions",
    "build_verbatim_checkpoint",
    "is_verbatim_details",
    "saved_spans",
    "stale_reminder_ids",
]
