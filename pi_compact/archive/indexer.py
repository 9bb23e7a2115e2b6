"""Bringing the cross-session index up to date (``update_index``): a ``stat`` per file when nothing changed, and
only the new bytes of a session Pi appended to. The rule is the per-file index's (``session.index``): an indexed
prefix is trusted only while it is still the file's prefix.

- a file whose device, inode, size, mtime and ctime are those recorded is unchanged (ctime cannot be set back by
  a program: any write, ``touch`` or ``chmod`` changes it), and costs nothing;
- otherwise the CRC-32 of the prefix indexed (computed from the very bytes parsed) is checked against the file:
  when it agrees, the lines after the prefix are indexed; when it does not (a rewrite, an edit in place), or the
  file is shorter than the prefix, or it is another file (another inode), the session is indexed again from its
  first byte, never trusted;
- a session whose file is gone drops out; a file that is not a Pi session is remembered as such (and looked at
  again when it changes); an unreadable one is reported with its path and skipped, never fatal.

Only complete lines are indexed (a line without its newline is a write in progress: it is indexed once the newline
arrives). Older session formats (v1, v2), which Pi migrates in memory, are loaded whole and indexed again whenever
they change. Every write is a short transaction that first reads the file's row again, so two processes never
index the same bytes twice.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sqlite3
import stat
from collections.abc import Callable, Iterator
from typing import Any

from pi_compact.archive.document import body_row, clean, document
from pi_compact.archive.reading import (
    END,
    Ahead,
    Batch,
    crc_of,
    is_legacy,
    last_newline,
    parse,
    parse_new,
    prefetch,
    unindexable,
)
from pi_compact.archive.scope import (
    FILE_COLUMNS,
    FileState,
    Scope,
    cover,
    decoder,
    delete_file_rows,
    drop_missing,
    purge_deleted,
    unchanged,
)
from pi_compact.session.entries import Entry

COMMIT_BYTES = 32 * 1024 * 1024  # a long session is committed in parts: an interrupted build keeps what it did
PURGE_DELETED = True  # merge the FTS5 index after deletes (bench/secure_delete.py measures it off too)
PARALLEL_BYTES = 1024 * 1024  # more than this to read: parsing runs in a thread of its own

Progress = Callable[[int, int], None]  # (bytes indexed so far, bytes to index in all)


class _Writes:
    """The write transaction an update holds across files, committed every ``COMMIT_BYTES`` of session read: FTS5
    writes what it tokenized at each commit (and at each savepoint, so there are none), and large segments cost
    far less to write and merge than one per file. A file that cannot be read mid-way keeps what was indexed of
    it, its row saying so (the next search goes on from there); anything else rolls the transaction back whole."""

    def __init__(self, conn: sqlite3.Connection, committed: Callable[[], None] | None = None) -> None:
        self.conn = conn
        self.committed = committed
        self.open = False
        self.since = 0
        self.deleted = 0  # entries deleted to index a file again from its start

    def begin_file(self) -> None:
        if not self.open:
            self.conn.execute("begin immediate")
            self.open = True

    def end_file(self, read: int) -> None:
        self.since += read
        if self.since >= COMMIT_BYTES:
            self.commit()

    def midway(self, read: int) -> None:
        """Commit the part of a long file read so far, and go on with it."""
        self.commit()
        self.begin_file()

    def commit(self) -> None:
        if self.open:
            self.conn.execute("commit")
            self.open = False
            if self.committed is not None:
                self.committed()
        self.since = 0

    def abort(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            if self.conn.in_transaction:
                self.conn.execute("rollback")
        self.open = False


def update_index(
    conn: sqlite3.Connection,
    files: list[tuple[str, os.stat_result]],
    progress: Progress | None = None,
    committed: Callable[[], None] | None = None,
) -> Scope:
    """Bring the index up to date with ``files`` (path, stat) and return them as a search scope; ``committed`` is
    called after each commit of what was read."""
    decode = decoder()
    known = {
        decode(row[0]): row
        for row in conn.execute(f"select {FILE_COLUMNS}, dev, ino, size, mtime_ns, ctime_ns from files")
    }
    scope = Scope()
    todo: list[tuple[str, os.stat_result]] = []
    get = known.get
    for path, st in files:
        row = get(path)
        if (
            row is not None
            and row[11] == st.st_ctime_ns
            and row[10] == st.st_mtime_ns
            and row[9] == st.st_size
            and row[8] == st.st_ino
            and row[7] == st.st_dev
        ):
            continue
        todo.append((path, st))
    total = sum(st.st_size for _, st in todo)
    done = 0
    # Sessions new to the index are parsed ahead, in a thread of their own, while SQLite (which holds no
    # GIL while it tokenizes) indexes the one before: the first build uses both cores.
    new = [path for path, _ in todo if path not in known]
    ahead = None
    if sum(st.st_size for path, st in todo if path not in known) > PARALLEL_BYTES:
        ahead = prefetch(parse_new(new), depth=8)
    writes = _Writes(conn, committed)
    try:
        for path, _st in todo:
            base = done

            def report(n: int, base: int = base) -> None:
                if progress is not None:
                    progress(base + n, total)

            try:
                if ahead is not None and path not in known:
                    done += _index_new(conn, path, ahead, report, writes)
                else:
                    done += _index_file(conn, path, report, writes)
            except OSError as exc:
                from pi_compact.pi.sessions import os_reason

                scope.skipped.append((path, os_reason(exc)))
            scope.indexed_files += 1
        writes.commit()
    except BaseException:
        writes.abort()
        raise
    finally:
        if ahead is not None:
            ahead.close()
    scope.indexed_bytes = done
    found = {path for path, _ in files}
    scope.dropped = drop_missing(conn, [p for p in known if p not in found])
    if (scope.dropped or writes.deleted) and PURGE_DELETED:
        purge_deleted(conn)  # a deleted session's words must not stay in the file
    # Nothing read, nothing dropped: the rows just read are the index's, as a second look would find them.
    cover(conn, scope, found, None if todo or scope.dropped else list(known.items()))
    return scope


def _index_new(
    conn: sqlite3.Connection, path: str, ahead: Iterator[Ahead], progress: Callable[[int], None], writes: _Writes
) -> int:
    """Index a file that was not in the index, from the batches ``parse_new`` made ahead; the bytes read."""
    first = next(ahead)
    assert first[0] == path, (first[0], path)
    if isinstance(first[1], OSError):
        raise first[1]
    st = first[1]
    if first[2] is None:  # a format before v3: the usual way
        return _index_file(conn, path, progress, writes)
    pending: list[Batch] = [] if first[2] is END else [first[2]]
    writes.begin_file()
    try:
        key = os.fsencode(path)
        if conn.execute("select 1 from files where path = ?", (key,)).fetchone() is not None:
            writes.end_file(0)  # another search indexed it meanwhile: its row decides
            while first[2] is not END and not isinstance(first[1], OSError):
                first = next(ahead)
            return _index_file(conn, path, progress, writes)
        file_id = conn.execute("insert into files(path, status) values (?, 'pending') returning id", (key,))
        file_id = file_id.fetchone()[0]
        next_id = conn.execute("select coalesce(max(id), 0) + 1 from entries").fetchone()[0]
        state = FileState(file_id)
        read = since_commit = 0
        while True:
            if pending:
                rows, texts, after, count = pending.pop()
            else:
                item = next(ahead)
                if isinstance(item[1], OSError):
                    state.save(conn, None)  # what was read stands; the next search goes on after it
                    writes.end_file(since_commit)
                    raise item[1]
                if item[2] is END:
                    break
                rows, texts, after, count = item[2]
            ids = range(next_id, next_id + len(rows))
            next_id += len(rows)
            _insert_rows(conn, [(i, file_id, *row) for i, row in zip(ids, rows, strict=True)], ids, texts)
            state = after.copy(file_id=file_id)
            read += count
            since_commit += count
            if since_commit >= COMMIT_BYTES:
                state.save(conn, None)
                writes.midway(since_commit)
                since_commit = 0
            progress(read)
        state.save(conn, st)
        writes.end_file(since_commit)
    except OSError:
        raise
    except BaseException:
        writes.abort()
        raise
    return read


def _index_file(conn: sqlite3.Connection, path: str, progress: Callable[[int], None], writes: _Writes) -> int:
    """Index what is new in one file; the bytes read. OSError when it cannot be read."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(21, "not a regular file")
        return _Indexer(conn, path, fd, st, progress, writes).run()
    finally:
        os.close(fd)


class _Indexer:
    """Indexes one file from where its row says (or from the start), in transactions of ``COMMIT_BYTES``."""

    def __init__(
        self, conn: sqlite3.Connection, path: str, fd: int, st: os.stat_result, progress: Any, writes: _Writes
    ) -> None:
        self.conn = conn
        self.writes = writes
        self.path = path
        self.key = os.fsencode(path)
        self.fd = fd
        self.st = st
        self.progress = progress
        self.read = 0
        self.committed = 0  # of ``read``, what a commit in the middle of the file counted already

    def _row(self) -> Any:
        return self.conn.execute(
            "select id, dev, ino, size, mtime_ns, ctime_ns, indexed_to, crc, lines, entries, status, session_id, "
            "cwd, leaf, no_leaf from files where path = ?",
            (self.key,),
        ).fetchone()

    def run(self) -> int:
        conn, st = self.conn, self.st
        self.writes.begin_file()
        try:
            row = self._row()
            if row is not None and unchanged(row[1:6], st):
                self.writes.end_file(0)  # another search did it meanwhile
                return 0
            resume = (
                row is not None
                and row[10] in ("session", "pending", "not-session")
                and (row[1], row[2]) == (st.st_dev, st.st_ino)
                and row[6] <= st.st_size
                and (row[6] == 0 or crc_of(self.fd, row[6]) == row[7])
            )
            if row is None:
                file_id = conn.execute(
                    "insert into files(path, status) values (?, 'pending') returning id", (self.key,)
                ).fetchone()[0]
                state = FileState(file_id)
            elif not resume:
                self.writes.deleted += delete_file_rows(conn, row[0])
                state = FileState(row[0])
                state.save(conn, None)  # from nothing: a failure below leaves a row that says so
            else:
                state = FileState(row[0], *row[6:15])
            if state.status == "not-session" and resume:
                state.save(conn, st)  # the same prefix, still not a session
                self.writes.end_file(0)
                return 0
            if state.status == "legacy" or (state.status == "pending" and state.indexed_to == 0 and is_legacy(self.fd)):
                self._legacy(state)
            else:
                self._append(state)
            self.writes.end_file(self.read - self.committed)
        except OSError:
            raise  # the row describes what was indexed (``_append`` saves it as it goes)
        except BaseException:
            self.writes.abort()
            raise
        return self.read

    def _append(self, state: FileState) -> None:
        conn, st = self.conn, self.st
        next_id = conn.execute("select coalesce(max(id), 0) + 1 from entries").fetchone()[0]
        since_commit = 0
        batches = parse(self.fd, st.st_size, state.copy())
        if st.st_size - state.indexed_to > PARALLEL_BYTES:
            batches = prefetch(batches)  # parsing and rendering overlap SQLite's tokenizing, which holds no GIL
        try:
            for rows, texts, after, read in batches:
                ids = range(next_id, next_id + len(rows))
                next_id += len(rows)
                _insert_rows(conn, [(i, state.file_id, *row) for i, row in zip(ids, rows, strict=True)], ids, texts)
                state = after
                since_commit += read
                if since_commit >= COMMIT_BYTES:
                    state.save(conn, None)
                    self.writes.midway(since_commit)
                    self.read += since_commit
                    self.committed = self.read
                    since_commit = 0
                    if self._row()[6] != state.indexed_to:  # pragma: no cover - another writer took the file over
                        return
                self.progress(self.read + since_commit)
        except OSError:
            state.save(conn, None)  # what was read stands; the next search goes on after it
            raise
        finally:
            close = getattr(batches, "close", None)
            if close is not None:
                close()
        self.read += since_commit
        # The stat recorded is the one taken before reading: a change made while reading shows at the next look.
        state.save(conn, st)
        self.progress(self.read)

    def _legacy(self, state: FileState) -> None:
        """A v1 or v2 session: loaded whole (Pi migrates it in memory; so does picompact) and indexed again."""
        from pi_compact.errors import PiCompactError
        from pi_compact.session.load import load_session

        conn = self.conn
        try:
            session = load_session(self.path, keep_bodies=True)
        except PiCompactError as exc:
            raise OSError(5, exc.message) from None
        except OSError:
            raise
        except Exception as exc:
            raise unindexable(exc) from exc
        self.writes.deleted += delete_file_rows(conn, state.file_id)
        end = last_newline(self.fd, self.st.st_size)
        state.status, state.entries, state.lines = "legacy", 0, 0
        next_id = conn.execute("select coalesce(max(id), 0) + 1 from entries").fetchone()[0]
        rows: list[tuple[Any, ...]] = []
        texts: list[tuple[int, str, str, float]] = []
        state.session_id = clean(str(session.header.get("id")))
        cwd = session.header.get("cwd")
        state.cwd = clean(cwd) if isinstance(cwd, str) else None
        for entry in session.entries:
            texts.append((next_id, *_add_row(rows, next_id, state.file_id, entry)))
            next_id += 1
        _insert(conn, rows, texts)
        leaf = session.leaf
        state.leaf = clean(leaf.id) if leaf is not None and leaf.id else None
        state.no_leaf = 0 if state.leaf else 1
        state.entries = len(session.entries)
        state.indexed_to = end
        state.crc = crc_of(self.fd, end) or 0
        self.read = self.st.st_size
        state.save(conn, self.st)


def _add_row(rows: list[tuple[Any, ...]], rowid: int, file_id: int, entry: Entry) -> tuple[str, str, float]:
    """Add the ``entries`` row of ``entry``; its ``body`` columns."""
    text, kind, ts, ts_ms, tools, failed = document(entry)
    eid = clean(entry.id) if entry.id else None
    parent = clean(entry.parent_id) if entry.parent_id else None
    rows.append((rowid, file_id, entry.line, entry.offset, entry.length, eid, parent, kind, ts, ts_ms, tools, failed))
    return body_row(text, kind, tools)


ROWS_PER_STATEMENT = 128  # one INSERT for many rows: SQLite gives the GIL back once per statement, not per row


@functools.cache
def _insert_sql(table: str, width: int, count: int) -> str:
    row = "(" + ", ".join("?" * width) + ")"
    return f"insert into {table} values " + ", ".join([row] * count)


def _insert_many(conn: sqlite3.Connection, table: str, rows: list[tuple[Any, ...]]) -> None:
    """Insert ``rows`` with multi-row statements. Each row bound one at a time (``executemany``) would hand the
    GIL over at every row, and wait for it while the parsing thread holds it."""
    if not rows:
        return
    width = len(rows[0])
    for at in range(0, len(rows), ROWS_PER_STATEMENT):
        chunk = rows[at : at + ROWS_PER_STATEMENT]
        conn.execute(_insert_sql(table, width, len(chunk)), [value for row in chunk for value in row])


def _insert_rows(
    conn: sqlite3.Connection, rows: list[tuple[Any, ...]], ids: range, texts: list[tuple[str, str, float]]
) -> None:
    _insert_many(conn, "entries", rows)
    _insert_many(conn, "body(rowid, text, cjk, weight)", [(i, *t) for i, t in zip(ids, texts, strict=True)])


def _insert(conn: sqlite3.Connection, rows: list[tuple[Any, ...]], texts: list[tuple[int, str, str, float]]) -> None:
    _insert_many(conn, "entries", rows)
    _insert_many(conn, "body(rowid, text, cjk, weight)", texts)
    rows.clear()
    texts.clear()
