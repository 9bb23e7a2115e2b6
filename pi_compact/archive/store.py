"""The cross-session index: one SQLite database (FTS5) in the user's cache, brought up to date on every search.

What it holds is ``archive.schema``'s; what it keeps of an entry, ``archive.document``'s; bringing it up to date
(a ``stat`` per unchanged file, only the new bytes of a session Pi appended to) is ``archive.indexer``'s, reading
the files ``archive.reading``'s, and what it has indexed and a search covers ``archive.scope``'s. Here: the
database file, opened, trusted or built again.

The database is never trusted for what it claims to be: it must be a regular file owned by the user in the
0700 cache directory (``session.index``'s rules), made mode 0600 (it holds session text); its application id and
format version must be this picompact's; a database that is corrupt, foreign or of another format is deleted and
built again, with a warning. WAL mode and a busy timeout let two searches and a writer run at once (every write
short, ``archive.indexer``).
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import stat
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import Any, TypedDict

from pi_compact.archive.indexer import Progress, update_index
from pi_compact.archive.schema import FORMAT, TOKENIZER, check_schema, create_schema
from pi_compact.archive.scope import Scope
from pi_compact.errors import ExternalError

DB_NAME = "sessions.sqlite3"
BUSY_TIMEOUT_SECONDS = 30.0
PAGE_SIZE = 16384
SECURE_DELETE = True  # freed pages zeroed (bench/secure_delete.py measures it off too)
WAL_CHECKPOINT_PAGES = 2_500  # about 40 MB of log between checkpoints (each one syncs): fewer waits when building
_CORRUPT_CODES = frozenset({11, 26})  # SQLITE_CORRUPT, SQLITE_NOTADB


class CorruptIndexError(ExternalError):
    """The database turned out to be corrupt while in use (``Store.run`` builds it again and retries once)."""


class IndexUnavailable(ExternalError):
    """The index cannot be kept where it lives: a directory (or another file that is not picompact's and cannot be
    removed) at its path, or a full disk under it. ``open_store`` and ``Store.update`` then search with a temporary
    index instead (what ``--no-index`` does), with a warning; raised only when that one cannot be written either."""


_FULL_CODES = frozenset({13, 10})  # SQLITE_FULL, SQLITE_IOERR (a write the disk refused)


def _is_full(exc: BaseException) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(code, int) and (code & 0xFF) in _FULL_CODES


def _is_corrupt(exc: BaseException) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if isinstance(code, int) and (code & 0xFF) in _CORRUPT_CODES:
        return True
    text = str(exc)
    return "malformed" in text or "not a database" in text or "fts5: corrupt" in text


def _is_busy(exc: BaseException) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    return isinstance(code, int) and (code & 0xFF) in (5, 6)  # SQLITE_BUSY, SQLITE_LOCKED


def _cache_directory() -> Path:
    """The cache directory, made (0700) and checked as ``session.cachedir`` does; ExternalError when unusable."""
    from pi_compact.session import cachedir

    try:
        fd = cachedir.open_cache(create=True)
    except (OSError, RuntimeError) as exc:
        raise ExternalError(f"cannot make the cache directory for the search index: {exc}") from None
    if fd is None:
        raise ExternalError(
            f"{cachedir.cache_dir()}: not a directory owned by you: the search index cannot be kept there "
            "(use --no-index)"
        )
    os.close(fd)
    return cachedir.cache_dir()


def database_path() -> Path:
    """Where the index lives: ``$XDG_CACHE_HOME/picompact/sessions.sqlite3`` (or ``~/.cache/picompact/``)."""
    from pi_compact.session import cachedir

    return cachedir.cache_dir() / DB_NAME


def _remove_database(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError, IsADirectoryError):  # a directory is not picompact's to remove
            os.unlink(f"{path}{suffix}")


def _prepare_file(path: Path, warnings: list[str]) -> None:
    """Make sure ``path`` is a regular file owned by the user, mode 0600 (made so when missing)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise IndexUnavailable(f"{path} is a directory, not the search index (left alone)")
    try:
        if st is not None and (not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid()):
            warnings.append(f"{path}: not a regular file of yours: the search index is built again in its place")
            _remove_database(path)
            st = None
        if st is None:
            with contextlib.suppress(FileExistsError):
                os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600))
        elif stat.S_IMODE(st.st_mode) != 0o600:
            os.chmod(path, 0o600)
    except OSError as exc:
        raise IndexUnavailable(f"{path}: cannot keep the search index there ({exc.strerror or exc})") from None


def _connect(target: str) -> sqlite3.Connection:
    conn = sqlite3.connect(target, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None, check_same_thread=False)
    # A database made now has pages of 16 KiB (an existing one keeps its own): an entry's text seldom spills over
    # a chain of pages, and FTS5 writes fewer; the build costs SQLite a fifth less CPU (``bench/RESULTS.md``).
    conn.execute(f"pragma page_size = {PAGE_SIZE}")
    conn.execute("pragma cache_size = -16000")
    # Pages freed by a delete are zeroed, not left holding a deleted session's text (bench/RESULTS.md: the cost).
    conn.execute(f"pragma secure_delete = {'on' if SECURE_DELETE else 'off'}")
    return conn


class StoreStatsJSON(TypedDict):
    """``Store.stats()``: the ``search --stats --json`` document (``path`` None for a ``temporary_store``)."""

    path: str | None
    format: int
    tokenizer: str
    sessions: int
    other_files: int
    entries: int
    indexed_bytes: int
    database_bytes: int


class Store:
    """An open index: the persistent one (``open_store``), or a private temporary one (``temporary_store``, what
    ``--no-index`` searches: the same documents, built from nothing every time)."""

    def __init__(self, conn: sqlite3.Connection, path: Path | None, warnings: list[str]) -> None:
        self.conn = conn
        self.path = path
        self.warnings = warnings
        # The files of the last ``update``: a database found corrupt later (by a query) is built again from them
        self.files: list[tuple[str, os.stat_result]] | None = None
        # The scope of that new index once built again (the file ids of the one before it mean nothing there)
        self.rebuilt_scope: Scope | None = None

    # ------------------------------------------------------------------------------------------- life cycle

    def __enter__(self) -> Store:
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            self.conn.close()

    def rebuild(self, reason: str) -> None:
        """Delete the database and make an empty one (a corrupt, foreign or outdated file), with a warning."""
        self.close()
        if self.path is None:
            self.warnings.append(f"the temporary search index: {reason}: it is built again")
            self.conn = _connect("")
            create_schema(self.conn)
            return
        self.warnings.append(f"{self.path}: {reason}: the search index is built again")
        _remove_database(self.path)
        _prepare_file(self.path, self.warnings)
        self.conn = _open_connection(self.path)
        problem = check_schema(self.conn)
        if problem is not None:
            raise ExternalError(f"{self.path}: {problem}, even after it was made again")

    def fall_back(self, reason: str) -> None:
        """Go on with a temporary index of its own (``--no-index``'s), with a warning saying why."""
        self.close()
        self.warnings.append(f"{reason}: searching the session files without it (as --no-index does)")
        self.path = None
        self.conn = _connect("")
        create_schema(self.conn)

    def run(self, action: Callable[[], Any]) -> Any:
        """``action()``, once more after building the index again if the database turned out corrupt: made anew
        and, when an ``update`` had brought it up to date, indexed again from the same files (a query that finds
        the corruption is answered from the sessions, never from an empty index: ``rebuilt_scope``)."""
        try:
            return action()
        except CorruptIndexError as exc:
            self.rebuild(f"the database is corrupt ({exc.message})")
            if self.files is not None:
                self.rebuilt_scope = self._update(self.files, None)
                self.warnings[-1] += " from the session files, and the search run again"
            return action()

    @contextlib.contextmanager
    def sql(self) -> Iterator[sqlite3.Connection]:
        """The connection; SQLite's errors as picompact's (corrupt: CorruptIndexError; busy: ExternalError)."""
        try:
            yield self.conn
        except sqlite3.DatabaseError as exc:
            with contextlib.suppress(sqlite3.Error):
                if self.conn.in_transaction:
                    self.conn.execute("rollback")
            if _is_corrupt(exc):
                raise CorruptIndexError(str(exc)) from None
            if _is_full(exc):
                if self.path is None:
                    raise IndexUnavailable(f"no room for a temporary search index ({exc}); free some space") from None
                raise IndexUnavailable(f"{self.path}: cannot write the search index ({exc})") from None
            if _is_busy(exc):
                raise ExternalError(
                    f"the search index is busy (another picompact held it for {BUSY_TIMEOUT_SECONDS:.0f} s); "
                    "try again, or use --no-index"
                ) from None
            raise

    # ------------------------------------------------------------------------------------------- updating

    def update(self, files: list[tuple[str, os.stat_result]], progress: Progress | None = None) -> Scope:
        """Bring the index up to date with ``files`` (path, stat) and return them as a search scope; on a full disk
        under the index, with a temporary one instead (``fall_back``)."""
        self.files = files
        try:
            return self._update(files, progress)
        except IndexUnavailable as exc:
            if self.path is None:
                raise
            self.fall_back(exc.message)
            return self._update(files, progress)

    def _update(self, files: list[tuple[str, os.stat_result]], progress: Progress | None) -> Scope:
        checkpoints = _Checkpoints(self.conn, self.path) if self.path is not None else None
        try:
            with self.sql() as conn:
                return update_index(conn, files, progress, checkpoints.committed if checkpoints else None)
        finally:
            if checkpoints is not None:
                checkpoints.close()

    # ------------------------------------------------------------------------------------------- figures

    def stats(self) -> StoreStatsJSON:
        with self.sql() as conn:
            counts = dict(conn.execute("select status, count(*) from files group by status").fetchall())
            entries = conn.execute("select count(*) from entries").fetchone()[0]
            indexed = conn.execute("select coalesce(sum(indexed_to), 0) from files").fetchone()[0]
        size = 0
        if self.path is not None:
            for suffix in ("", "-wal"):
                with contextlib.suppress(OSError):
                    size += os.stat(f"{self.path}{suffix}").st_size
        return {
            "path": str(self.path) if self.path is not None else None,
            "format": FORMAT,
            "tokenizer": TOKENIZER,
            "sessions": counts.get("session", 0) + counts.get("legacy", 0),
            "other_files": sum(v for k, v in counts.items() if k not in ("session", "legacy")),
            "entries": entries,
            "indexed_bytes": indexed,
            "database_bytes": size,
        }


class _Checkpoints:
    """While an update writes, the log is copied into the database (a passive checkpoint, which never waits for a
    reader or the writer, nor holds one up) from a connection and a thread of their own, woken at each commit;
    the writer checkpoints only past four times its usual log. It then spends its time on the index alone: a
    build costs its thread about a twentieth less (``bench/RESULTS.md``)."""

    def __init__(self, conn: sqlite3.Connection, path: Path) -> None:
        self.conn = conn
        self.path = path
        self.wake = threading.Event()
        self.done = False
        self.thread: threading.Thread | None = None

    def committed(self) -> None:
        if self.thread is None:
            self.conn.execute(f"pragma wal_autocheckpoint = {4 * WAL_CHECKPOINT_PAGES}")
            self.thread = threading.Thread(target=self._run, name="picompact-index-checkpoint", daemon=True)
            self.thread.start()
        self.wake.set()

    def _run(self) -> None:
        try:
            conn = sqlite3.connect(str(self.path), timeout=0, isolation_level=None, check_same_thread=False)
        except sqlite3.Error:
            return
        try:
            while True:
                self.wake.wait()
                self.wake.clear()
                if self.done:
                    return
                with contextlib.suppress(sqlite3.Error):
                    conn.execute("pragma wal_checkpoint(passive)").fetchall()
        finally:
            conn.close()

    def close(self) -> None:
        if self.thread is None:
            return
        self.done = True
        self.wake.set()
        self.thread.join()
        with contextlib.suppress(sqlite3.Error):
            self.conn.execute(f"pragma wal_autocheckpoint = {WAL_CHECKPOINT_PAGES}")


def _open_connection(path: Path) -> sqlite3.Connection:
    conn = _connect(str(path))
    conn.execute("pragma journal_mode = wal")
    conn.execute("pragma synchronous = normal")  # a cache: a crash loses the last commits at worst, never the file
    conn.execute(f"pragma wal_autocheckpoint = {WAL_CHECKPOINT_PAGES}")
    return conn


def open_store() -> Store:
    """The user's index, opened (made when missing; built again, with a warning, when it cannot be trusted)."""
    warnings: list[str] = []
    path = _cache_directory() / DB_NAME
    store = Store(sqlite3.connect(":memory:"), path, warnings)
    try:
        _prepare_file(path, warnings)
    except IndexUnavailable as exc:
        store.fall_back(exc.message)
        return store
    try:
        store.conn = _open_connection(path)
        problem = check_schema(store.conn)
    except sqlite3.DatabaseError as exc:
        if _is_busy(exc):
            store.close()
            raise ExternalError("the search index is busy; try again, or use --no-index") from None
        if _is_full(exc):  # a full disk says nothing of the database: kept as it is
            store.fall_back(f"{path}: cannot open the search index ({exc})")
            return store
        problem = f"the database is corrupt ({exc})"
    if problem is not None:
        store.rebuild(problem)
    return store


def reset_store() -> Store:
    """The user's index deleted and made again, empty (``--reindex``)."""
    path = _cache_directory() / DB_NAME
    _remove_database(path)
    return open_store()


def temporary_store() -> Store:
    """A private index of its own in a temporary file SQLite deletes on closing (what ``--no-index`` searches)."""
    conn = _connect("")
    create_schema(conn)
    return Store(conn, None, [])
