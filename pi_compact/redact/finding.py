"""A detected secret: its kind and its span in the text."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Finding:
    """One detected secret: its kind and its span in the text (``start`` to ``end``)."""

    kind: str
    start: int
    end: int
