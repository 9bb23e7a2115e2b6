"""One session file, opened: every operation of picompact on it, behind one object.

::

    from pi_compact import open_session

    with open_session("session.jsonl", context_window=200_000) as session:
        check = session.check()                       # CheckResult: Pi's numbers, the cut, should_compact
        page = session.grep("ENOENT")                 # GrepPage of the raw branch (outputs, thinking included)
        entry = session.show(page.matches[0].entry_id)
        draft = session.compact("verbatim", dry_run=True)   # CompactResult; nothing written
        if check.should_compact:
            session.compact("verbatim")              # appends the checkpoint, as `picompact compact` does

The object reads the file once and keeps what it built (the loaded session, the analysis, the transcript the
searches run on) until the file changes: ``compact`` writes, so it drops them, and every method checks the file's
size and modification time first and reloads when another program wrote to it. ``close()`` (or leaving the
``with`` block) drops them too; the object can be used again after it. Every method is a thin call of the
library's own function (``check_session``, ``grep``, ``show_entry``, ``list_entries``, ``compact_session``,
``run_lookup``, ``measure_coverage``), so it agrees with the command line in every detail.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from pi_compact.errors import UsageError
from pi_compact.ops.check import CheckOptions, CheckResult, check_session
from pi_compact.ops.compact import CompactOptions, CompactResult, compact_session
from pi_compact.ops.coverage import CoverageResult, measure_coverage
from pi_compact.search.grep_results import GrepPage
from pi_compact.search.grepping import GrepQuery, grep
from pi_compact.search.listing import EntryPage, list_entries
from pi_compact.search.show import ShowPage, show_entry
from pi_compact.search.transcript import Transcript, build_transcript
from pi_compact.session.entries import Session
from pi_compact.session.load import load_session

if TYPE_CHECKING:
    from pi_compact.checkpoint.mode import CheckpointMode
    from pi_compact.lookup.agent import LookupOptions, LookupResult


class SessionFile:
    """A Pi session file and what picompact can do with it (see the module doc)."""

    def __init__(self, path: str | os.PathLike[str], options: CheckOptions | None = None) -> None:
        self.path = Path(path)
        self.options = options or CheckOptions()
        self._stamp: tuple[int, int] | None = None
        self._session: Session | None = None
        self._check: CheckResult | None = None
        self._transcripts: dict[tuple[str | None, bool], Transcript] = {}

    # -- the file and what was built from it ------------------------------------------------------------------

    def _fresh(self) -> None:
        """Drop what was built when the file changed on disk since it was read."""
        try:
            info = os.stat(self.path)
        except OSError:
            self.close()
            return
        stamp = (info.st_size, info.st_mtime_ns)
        if stamp != self._stamp:
            self.close()
            self._stamp = stamp

    @property
    def session(self) -> Session:
        """The loaded session (raises PiCompactError subclasses on fatal problems, as ``load_session``)."""
        self._fresh()
        if self._session is None:
            self._session = load_session(self.path, keep_bodies=True)
        return self._session

    def transcript(self, *, leaf_id: str | None = None, all_branches: bool = False) -> Transcript:
        """The rendered raw branch the searches run on (``leaf_id``: another branch; ``all_branches``: every
        entry of the file)."""
        key = (leaf_id, all_branches)
        session = self.session
        if key not in self._transcripts:
            self._transcripts[key] = build_transcript(session, leaf_id=leaf_id, all_branches=all_branches)
        return self._transcripts[key]

    def close(self) -> None:
        """Forget what was built (the object stays usable: the next call reads the file again)."""
        self._stamp = None
        self._session = None
        self._check = None
        self._transcripts.clear()

    def __enter__(self) -> SessionFile:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SessionFile({str(self.path)!r})"

    # -- operations -----------------------------------------------------------------------------------------------

    def check(self) -> CheckResult:
        """``picompact check``: context tokens, the threshold, Pi's cut and whether compaction is needed."""
        session = self.session
        if self._check is None:
            self._check = check_session(session, self.options)
        return self._check

    def grep(
        self,
        query: str | Sequence[str] | GrepQuery,
        *,
        max_count: int | None = None,
        cursor: str | None = None,
        leaf_id: str | None = None,
        all_branches: bool = False,
    ) -> GrepPage:
        """``picompact grep``: lines of the raw history matching ``query`` (a pattern, or a ``GrepQuery`` for
        grep's flags: ``GrepQuery.of("off by one", ignore_case=True)``), a page at a time (``cursor``)."""
        transcript = self.transcript(leaf_id=leaf_id or self.options.leaf_id, all_branches=all_branches)
        return grep(transcript, query, max_count=max_count, cursor=cursor)

    def show(self, entry_id: str, *, page: int | None = None, cursor: str | None = None) -> ShowPage:
        """``picompact show``: one entry in full (an id or a unique prefix of one), a page at a time."""
        return show_entry(self.transcript(all_branches=True), entry_id, page=page, cursor=cursor)

    def entries(
        self, *, roles: Iterable[str] | None = None, limit: int | None = None, cursor: str | None = None
    ) -> EntryPage:
        """``picompact list``: the entries of the branch with their ids, roles, times and previews."""
        return list_entries(self.transcript(leaf_id=self.options.leaf_id), roles=roles, limit=limit, cursor=cursor)

    def compact(
        self,
        mode: str | CheckpointMode = "verbatim",
        *,
        dry_run: bool = False,
        output: str | os.PathLike[str] | None = None,
        options: CompactOptions | None = None,
        **mode_options: Any,
    ) -> CompactResult:
        """``picompact compact``: build the checkpoint (``mode`` "verbatim" or "summary", with that mode's
        options, or a ``CheckpointMode``) and append it, or write a copy to ``output``, or with ``dry_run`` write
        nothing and return the mode's preview (a summary mode calls no model; ``build_compaction`` builds it in
        full). The file's settings flags are this object's ``CheckOptions``."""
        from pi_compact.checkpoint.mode import get_mode

        if isinstance(mode, str):
            chosen = get_mode(mode, **mode_options)
        elif mode_options:
            raise UsageError("mode options go with a mode name, not with a mode object")
        else:
            chosen = mode
        opts = options or CompactOptions()
        opts = replace(opts, check=self.options, dry_run=dry_run or opts.dry_run)
        if output is not None:
            opts = replace(opts, output=os.fspath(output))
        try:
            return compact_session(self.path, chosen, opts)
        finally:
            if not opts.dry_run:
                self.close()  # the file changed (or a copy was made): read it again next time

    def coverage(self, compaction_id: str | None = None) -> CoverageResult:
        """``picompact coverage``: what of the compacted history a compaction left readable, per kind."""
        return measure_coverage(self.session, compaction_id, leaf_id=self.options.leaf_id)

    def lookup(
        self,
        question: str,
        model: str | None = None,
        *,
        options: LookupOptions | None = None,
        base_url: str | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> LookupResult:
        """``picompact lookup``: a model searches the raw history and answers, citing entry ids. ``model``
        (``provider/id``) defaults as the command's does (``PICOMPACT_MODEL``, then the session's own model); its
        key is found as Pi finds it, in ``environ`` (default: this process's). This is the one method that sends
        anything over the network, to that model's provider."""
        from pi_compact.llm.choice import choose_model_and_key
        from pi_compact.lookup.agent import run_lookup, session_model

        transcript = self.transcript(leaf_id=self.options.leaf_id)
        env = os.environ if environ is None else environ
        ref, key = choose_model_and_key(session_model(transcript), model, env, base_url=base_url)
        return run_lookup(transcript, question, ref, api_key=key, options=options)


def open_session(path: str | os.PathLike[str], options: CheckOptions | None = None, **settings: Any) -> SessionFile:
    """Open a session file: ``settings`` are ``CheckOptions`` fields (``context_window``, ``reserve_tokens``,
    ``keep_recent_tokens``, ``model``, ``leaf_id`` …), given instead of or on top of ``options``."""
    base = options or CheckOptions()
    if settings:
        fields = {name: getattr(base, name) for name in CheckOptions.__slots__}
        unknown = sorted(set(settings) - set(fields))
        if unknown:
            raise UsageError(
                f"open_session: unknown setting {', '.join(unknown)} (CheckOptions fields: "
                f"{', '.join(CheckOptions.__slots__)})"
            )
        base = CheckOptions(**{**fields, **settings})
    return SessionFile(path, base)


__all__ = ["SessionFile", "open_session"]
