"""The transcript: a scope of entries (one branch, or every entry) rendered on demand (``search.render``), plus
what search and pagination need of the file: positions, branch labels, the raw bytes, a fingerprint.

``build_transcript`` builds it once per session; list/grep/show (``search.pages``) take it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pi_compact.search.render import RenderedEntry, entry_label, render_entry
from pi_compact.session.entries import Entry, Session
from pi_compact.session.rawfile import FileBytes
from pi_compact.session.tree import Branch, get_branch

_RENDER_CACHE = 64  # rendered entries kept per transcript

# ---------------------------------------------------------------------------------------------------------------
# The transcript: a scope of entries (one branch, or every entry), rendered on demand


@dataclass(frozen=True, slots=True)
class TranscriptLine:
    """One line of the transcript with its authoritative attribution."""

    entry: Entry
    number: int  # 1-based line within the entry's rendering
    section: str
    text: str


@dataclass(eq=False)
class Transcript:
    """The entries to search (the branch root → leaf, or with ``all_branches`` every entry in file order),
    rendered lazily and cached, plus what pagination needs: positions, branch labels, a fingerprint.

    Build it once with ``build_transcript`` and pass it to every list/grep/show call on the same session.
    """

    session: Session
    branch: Branch
    entries: tuple[Entry, ...]
    all_branches: bool = False
    _positions: dict[int, int] | None = field(default=None, repr=False)  # built when first asked for
    _branch_ids: set[int] | None = field(default=None, repr=False)
    _branch_of: dict[int, str] | None = field(default=None, repr=False)
    _cache: dict[int, RenderedEntry] = field(default_factory=dict, repr=False)
    _raw: bytes | FileBytes | None = field(default=None, repr=False)
    _raw_loaded: bool = field(default=False, repr=False)
    _fingerprint: str | None = field(default=None, repr=False)
    _ids: dict[str, Entry] | None = field(default=None, repr=False)
    census: Any = field(default=None, repr=False)  # search.prefilter.Census of the raw bytes, once taken

    @property
    def _on_branch(self) -> set[int]:
        if self._branch_ids is None:
            self._branch_ids = {id(e) for e in self.branch.entries}
        return self._branch_ids

    @property
    def leaf(self) -> Entry | None:
        return self.branch.leaf

    def __len__(self) -> int:
        return len(self.entries)

    def position(self, entry: Entry) -> int:
        """Position of an entry in the scope, or -1."""
        if self._positions is None:
            self._positions = {id(e): i for i, e in enumerate(self.entries)}
        return self._positions.get(id(entry), -1)

    def on_branch(self, entry: Entry) -> bool:
        return id(entry) in self._on_branch

    def branch_leaf(self, entry: Entry) -> str | None:
        """The leaf id of the branch an entry belongs to: the current leaf for the current branch, else the
        latest leaf (in file order) below it."""
        if self.on_branch(entry):
            return entry_label(self.leaf) if self.leaf is not None else None
        if self._branch_of is None:
            self._branch_of = self._label_branches()
        return self._branch_of.get(id(entry))

    def _label_branches(self) -> dict[int, str]:
        from pi_compact.session.tree import leaves

        labels: dict[int, str] = {}
        by_id = self.session.by_id
        for tip in reversed(leaves(self.session)):
            current: Entry | None = tip
            while current is not None and id(current) not in labels and id(current) not in self._on_branch:
                labels[id(current)] = entry_label(tip)
                parent = current.parent_id
                current = by_id.get(parent) if parent is not None else None
        return labels

    def find(self, entry_id: str) -> Entry | None:
        """The entry with this id in the scope; a unique prefix of at least 4 characters also works."""
        if self._ids is None:
            self._ids = {entry_label(e): e for e in self.entries}
        found = self._ids.get(entry_id)
        if found is not None or len(entry_id) < 4:
            return found
        hits = [e for key, e in self._ids.items() if key.startswith(entry_id)]
        return hits[0] if len(hits) == 1 else None

    def render(self, entry: Entry) -> RenderedEntry:
        key = id(entry)
        cached = self._cache.get(key)
        if cached is not None:
            return cached
        rendered = render_entry(entry)
        if len(self._cache) >= _RENDER_CACHE:
            self._cache.pop(next(iter(self._cache)))
        self._cache[key] = rendered
        return rendered

    def lines(self, start: int = 0) -> Iterator[TranscriptLine]:
        """Every line of the transcript from scope position ``start``, each with its entry and section."""
        for entry in self.entries[start:]:
            rendered = self.render(entry)
            for number, (text, section) in enumerate(zip(rendered.lines, rendered.sections, strict=True), 1):
                yield TranscriptLine(entry, number, section, text)

    # -- raw bytes -------------------------------------------------------------------------------------------

    def raw_bytes(self) -> bytes | FileBytes | None:
        """The session file's bytes, if they are still the ones that were loaded (same size and tail).

        A file is read a window at a time (``FileBytes``), not copied into memory next to the parsed session."""
        if not self._raw_loaded:
            self._raw_loaded = True
            self._raw = self._read_raw()
        return self._raw

    def _read_raw(self) -> FileBytes | None:
        path = self.session.path
        if path is None:
            return None
        size, tail = self.session.size, self.session.tail
        try:
            if Path(path).stat().st_size != size:
                return None
            data = FileBytes(path, size)
            if tail and data.read(size - len(tail), size) != tail:
                return None
        except OSError:
            return None
        return data

    def attach_raw(self, data: bytes) -> None:
        """Supply the bytes a session was loaded from (``load_session_bytes``), for fast search and ``--raw``."""
        if len(data) == self.session.size:
            self._raw, self._raw_loaded = data, True

    def entry_bytes(self, entry: Entry) -> bytes | None:
        """The entry's line exactly as in the file, without its newline."""
        data = self.raw_bytes()
        if data is None:
            return None
        try:
            return data[entry.offset : entry.offset + entry.length]
        except OSError:
            return None

    # -- identity --------------------------------------------------------------------------------------------

    def fingerprint(self) -> str:
        """Changes whenever the file or the scope changes: its size and last bytes, and the id, line and byte
        length of every entry in scope. Content only (no mtime or path), so the same file gives the same cursors."""
        if self._fingerprint is None:
            digest = hashlib.blake2b(digest_size=12)
            digest.update(f"{self.session.size}\0{self.session.session_id}\0{int(self.all_branches)}\0".encode())
            digest.update(self.session.tail)
            parts = "\0".join(f"{entry_label(e)}\0{e.line}\0{e.length}" for e in self.entries)
            digest.update(parts.encode("utf-8", "surrogatepass"))
            self._fingerprint = digest.hexdigest()
        return self._fingerprint


def build_transcript(session: Session, *, leaf_id: str | None = None, all_branches: bool = False) -> Transcript:
    """The transcript for a session: the branch to ``leaf_id`` (default: Pi's leaf), or every entry."""
    branch = get_branch(session, leaf_id)
    if all_branches:
        scope = tuple(e for e in session.entries if not isinstance(e.id, str) or session.by_id.get(e.id) is e)
    else:
        scope = tuple(branch.entries)
    return Transcript(session, branch, scope, all_branches)


def as_transcript(source: Transcript | Branch | Session) -> Transcript:
    """Accept what a caller has at hand: a Transcript, a Branch (its session and leaf) or a Session."""
    if isinstance(source, Transcript):
        return source
    if isinstance(source, Branch):
        return Transcript(source.session, source, tuple(source.entries))
    return build_transcript(source)
