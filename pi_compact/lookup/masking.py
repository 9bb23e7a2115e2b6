"""The pages lookup sends, masked before they are cut.

grep shows a window of a long line, show_entry a page of an entry, list_entries a short preview: each is a cut of
the entry's rendering, and a cut through a key leaves pieces that no rule recognises. So the whole rendering of an
entry is masked first (``pi_compact.redact``: the lines joined, so a key over two lines or a PEM block is one
secret), with the same lines as before (a secret over several lines is its placeholder on the first, the rest of
those lines gone); windows, pages and previews are then cut from the masked lines.

Matching is unchanged: grep still decides which lines match on the rendering, and cursors keep their positions;
only what is shown of a line is taken from the masked one (a window around the same match, now in the masked
line; a page from where the page starts in it, a placeholder never split between two pages).
"""

from __future__ import annotations

import dataclasses
from bisect import bisect_right

from pi_compact.redact import Masked, Redactor
from pi_compact.search.grep_results import GrepLine, GrepMatch, GrepPage
from pi_compact.search.grepping import line_window
from pi_compact.search.listing import EntryPage
from pi_compact.search.render import preview
from pi_compact.search.show import ShowLine, ShowPage
from pi_compact.search.transcript import Transcript
from pi_compact.session.entries import Entry

_CACHE = 64  # masked entries kept
_PREVIEW_MARGIN = 2_000  # characters read past a preview's width, so a key it cuts is masked whole


class _MaskedLines:
    """One entry's rendered lines, masked as one text, as lines again (as many as before)."""

    def __init__(self, lines: tuple[str, ...], redactor: Redactor) -> None:
        self.starts: list[int] = []
        at = 0
        for line in lines:
            self.starts.append(at)
            at += len(line) + 1
        self.lengths = [len(line) for line in lines]
        self.masked: Masked = redactor.mask("\n".join(lines))

    def position(self, index: int, offset: int, *, inside: str = "end") -> int:
        """Where ``offset`` of line ``index`` is in the masked line."""
        base = self.starts[index]
        return self.masked.position(base + offset, inside=inside) - self.masked.position(base)

    def line(self, index: int) -> str:
        base = self.starts[index]
        return self.masked.text[self.masked.position(base) : self.masked.position(base + self.lengths[index])]


class PageMasker:
    """Masks the pages of one lookup with one redactor (one placeholder per secret for the whole run)."""

    def __init__(self, transcript: Transcript, redactor: Redactor) -> None:
        self.transcript = transcript
        self.redactor = redactor
        self._cache: dict[int, _MaskedLines] = {}

    def _entry(self, entry_id: str) -> _MaskedLines | None:
        entry = self.transcript.find(entry_id)
        if entry is None:
            return None
        cached = self._cache.get(id(entry))
        if cached is None:
            cached = _MaskedLines(self.transcript.render(entry).lines, self.redactor)
            if len(self._cache) >= _CACHE:
                self._cache.pop(next(iter(self._cache)))
            self._cache[id(entry)] = cached
        return cached

    def grep(self, page: GrepPage, width: int) -> GrepPage:
        return dataclasses.replace(page, matches=tuple(self._match(match, width) for match in page.matches))

    def _match(self, match: GrepMatch, width: int) -> GrepMatch:
        lines = self._entry(match.entry_id)
        if lines is None or not lines.masked.spans:
            return match

        def window(line: GrepLine, matched: bool) -> GrepLine:
            index = line.number - 1
            spans = [
                (
                    lines.position(index, line.offset + start, inside="start"),
                    lines.position(index, line.offset + end),
                )
                for start, end in line.submatches
            ]
            return line_window(lines.line(index), line.number, line.section, width, spans if matched else None)

        return dataclasses.replace(
            match,
            line=window(match.line, True),
            before=tuple(window(line, False) for line in match.before),
            after=tuple(window(line, False) for line in match.after),
        )

    def show(self, page: ShowPage) -> ShowPage:
        lines = self._entry(page.entry.id)
        if lines is None or not lines.masked.spans:
            return page
        out = []
        for line in page.lines:
            index = line.number - 1
            masked = lines.line(index)
            start = lines.position(index, line.offset)
            end = lines.position(index, line.offset + len(line.text))
            out.append(ShowLine(line.number, line.section, masked[start:end], start, len(masked)))
        return dataclasses.replace(page, lines=tuple(out))

    def list(self, page: EntryPage, width: int) -> EntryPage:
        infos = []
        for info in page.entries:
            entry = self.transcript.find(info.id)
            if entry is not None:
                info = dataclasses.replace(info, preview=self.preview(entry, width, info.preview))
            infos.append(info)
        return dataclasses.replace(page, entries=tuple(infos))

    def preview(self, entry: Entry, width: int, shown: str) -> str:
        """The entry's preview cut from its masked first line (``shown`` when nothing in it is masked)."""
        long = preview(entry, width + _PREVIEW_MARGIN)
        masked = self.redactor.mask(long)
        if not masked.spans:
            return shown
        # The placeholders the cut keeps (a placeholder it would split is dropped whole).
        text = masked.text
        if len(text) <= width:
            return text
        cut = width - 1
        k = bisect_right([m[2] for m in masked.spans], cut) - 1
        if k >= 0 and masked.spans[k][3] > cut:
            cut = masked.spans[k][2]
        return text[:cut] + "…"

    def text(self, text: str) -> str:
        return self.redactor.redact(text)
