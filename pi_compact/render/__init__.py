"""Rendering sessions as text: the lookup transcript (``transcript``)."""

from pi_compact.render.transcript import (
    SECTIONS,
    RenderedEntry,
    Transcript,
    TranscriptLine,
    as_transcript,
    build_transcript,
    header_line,
    preview,
    render_entry,
)

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
