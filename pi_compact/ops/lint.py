"""``lint``: every structural problem of a session file that Pi would silently work around or trip over.

The loader's diagnostics are taken as they are (by code, whatever codes the loader has), so ``lint`` and the
loader never disagree; on top of them ``lint`` checks what a load does not need to look at: parentId cycles and
dangling parents anywhere in the tree, entries no root reaches, tool calls and results that do not pair up,
compactions whose kept range is not on their branch, context edits without a target, impossible usage, entry
timestamps that go backwards, unknown entry types and roles (``lint_checks``). Pure data: a ``LintReport`` per
file (``lint_report``), each finding saying what Pi does about it (``lint_codes``).

``lint_paths`` lints many files in worker processes, a bounded number in flight, and yields the reports in the
order of the paths, so memory stays bounded however many files there are.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from pi_compact.errors import NotFoundError, PiCompactError, UsageError
from pi_compact.ops.lint_checks import lint_session
from pi_compact.ops.lint_report import SEVERITIES, Finding, LintReport, fatal_finding


def _report(path: str, findings: list[Finding], entries: int, readable: bool, cap: int | None) -> LintReport:
    counts = Counter(f.severity for f in findings)
    codes = Counter(f.code for f in findings)
    kept = findings if cap is None else findings[:cap]
    return LintReport(
        path=path,
        findings=tuple(kept),
        readable=readable,
        entries=entries,
        counts={sev: counts.get(sev, 0) for sev in SEVERITIES},
        codes=dict(sorted(codes.items())),
        omitted=len(findings) - len(kept),
    )


def lint_file(path: str | os.PathLike[str], leaf_id: str | None = None, max_findings: int | None = None) -> LintReport:
    """Lint one file. A file that cannot be read as a Pi session gives one error finding and ``readable`` False."""
    from pi_compact.session.load import HOLD_BYTES, load_session

    where = os.fspath(path)
    try:
        # Bodies are dropped as the lines are read, compaction or not: the checks read each one once (``lint_checks``)
        session = load_session(where, release_bytes=HOLD_BYTES)
    except PiCompactError as exc:
        return _report(where, [fatal_finding(exc)], 0, False, max_findings)
    if leaf_id is not None:
        from pi_compact.session.tree import resolve_entry

        resolve_entry(session, leaf_id)  # an unknown --leaf is a usage error, not a finding
    try:
        findings = lint_session(session, leaf_id)  # reads back the bodies dropped, one at a time
    except PiCompactError as exc:  # the file changed under the read
        return _report(where, [fatal_finding(exc)], 0, False, max_findings)
    return _report(where, findings, len(session.entries), True, max_findings)


def _lint_batch(paths: list[str], max_findings: int | None) -> list[LintReport]:
    return [lint_file(p, max_findings=max_findings) for p in paths]


def _worker_init() -> None:
    """Workers leave Ctrl-C to the parent, which stops them (no traceback from each worker)."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)


def iter_session_files(
    roots: Iterable[str | os.PathLike[str]], unreadable: Callable[[str, str], None] | None = None
) -> Iterator[Path]:
    """``*.jsonl`` files under each root (a root that is a file is itself), sorted, walked lazily. A directory that
    cannot be listed is passed to ``unreadable`` (its path and the reason), and the walk goes on."""

    def failed(exc: OSError) -> None:
        if unreadable is not None:
            from pi_compact.pi.sessions import os_reason

            unreadable(os.fspath(exc.filename) if exc.filename is not None else "?", os_reason(exc))

    for root in roots:
        top = Path(root)
        if top.is_file():
            yield top
            continue
        if not top.is_dir():
            raise NotFoundError("no such file or directory", path=str(top))
        for directory, dirs, files in os.walk(top, onerror=failed):
            dirs.sort()
            for name in sorted(files):
                if name.endswith(".jsonl"):
                    yield Path(directory) / name


def lint_paths(
    paths: Iterable[str | os.PathLike[str]],
    *,
    jobs: int | None = None,
    max_findings: int | None = 50,
    batch: int = 8,
) -> Iterator[LintReport]:
    """Lint many files, ``jobs`` worker processes at a time, yielding reports in the order of ``paths``.

    Files go to the workers in batches of ``batch`` (one round trip per batch, not per file), and at most four
    batches per worker are in flight: memory stays bounded by a few sessions per worker however many files there
    are. Each report keeps at most ``max_findings`` findings (its counts stay exact).
    """
    workers = jobs if jobs is not None else min(os.cpu_count() or 1, 8)
    if workers < 1:
        raise UsageError(f"--jobs must be at least 1 (got {workers})")
    iterator = iter(paths)
    if workers == 1:
        for p in iterator:
            yield lint_file(p, max_findings=max_findings)
        return
    from collections import deque
    from concurrent.futures import Future, ProcessPoolExecutor
    from itertools import islice

    limit = 4 * workers
    pool = ProcessPoolExecutor(max_workers=workers, initializer=_worker_init)
    try:
        in_flight: deque[Future[list[LintReport]]] = deque()
        while chunk := [os.fspath(p) for p in islice(iterator, batch)]:
            in_flight.append(pool.submit(_lint_batch, chunk, max_findings))
            if len(in_flight) >= limit:
                yield from in_flight.popleft().result()
        while in_flight:
            yield from in_flight.popleft().result()
    finally:
        # Stopped early (Ctrl-C, a closed pipe, an error): drop the batches not started yet.
        pool.shutdown(wait=True, cancel_futures=True)
