"""Rendering sessions as text: one entry as attributed lines (``entry``), and the scope search reads (``transcript``).

``serialize`` renders messages as Pi serialises them for its summary requests."""

from pi_compact.render.entry import SECTIONS, RenderedEntry, header_line, preview, render_entry
from pi_compact.render.transcript import Transcript, TranscriptLine, as_transcript, build_transcript

__all__ = [
    "SECTIONS",
    "RenderedEntry",
    "Transcript",
    "TranscriptLine",
    "as_transcript",
    "build_transcript",
    "header_line",
    "preview",
    "render_entry",
]
