"""What the cross-session index has indexed, file by file: the ``files`` row of each session file (its identity,
how far it was read, the CRC-32 of that prefix, what it is), the sessions gone since the last search dropped, and
the scope a search covers (the sessions found this time that the index holds)."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import sys
from typing import Any, NamedTuple


class ScopeFile(NamedTuple):
    """A session file a search covers, as the index knows it."""

    id: int
    path: str
    session_id: str | None
    cwd: str | None
    leaf: str | None


class Scope:
    """The sessions a search covers (by file id), and the files left out (path, reason); ``complete`` when they
    are every session the index holds (a search need not narrow to them)."""

    __slots__ = ("complete", "dropped", "files", "indexed_bytes", "indexed_files", "skipped")

    def __init__(self) -> None:
        self.files: dict[int, ScopeFile] = {}
        self.skipped: list[tuple[str, str]] = []
        self.indexed_bytes = 0  # bytes read this time
        self.indexed_files = 0  # files that needed reading
        self.dropped = 0  # sessions gone since the last search
        self.complete = False


_STATE_FIELDS = ("file_id", "indexed_to", "crc", "lines", "entries", "status", "session_id", "cwd", "leaf", "no_leaf")


class FileState:
    """A session file's ``files`` row, as reading the file advances it."""

    __slots__ = _STATE_FIELDS

    def __init__(
        self,
        file_id: int,
        indexed_to: int = 0,
        crc: int = 0,
        lines: int = 0,
        entries: int = 0,
        status: str = "pending",
        session_id: str | None = None,
        cwd: str | None = None,
        leaf: str | None = None,
        no_leaf: int = 0,
    ) -> None:
        self.file_id = file_id
        self.indexed_to = indexed_to
        self.crc = crc
        self.lines = lines
        self.entries = entries
        self.status = status
        self.session_id = session_id
        self.cwd = cwd
        self.leaf = leaf
        self.no_leaf = no_leaf

    def copy(self, **changes: Any) -> FileState:
        """A copy, with ``changes``."""
        state = FileState(*(getattr(self, name) for name in _STATE_FIELDS))
        for name, value in changes.items():
            setattr(state, name, value)
        return state

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, FileState):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in _STATE_FIELDS)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return "FileState(" + ", ".join(f"{name}={getattr(self, name)!r}" for name in _STATE_FIELDS) + ")"

    def save(self, conn: sqlite3.Connection, st: os.stat_result | None) -> None:
        """Write the row; ``st`` recorded only when everything up to the end of the file was read."""
        ident = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns) if st else (None,) * 5
        conn.execute(
            "update files set dev = ?, ino = ?, size = ?, mtime_ns = ?, ctime_ns = ?, indexed_to = ?, crc = ?, "
            "lines = ?, entries = ?, status = ?, session_id = ?, cwd = ?, leaf = ?, no_leaf = ? where id = ?",
            (
                *ident,
                self.indexed_to,
                self.crc,
                self.lines,
                self.entries,
                self.status,
                self.session_id,
                self.cwd,
                self.leaf,
                self.no_leaf,
                self.file_id,
            ),
        )


def unchanged(recorded: tuple[Any, ...], st: os.stat_result) -> bool:
    return recorded == (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def delete_file_rows(conn: sqlite3.Connection, file_id: int) -> int:
    """Delete what the index holds of a file's entries; the number of entries deleted."""
    conn.execute("delete from body where rowid in (select id from entries where file = ?)", (file_id,))
    return conn.execute("delete from entries where file = ?", (file_id,)).rowcount


def purge_deleted(conn: sqlite3.Connection) -> None:
    """Leave nothing of deleted entries in the database file: the FTS5 index merged into one segment without them
    (FTS5 only marks a deleted document until its segments merge, so its words stay in the file until then); the
    pages freed are zeroed (the connection's ``secure_delete``). Costs about as much as writing the index again
    (bench/RESULTS.md), so it runs only after an update that deleted something."""
    conn.execute("begin immediate")
    try:
        conn.execute("insert into body(body) values ('optimize')")
        conn.execute("commit")
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("rollback")
        raise


def drop_missing(conn: sqlite3.Connection, paths: list[str]) -> int:
    """Delete the sessions among ``paths`` whose file is gone; the count dropped."""
    gone = []
    for path in paths:
        try:
            os.stat(path)
        except (FileNotFoundError, NotADirectoryError):
            gone.append(path)
        except OSError:
            continue
    for path in gone:
        conn.execute("begin immediate")
        row = conn.execute("select id from files where path = ?", (os.fsencode(path),)).fetchone()
        if row is not None:
            delete_file_rows(conn, row[0])
            conn.execute("delete from files where id = ?", (row[0],))
        conn.execute("commit")
    return len(gone)


def decoder() -> Any:
    """``os.fsdecode`` for the ``path`` column's bytes, without its checks at every row."""
    encoding, errors = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()
    return lambda raw: raw.decode(encoding, errors)


SESSION_STATUSES = ("session", "legacy")
NO_HEADER = "not a Pi session: its first line is no session header"  # a skipped file's reason
FILE_COLUMNS = "path, id, status, session_id, cwd, leaf, no_leaf"  # what ``cover`` reads of a row


def cover(conn: sqlite3.Connection, scope: Scope, found: set[str], rows: list[tuple[str, Any]] | None = None) -> None:
    """Add to ``scope`` the sessions among ``found`` the index holds (not those ``scope`` skipped), and to its
    skipped files those that are not sessions (``NO_HEADER``): from ``rows`` when given, (decoded path, the
    ``FILE_COLUMNS`` of its row) as just read, else read now."""
    skipped = {p for p, _ in scope.skipped}
    if rows is None:
        decode = decoder()
        rows = [(decode(row[0]), row) for row in conn.execute(f"select {FILE_COLUMNS} from files")]
    sessions = 0
    files = scope.files
    for path, row in rows:
        if row[2] in SESSION_STATUSES:
            sessions += 1
            if path in found and path not in skipped:
                files[row[1]] = ScopeFile(row[1], path, row[3], row[4], None if row[6] else row[5])
        elif row[2] == "not-session" and path in found and path not in skipped:
            scope.skipped.append((path, NO_HEADER))
    scope.complete = len(files) == sessions
