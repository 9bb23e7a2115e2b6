"""What the cross-session index has indexed, file by file: the ``files`` row of each session file (its identity,
how far it was read, the CRC-32 of that prefix, what it is), the sessions gone since the last search dropped, and
the scope a search covers (the sessions found this time that the index holds)."""

from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ScopeFile:
    """A session file a search covers, as the index knows it."""

    id: int
    path: str
    session_id: str | None
    cwd: str | None
    leaf: str | None


@dataclass
class Scope:
    """The sessions a search covers (by file id), and the files left out (path, reason)."""

    files: dict[int, ScopeFile] = field(default_factory=dict)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    indexed_bytes: int = 0  # bytes read this time
    indexed_files: int = 0  # files that needed reading
    dropped: int = 0  # sessions gone since the last search


@dataclass
class FileState:
    """A session file's ``files`` row, as reading the file advances it."""

    file_id: int
    indexed_to: int = 0
    crc: int = 0
    lines: int = 0
    entries: int = 0
    status: str = "pending"
    session_id: str | None = None
    cwd: str | None = None
    leaf: str | None = None
    no_leaf: int = 0

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


def delete_file_rows(conn: sqlite3.Connection, file_id: int) -> None:
    conn.execute("delete from body where rowid in (select id from entries where file = ?)", (file_id,))
    conn.execute("delete from entries where file = ?", (file_id,))


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


def cover(conn: sqlite3.Connection, scope: Scope, found: set[str]) -> None:
    """Add to ``scope`` the sessions among ``found`` the index holds (not those ``scope`` skipped)."""
    skipped = {p for p, _ in scope.skipped}
    for row in conn.execute("select path, id, status, session_id, cwd, leaf, no_leaf from files"):
        path = os.fsdecode(row[0])
        if path in found and path not in skipped and row[2] in ("session", "legacy"):
            scope.files[row[1]] = ScopeFile(row[1], path, row[3], row[4], None if row[6] else row[5])
