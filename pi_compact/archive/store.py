"""The cross-session index: one SQLite database (FTS5) in the user's cache, brought up to date on every search.

What it holds: per session file its identity and how far it was read (``files``), per entry its place and what the
filters need (``entries``: line, offset, id, parent id, role or type, time, tool names, whether it is a failed tool
result), and per entry the text ``picompact show`` renders, without the lines picompact writes itself (the ENTRY
header, the ``[section]`` markers), in an FTS5 table (``body``) tokenized by ``unicode61 remove_diacritics 2``
(words, case and accents folded). ``trigram`` would match any substring, but measured on the same documents it
builds 5.8 times slower (15 against 87 MB of session a second) into a table 2.3 times larger (``bench/RESULTS.md``);
exact substrings are what ``--regex`` and ``-F`` are for, checked on the stored text after the words narrowed.

Bringing it up to date (``Store.update``) costs a ``stat`` per file when nothing changed, and only the new bytes of
a session Pi appended to. The rule is the per-file index's (``session.index``): an indexed prefix is trusted only
while it is still the file's prefix.

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
they change.

The database is never trusted for what it claims to be either: it must be a regular file owned by the user in the
0700 cache directory (``session.index``'s rules), made mode 0600 (it holds session text); its application id and
format version must be this picompact's; a database that is corrupt, foreign or of another format is deleted and
built again, with a warning. WAL mode and a busy timeout let two searches and a writer run at once: every write is a
short transaction that first reads the file's row again, so two processes never index the same bytes twice.
"""

from __future__ import annotations

import contextlib
import functools
import math
import os
import sqlite3
import stat
import zlib
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

from pi_compact import __version__
from pi_compact.errors import ExternalError
from pi_compact.session.entries import Entry

FORMAT = 1
APPLICATION_ID = 0x70635331  # "pcS1"
TOKENIZER = "unicode61 remove_diacritics 2"
AUTOMERGE = 16
DB_NAME = "sessions.sqlite3"
BUSY_TIMEOUT_SECONDS = 30.0
READ_CHUNK = 1024 * 1024
COMMIT_BYTES = 32 * 1024 * 1024  # a long session is committed in parts: an interrupted build keeps what it did
BATCH_TEXT = 1024 * 1024  # rows are inserted in batches of about this much text, or of READ_BATCH bytes of file
READ_BATCH = 4 * 1024 * 1024
WAL_CHECKPOINT_PAGES = 10_000  # about 40 MB of log between checkpoints (each one syncs): fewer waits when building
PARALLEL_BYTES = 1024 * 1024  # more than this to read: parsing runs in a thread of its own
_CORRUPT_CODES = frozenset({11, 26})  # SQLITE_CORRUPT, SQLITE_NOTADB

Progress = Callable[[int, int], None]  # (bytes indexed so far, bytes to index in all)
T = TypeVar("T")

_SCHEMA = f"""
create table meta(key text primary key, value);
create table files(
    id integer primary key,
    path blob unique not null,
    dev integer, ino integer, size integer, mtime_ns integer, ctime_ns integer,
    indexed_to integer not null default 0,
    crc integer not null default 0,
    lines integer not null default 0,
    entries integer not null default 0,
    status text not null,
    session_id text, cwd text,
    leaf text, no_leaf integer not null default 0
);
create table entries(
    id integer primary key,
    file integer not null,
    line integer not null, offset integer not null, length integer not null,
    entry_id text, parent_id text, kind text, ts text, ts_ms integer, tools text, error integer not null
);
create index entries_by_file on entries(file, line);
create virtual table body using fts5(text, tokenize='{TOKENIZER}');
"""


class _Writes:
    """The write transaction an update holds across files, committed every ``COMMIT_BYTES`` of session read: FTS5
    writes what it tokenized at each commit (and at each savepoint, so there are none), and large segments cost
    far less to write and merge than one per file. A file that cannot be read mid-way keeps what was indexed of
    it, its row saying so (the next search goes on from there); anything else rolls the transaction back whole."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.open = False
        self.since = 0

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
        self.since = 0

    def abort(self) -> None:
        with contextlib.suppress(sqlite3.Error):
            if self.conn.in_transaction:
                self.conn.execute("rollback")
        self.open = False


class CorruptIndexError(ExternalError):
    """The database turned out to be corrupt while in use (``Store.run`` builds it again and retries once)."""


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
    """The cache directory, made (0700) and checked as ``session.index`` does; ExternalError when unusable."""
    from pi_compact.session import index

    try:
        fd = index._open_cache(create=True)
    except (OSError, RuntimeError) as exc:
        raise ExternalError(f"cannot make the cache directory for the search index: {exc}") from None
    if fd is None:
        raise ExternalError(
            f"{index.cache_dir()}: not a directory owned by you: the search index cannot be kept there (use --no-index)"
        )
    os.close(fd)
    return index.cache_dir()


def database_path() -> Path:
    """Where the index lives: ``$XDG_CACHE_HOME/picompact/sessions.sqlite3`` (or ``~/.cache/picompact/``)."""
    from pi_compact.session import index

    return index.cache_dir() / DB_NAME


def _remove_database(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(f"{path}{suffix}")


def _prepare_file(path: Path, warnings: list[str]) -> None:
    """Make sure ``path`` is a regular file owned by the user, mode 0600 (made so when missing)."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    if st is not None and (not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid()):
        warnings.append(f"{path}: not a regular file of yours: the search index is built again in its place")
        _remove_database(path)
        st = None
    if st is None:
        with contextlib.suppress(FileExistsError):
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600))
    elif stat.S_IMODE(st.st_mode) != 0o600:
        os.chmod(path, 0o600)


def _connect(target: str) -> sqlite3.Connection:
    conn = sqlite3.connect(target, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None, check_same_thread=False)
    conn.execute("pragma cache_size = -16000")
    return conn


def _create_schema(conn: sqlite3.Connection) -> None:
    conn.execute("begin immediate")
    for statement in _SCHEMA.split(";"):
        if statement.strip():
            conn.execute(statement)
    conn.execute("insert into meta values ('picompact', ?), ('tokenizer', ?)", (__version__, TOKENIZER))
    # Merge segments 16 at a time (FTS5's default is 4): a tenth less CPU to build, queries as fast (bench/).
    conn.execute(f"insert into body(body, rank) values ('automerge', {AUTOMERGE})")
    conn.execute(f"pragma application_id = {APPLICATION_ID}")
    conn.execute(f"pragma user_version = {FORMAT}")
    conn.execute("commit")


def _check(conn: sqlite3.Connection) -> str | None:
    """None when ``conn`` is an index of this format (or empty, and now made one); else why it is not."""
    app, version = (
        conn.execute("pragma application_id").fetchone()[0],
        conn.execute("pragma user_version").fetchone()[0],
    )
    if app == 0 and version == 0:
        tables = conn.execute("select count(*) from sqlite_master").fetchone()[0]
        if tables:
            return "it is not picompact's search index"
        try:
            conn.execute("begin immediate")
        except sqlite3.OperationalError:
            raise
        # Another process may have made it between the checks: look again under the write lock.
        if conn.execute("select count(*) from sqlite_master").fetchone()[0] == 0:
            conn.execute("rollback")
            _create_schema(conn)
        else:
            conn.execute("rollback")
            return _check(conn)
        return None
    if app != APPLICATION_ID:
        return "it is not picompact's search index"
    if version != FORMAT:
        return f"it is in format {version}, not {FORMAT}"
    names = {row[0] for row in conn.execute("select name from sqlite_master where type in ('table', 'index')")}
    if not {"meta", "files", "entries", "body", "entries_by_file"} <= names:
        return "tables are missing"
    return None


class Store:
    """An open index: the persistent one (``open_store``), or a private temporary one (``temporary_store``, what
    ``--no-index`` searches: the same documents, built from nothing every time)."""

    def __init__(self, conn: sqlite3.Connection, path: Path | None, warnings: list[str]) -> None:
        self.conn = conn
        self.path = path
        self.warnings = warnings

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
            self.conn = _connect("")
            _create_schema(self.conn)
            return
        self.warnings.append(f"{self.path}: {reason}: the search index is built again")
        _remove_database(self.path)
        _prepare_file(self.path, self.warnings)
        self.conn = _open_connection(self.path)
        problem = _check(self.conn)
        if problem is not None:
            raise ExternalError(f"{self.path}: {problem}, even after it was made again")

    def run(self, action: Callable[[], Any]) -> Any:
        """``action()``, once more after building the index again if the database turned out corrupt."""
        try:
            return action()
        except CorruptIndexError as exc:
            self.rebuild(f"the database is corrupt ({exc.message})")
            return action()

    @contextlib.contextmanager
    def _sql(self) -> Iterator[sqlite3.Connection]:
        """The connection; SQLite's errors as picompact's (corrupt: CorruptIndexError; busy: ExternalError)."""
        try:
            yield self.conn
        except sqlite3.DatabaseError as exc:
            with contextlib.suppress(sqlite3.Error):
                if self.conn.in_transaction:
                    self.conn.execute("rollback")
            if _is_corrupt(exc):
                raise CorruptIndexError(str(exc)) from None
            if _is_busy(exc):
                raise ExternalError(
                    f"the search index is busy (another picompact held it for {BUSY_TIMEOUT_SECONDS:.0f} s); "
                    "try again, or use --no-index"
                ) from None
            raise

    # ------------------------------------------------------------------------------------------- updating

    def update(self, files: list[tuple[str, os.stat_result]], progress: Progress | None = None) -> Scope:
        """Bring the index up to date with ``files`` (path, stat) and return them as a search scope."""
        with self._sql() as conn:
            known = {
                os.fsdecode(row[0]): row
                for row in conn.execute(
                    "select path, id, dev, ino, size, mtime_ns, ctime_ns, status, session_id, cwd, leaf from files"
                )
            }
            scope = Scope()
            todo: list[tuple[str, os.stat_result]] = []
            for path, st in files:
                row = known.get(path)
                if row is not None and _unchanged(row[2:7], st):
                    continue
                todo.append((path, st))
            total = sum(st.st_size for _, st in todo)
            done = 0
            # Sessions new to the index are parsed ahead, in a thread of their own, while SQLite (which holds no
            # GIL while it tokenizes) indexes the one before: the first build uses both cores.
            new = [path for path, _ in todo if path not in known]
            ahead = None
            if sum(st.st_size for path, st in todo if path not in known) > PARALLEL_BYTES:
                ahead = _prefetch(_parse_new(new), depth=8)
            writes = _Writes(conn)
            try:
                for path, _st in todo:
                    base = done

                    def report(n: int, base: int = base) -> None:
                        if progress is not None:
                            progress(base + n, total)

                    try:
                        if ahead is not None and path not in known:
                            done += self._index_new(path, ahead, report, writes)
                        else:
                            done += self._index_file(path, report, writes)
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
            scope.dropped = self._drop_missing([p for p in known if p not in found])
            skipped = {p for p, _ in scope.skipped}
            for row in conn.execute("select path, id, status, session_id, cwd, leaf, no_leaf from files"):
                path = os.fsdecode(row[0])
                if path in found and path not in skipped and row[2] in ("session", "legacy"):
                    scope.files[row[1]] = ScopeFile(row[1], path, row[3], row[4], None if row[6] else row[5])
            return scope

    def _drop_missing(self, paths: list[str]) -> int:
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
            self.conn.execute("begin immediate")
            row = self.conn.execute("select id from files where path = ?", (os.fsencode(path),)).fetchone()
            if row is not None:
                _delete_file_rows(self.conn, row[0])
                self.conn.execute("delete from files where id = ?", (row[0],))
            self.conn.execute("commit")
        return len(gone)

    def _index_new(self, path: str, ahead: Iterator[Ahead], progress: Callable[[int], None], writes: _Writes) -> int:
        """Index a file that was not in the index, from the batches ``_parse_new`` made ahead; the bytes read."""
        first = next(ahead)
        assert first[0] == path, (first[0], path)
        if isinstance(first[1], OSError):
            raise first[1]
        st = first[1]
        if first[2] is None:  # a format before v3: the usual way
            return self._index_file(path, progress, writes)
        conn = self.conn
        pending: list[Batch] = [] if first[2] is _END else [first[2]]
        writes.begin_file()
        try:
            key = os.fsencode(path)
            if conn.execute("select 1 from files where path = ?", (key,)).fetchone() is not None:
                writes.end_file(0)  # another search indexed it meanwhile: its row decides
                while first[2] is not _END and not isinstance(first[1], OSError):
                    first = next(ahead)
                return self._index_file(path, progress, writes)
            file_id = conn.execute("insert into files(path, status) values (?, 'pending') returning id", (key,))
            file_id = file_id.fetchone()[0]
            next_id = conn.execute("select coalesce(max(id), 0) + 1 from entries").fetchone()[0]
            state = _State(file_id)
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
                    if item[2] is _END:
                        break
                    rows, texts, after, count = item[2]
                ids = range(next_id, next_id + len(rows))
                next_id += len(rows)
                _insert_rows(conn, [(i, file_id, *row) for i, row in zip(ids, rows, strict=True)], ids, texts)
                state = replace(after, file_id=file_id)
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

    def _index_file(self, path: str, progress: Callable[[int], None], writes: _Writes) -> int:
        """Index what is new in one file; the bytes read. OSError when it cannot be read."""
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                raise OSError(21, "not a regular file")
            return _Indexer(self.conn, path, fd, st, progress, writes).run()
        finally:
            os.close(fd)

    # ------------------------------------------------------------------------------------------- figures

    def stats(self) -> dict[str, Any]:
        with self._sql() as conn:
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


def _unchanged(recorded: tuple[Any, ...], st: os.stat_result) -> bool:
    return recorded == (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


def _delete_file_rows(conn: sqlite3.Connection, file_id: int) -> None:
    conn.execute("delete from body where rowid in (select id from entries where file = ?)", (file_id,))
    conn.execute("delete from entries where file = ?", (file_id,))


def _crc_of(fd: int, length: int) -> int | None:
    from pi_compact.session.index import fingerprint

    return fingerprint(fd, length)


def _lines(fd: int, start: int, end: int) -> Iterator[tuple[int, bytes]]:
    """(offset, line with its b"\\n") for each complete line of the file between ``start`` and ``end``."""
    buf = bytearray()
    buf_at = start  # the file offset of buf[0]
    pos = start
    while pos < end:
        chunk = os.pread(fd, min(READ_CHUNK, end - pos), pos)
        if not chunk:
            break
        pos += len(chunk)
        scan = len(buf)
        buf += chunk
        at = 0
        while True:
            nl = buf.find(b"\n", scan)
            if nl < 0:
                break
            yield buf_at + at, bytes(buf[at : nl + 1])
            at = scan = nl + 1
        if at:
            del buf[:at]
            buf_at += at


def _epoch_ms(text: str | None) -> int | None:
    if not text:
        return None
    try:
        when = datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    try:
        return math.floor(when.timestamp() * 1000)
    except (OverflowError, OSError, ValueError):
        return None


def _clean(text: str) -> str:
    """Text SQLite can hold (UTF-8): a lone surrogate becomes U+FFFD."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return text


def document(entry: Entry) -> tuple[str, str, str | None, int | None, str, int]:
    """What the index keeps of an entry: (text, role or type, timestamp, its epoch ms, tool names, failed)."""
    from pi_compact.search.render import render_entry  # only when indexing: a search with nothing new skips it

    rendered = render_entry(entry)
    markers = rendered.markers
    lines = rendered.lines
    text = "\n".join(line for i, line in enumerate(lines) if i not in markers) if markers else "\n".join(lines)
    kind = entry.role or entry.type
    ts = entry.timestamp
    tools: list[str] = []
    failed = 0
    msg = entry.message
    if msg is not None:
        if entry.role == "toolResult":
            name = msg.get("toolName")
            if isinstance(name, str):
                tools.append(name)
            failed = 1 if msg.get("isError") is True else 0
        elif entry.role == "assistant" and isinstance(msg.get("content"), list):
            for block in msg["content"]:
                name = block.get("name") if isinstance(block, dict) and block.get("type") == "toolCall" else None
                if isinstance(name, str) and name not in tools:
                    tools.append(name)
    tool_text = "\n" + "\n".join(tools) + "\n" if tools else ""
    return _clean(text), _clean(kind), _clean(ts) if ts else None, _epoch_ms(ts), _clean(tool_text), failed


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
            if row is not None and _unchanged(row[1:6], st):
                self.writes.end_file(0)  # another search did it meanwhile
                return 0
            resume = (
                row is not None
                and row[10] in ("session", "pending", "not-session")
                and (row[1], row[2]) == (st.st_dev, st.st_ino)
                and row[6] <= st.st_size
                and (row[6] == 0 or _crc_of(self.fd, row[6]) == row[7])
            )
            if row is None:
                file_id = conn.execute(
                    "insert into files(path, status) values (?, 'pending') returning id", (self.key,)
                ).fetchone()[0]
                state = _State(file_id)
            elif not resume:
                _delete_file_rows(conn, row[0])
                state = _State(row[0])
                state.save(conn, None)  # from nothing: a failure below leaves a row that says so
            else:
                state = _State(row[0], *row[6:15])
            if state.status == "not-session" and resume:
                state.save(conn, st)  # the same prefix, still not a session
                self.writes.end_file(0)
                return 0
            if state.status == "legacy" or (
                state.status == "pending" and state.indexed_to == 0 and _is_legacy(self.fd)
            ):
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

    def _append(self, state: _State) -> None:
        conn, st = self.conn, self.st
        next_id = conn.execute("select coalesce(max(id), 0) + 1 from entries").fetchone()[0]
        since_commit = 0
        batches = _parse(self.fd, st.st_size, replace(state))
        if st.st_size - state.indexed_to > PARALLEL_BYTES:
            batches = _prefetch(batches)  # parsing and rendering overlap SQLite's tokenizing, which holds no GIL
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

    def _legacy(self, state: _State) -> None:
        """A v1 or v2 session: loaded whole (Pi migrates it in memory; so does picompact) and indexed again."""
        from pi_compact.errors import PiCompactError
        from pi_compact.session.load import load_session

        conn = self.conn
        try:
            session = load_session(self.path, keep_bodies=True)
        except PiCompactError as exc:
            raise OSError(5, exc.message) from None
        _delete_file_rows(conn, state.file_id)
        end = _last_newline(self.fd, self.st.st_size)
        state.status, state.entries, state.lines = "legacy", 0, 0
        next_id = conn.execute("select coalesce(max(id), 0) + 1 from entries").fetchone()[0]
        rows: list[tuple[Any, ...]] = []
        texts: list[tuple[int, str]] = []
        state.session_id = _clean(str(session.header.get("id")))
        cwd = session.header.get("cwd")
        state.cwd = _clean(cwd) if isinstance(cwd, str) else None
        for entry in session.entries:
            texts.append((next_id, _add_row(rows, next_id, state.file_id, entry)))
            next_id += 1
        _insert(conn, rows, texts)
        leaf = session.leaf
        state.leaf = _clean(leaf.id) if leaf is not None and leaf.id else None
        state.no_leaf = 0 if state.leaf else 1
        state.entries = len(session.entries)
        state.indexed_to = end
        state.crc = _crc_of(self.fd, end) or 0
        self.read = self.st.st_size
        state.save(conn, self.st)


Batch = tuple[list[tuple[Any, ...]], list[str], "_State", int]  # entries rows (no id), texts, state after, bytes


def _parse(fd: int, end: int, state: _State) -> Iterator[Batch]:
    """The complete lines of the file after ``state.indexed_to`` as batches of rows, each with the state after it
    (``state`` is advanced in place; a copy goes with each batch)."""
    from pi_compact.session.load import parse_json_line

    rows: list[tuple[Any, ...]] = []
    texts: list[str] = []
    size = read = 0
    for offset, line in _lines(fd, state.indexed_to, end):
        if read >= READ_BATCH or size >= BATCH_TEXT:  # the state so far describes every line before this one
            yield rows, texts, replace(state), read
            rows, texts, size, read = [], [], 0, 0
        state.crc = zlib.crc32(line, state.crc)
        state.lines += 1
        state.indexed_to = offset + len(line)
        read += len(line)
        if state.status == "not-session" or not line.strip():
            continue  # a file that is not a session: its bytes still count, so the next look checks that prefix
        try:
            value = parse_json_line(line)
        except ValueError:
            continue
        if _falsy(value):
            continue
        if state.status == "pending":
            if isinstance(value, dict) and value.get("type") == "session" and isinstance(value.get("id"), str):
                state.status = "session"
                state.session_id = _clean(value["id"])
                cwd = value.get("cwd")
                state.cwd = _clean(cwd) if isinstance(cwd, str) else None
            else:
                state.status = "not-session"
            continue
        if not isinstance(value, dict):
            state.leaf, state.no_leaf = None, 1
            continue
        entry = Entry(value, state.lines, state.entries, offset, len(line) - 1)
        state.entries += 1
        state.leaf = _clean(entry.id) if entry.id else None
        state.no_leaf = 0 if entry.id else 1
        text, kind, ts, ts_ms, tools, failed = document(entry)
        eid = _clean(entry.id) if entry.id else None
        parent = _clean(entry.parent_id) if entry.parent_id else None
        rows.append((entry.line, entry.offset, entry.length, eid, parent, kind, ts, ts_ms, tools, failed))
        texts.append(text)
        size += len(text)
    yield rows, texts, replace(state), read


_END: Any = object()  # the last item of a file in ``_parse_new``
Ahead = tuple[str, "os.stat_result | OSError", Any]  # (path, its stat or why it cannot be read, a Batch or _END)


def _parse_new(paths: list[str]) -> Iterator[Ahead]:
    """Each file parsed from its first byte: (path, stat, batch) items, then (path, stat, _END); (path, OSError,
    None) for a file that cannot be read, (path, stat, None) for one of a format before v3."""
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError as exc:
            yield path, exc, None
            continue
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                yield path, OSError(21, "not a regular file"), None
                continue
            if _is_legacy(fd):
                yield path, st, None
                continue
            for batch in _parse(fd, st.st_size, _State(0)):
                yield path, st, batch
            yield path, st, _END
        except OSError as exc:
            yield path, exc, None
        finally:
            os.close(fd)


class _Failed:
    def __init__(self, error: BaseException) -> None:
        self.error = error


def _prefetch(items: Iterator[T], depth: int = 4) -> Generator[T, None, None]:
    """``items`` produced by a thread of their own, at most ``depth`` ahead (memory stays bounded)."""
    import queue
    import threading

    box: queue.Queue[Any] = queue.Queue(depth)
    stop = threading.Event()
    end = object()

    def put(item: Any) -> bool:
        while not stop.is_set():
            try:
                box.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def work() -> None:
        try:
            for item in items:
                if not put(item):
                    return
            put(end)
        except BaseException as exc:
            put(_Failed(exc))
        finally:
            close = getattr(items, "close", None)
            if close is not None:
                close()  # a generator left behind closes its file now

    worker = threading.Thread(target=work, name="picompact-index-parse", daemon=True)
    worker.start()
    try:
        while True:
            item = box.get()
            if item is end:
                return
            if isinstance(item, _Failed):
                raise item.error
            yield item
    finally:
        stop.set()
        worker.join()


def _add_row(rows: list[tuple[Any, ...]], rowid: int, file_id: int, entry: Entry) -> str:
    """Add the ``entries`` row of ``entry``; its text."""
    text, kind, ts, ts_ms, tools, failed = document(entry)
    eid = _clean(entry.id) if entry.id else None
    parent = _clean(entry.parent_id) if entry.parent_id else None
    rows.append((rowid, file_id, entry.line, entry.offset, entry.length, eid, parent, kind, ts, ts_ms, tools, failed))
    return text


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


def _insert_rows(conn: sqlite3.Connection, rows: list[tuple[Any, ...]], ids: range, texts: list[str]) -> None:
    _insert_many(conn, "entries", rows)
    _insert_many(conn, "body(rowid, text)", list(zip(ids, texts, strict=True)))


def _insert(conn: sqlite3.Connection, rows: list[tuple[Any, ...]], texts: list[tuple[int, str]]) -> None:
    _insert_many(conn, "entries", rows)
    _insert_many(conn, "body(rowid, text)", texts)
    rows.clear()
    texts.clear()


def _falsy(value: Any) -> bool:
    from pi_compact.session.load import _is_falsy

    return bool(_is_falsy(value))


def _last_newline(fd: int, size: int) -> int:
    """The offset just after the file's last b"\\n" (0 when it has none)."""
    at = size
    while at > 0:
        start = max(0, at - READ_CHUNK)
        chunk = os.pread(fd, at - start, start)
        nl = chunk.rfind(b"\n")
        if nl >= 0:
            return start + nl + 1
        at = start
    return 0


def _is_legacy(fd: int) -> bool:
    """Whether the file's header (its first parsed line) says a format before v3."""
    from pi_compact.session.load import _header_version, parse_json_line

    for _, line in _lines(fd, 0, min(os.fstat(fd).st_size, 1024 * 1024)):
        if not line.strip():
            continue
        try:
            value = parse_json_line(line)
        except ValueError:
            continue
        if _falsy(value):
            continue
        if isinstance(value, dict) and value.get("type") == "session" and isinstance(value.get("id"), str):
            return _header_version(value, [], 1)[0] < 3
        return False
    return False


@dataclass
class _State:
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
    _prepare_file(path, warnings)
    store = Store(sqlite3.connect(":memory:"), path, warnings)
    try:
        store.conn = _open_connection(path)
        problem = _check(store.conn)
    except sqlite3.DatabaseError as exc:
        if _is_busy(exc):
            store.close()
            raise ExternalError("the search index is busy; try again, or use --no-index") from None
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
    _create_schema(conn)
    return Store(conn, None, [])
