"""Writing to session files without ever losing or corrupting one.

Three ways, one rule each:

- ``append_entries``: the normal case. One ``os.write()`` of complete lines to the file opened ``O_APPEND``, under an
  exclusive ``flock`` (other picompact runs wait; Pi itself does not lock), after checking that the file still has
  the size and last bytes it had when it was read. Anything else means someone appended meanwhile: nothing is
  written and ``SessionChangedError`` tells the caller to re-read, re-plan and try again.
- ``rewrite_session``: for v1/v2 files, which Pi rewrites on load anyway. A new file in the same directory, synced,
  then renamed over the old one; the original is kept as ``SESSION.bak`` (a hard link, so it costs nothing).
- ``write_copy``: ``--output FILE`` writes a compacted copy elsewhere (temp file + rename) and leaves SESSION alone.

``append_entries`` and ``rewrite_session`` take an ``in_lock`` callback, called after taking the lock and checking
the file, just before writing (a test pauses there to kill the process at that point). Nothing here writes to
stdout: ``write_copy`` to ``-`` writes to the stream it is given. The lock and the checks made under it are
``session.lock``'s; the temporary file renamed over a file, and the backup, ``session.atomic``'s.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from pi_compact.errors import ExternalError, OutputWriteError, SessionError, UsageError
from pi_compact.js import js_stringify
from pi_compact.session.atomic import discarded_on_failure, fsync_dir, make_backup, os_error, write_temp
from pi_compact.session.entries import Session
from pi_compact.session.lock import (
    DEFAULT_LOCK_TIMEOUT,
    SessionChangedError,
    check_header,
    check_unchanged,
    locked,
    open_session,
    signals_deferred,
)
from pi_compact.session.streams import write_fully

DEFAULT_TORN_QUIET = 2.0  # seconds an incomplete last line must stay unchanged to count as torn


@dataclass(frozen=True, slots=True)
class WriteResult:
    """What a write did, for the summary line."""

    path: Path
    bytes_written: int
    added_newline: bool = False  # the file ended without "\n" and we supplied it (as Pi would)
    repaired_torn_line: bool = False  # a torn last line was left in place and closed with "\n"
    backup: Path | None = None  # rewrite_session: where the original was kept
    migrated_from: int | None = None  # rewrite_session: the original format version


# ---------------------------------------------------------------------------------------------------------------
# A torn last line


def torn_line_number(session: Session) -> int | None:
    return next((d.line for d in session.diagnostics if d.code == "truncated-last-line"), None)


def torn_line_message(session: Session, quiet: float | None = None) -> str:
    """Why picompact will not write after a torn last line, and how to go ahead anyway. ``quiet``: the seconds the
    line was seen unchanged (None: not watched, as in a dry run)."""
    line = torn_line_number(session)
    where = f"line {line}" if line is not None else "the last line"
    still = f" and has not changed for {quiet:g}s" if quiet is not None else ""
    return (
        f"{where} is incomplete{still} (a crash in the middle of a write?), so picompact will not write after it; "
        "if no other program is writing this session, rerun with --repair to leave those bytes in place as a line "
        "Pi skips and write after them"
    )


def settle_torn_line(path: str | os.PathLike[str], expected: Session, quiet: float | None = None) -> float:
    """Tell a torn last line from one another program is still writing: watch the file until it has been unchanged
    for ``quiet`` seconds (by its modification time, or by watching it that long). Returns the quiet time;
    SessionChangedError ("the file is changing") as soon as it changes, so the caller re-reads and retries."""
    quiet = DEFAULT_TORN_QUIET if quiet is None else quiet
    where = str(path)
    line = torn_line_number(expected)
    first: int | None = None
    started = time.monotonic()
    while True:
        try:
            st = os.stat(path)
        except FileNotFoundError:
            raise SessionChangedError("the session file disappeared", path=where) from None
        if first is None:
            first = st.st_mtime_ns
        if st.st_size != expected.size or st.st_mtime_ns != first:
            raise SessionChangedError(
                "the file is changing: its incomplete last line changed while picompact waited (another program is "
                "still writing it)",
                path=where,
                line=line,
            )
        waited = time.monotonic() - started
        if waited >= quiet or time.time() - st.st_mtime >= quiet:
            return quiet
        time.sleep(min(0.05, quiet - waited))


def _separator(expected: Session, path: Path, repair: bool) -> tuple[bytes, bool, bool]:
    """Bytes to put before our lines so they never glue onto the last line: (bytes, added_newline, repaired)."""
    if expected.ends_with_newline or expected.size == 0:
        return b"", False, False
    if not expected.torn_last_line:
        return b"\n", True, False  # the last line is complete; Pi would add the newline on open
    if not repair:
        raise SessionError(torn_line_message(expected), path=str(path), line=torn_line_number(expected))
    return b"\n", True, True


# ---------------------------------------------------------------------------------------------------------------
# Append


def append_entries(
    path: str | os.PathLike[str],
    expected: Session,
    lines: list[str],
    *,
    repair: bool = False,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    in_lock: Callable[[], None] | None = None,
) -> WriteResult:
    """Append complete lines (each ending in "\\n") to a v3 session that must still be exactly ``expected``.

    Raises SessionChangedError (nothing written) when the file changed since it was read, LockTimeoutError when
    another writer holds the lock too long, SessionError for a torn last line without ``repair`` or an invalid
    header. A file ending without "\\n" gets the newline first, in the same write.
    """
    p = Path(path)
    if not lines:
        return WriteResult(p, 0)
    if any(not line.endswith("\n") or "\n" in line[:-1] for line in lines):
        raise ValueError("each line must be one complete JSONL line ending in a newline")
    if expected.needs_migration:
        raise UsageError(f"a v{expected.original_version} session must be rewritten, not appended to", path=str(p))
    fd = open_session(p, os.O_RDWR | os.O_APPEND, "write")
    try:
        with locked(fd, p, lock_timeout):
            check_unchanged(fd, p, expected)
            check_header(fd, p, expected)
            prefix, added, repaired = _separator(expected, p, repair)
            data = prefix + "".join(lines).encode("utf-8", "surrogatepass")
            if in_lock is not None:
                in_lock()
            with signals_deferred():
                check_unchanged(fd, p, expected)
                _write_all_once(fd, data, p, expected.size)
            os.fsync(fd)
    finally:
        os.close(fd)
    return WriteResult(p, len(data), added_newline=added and not repaired, repaired_torn_line=repaired)


def _write_all_once(fd: int, data: bytes, path: Path, size_before: int) -> None:
    """One write(); a short or failed write is undone (truncated back) when nobody else has appended since."""
    try:
        written = os.write(fd, data)
    except OSError as exc:
        _undo(fd, size_before, size_before)
        raise ExternalError(f"write failed: {exc.strerror}; nothing was written", path=str(path)) from None
    if written != len(data):
        undone = _undo(fd, size_before, size_before + written)
        raise ExternalError(
            f"short write ({written} of {len(data)} bytes, disk full?)"
            + ("; the partial line was removed" if undone else "; the file now ends in a partial line Pi will skip"),
            path=str(path),
        )


def _undo(fd: int, size_before: int, size_expected: int) -> bool:
    """Take back a write that was not whole, if the file still ends where that write ended; False otherwise."""
    try:
        if os.fstat(fd).st_size != size_expected:
            return False
        os.ftruncate(fd, size_before)
    except OSError:
        return False
    return True


# ---------------------------------------------------------------------------------------------------------------
# Rewrite (v1/v2) and copies


def migrated_lines(session: Session) -> list[str]:
    """The session as Pi writes it after migrating to v3: header with version 3, then every parsed entry.

    Blank, malformed and null lines are dropped, as Pi's rewrite drops them (the backup keeps them). A file whose
    migration would lose something picompact cannot see (lines read with replacement characters or cut at depth)
    or that would flatten a tree (a v1 header over entries with ids) is refused: SessionError naming the line.
    """
    refusal = migration_refusal(session)
    if refusal is not None:
        raise refusal
    header = dict(session.header)
    header["version"] = 3
    return [_line(header), *(_line(e.raw) for e in session.entries)]


_UNSAFE_TO_MIGRATE = {
    "invalid-utf8": "the line is not valid UTF-8, and rewriting it would replace its bad bytes for good",
    "deep-nesting": "the line nests too deeply for picompact to write it back whole",
    "v1-with-ids": "the header says v1 but the entries carry ids: migrating would replace them and flatten the tree",
    "extra-header": "a second session header would be lost (Pi keeps it in the file, outside the tree)",
}


def migration_refusal(session: Session) -> SessionError | None:
    """Why rewriting this file in v3 form would damage it, or None when it is safe."""
    for diag in session.diagnostics:
        reason = _UNSAFE_TO_MIGRATE.get(diag.code)
        if reason is not None:
            return SessionError(
                f"will not rewrite this v{session.original_version} file in v3 form: {reason} "
                "(open it in Pi once, or fix the file, then run picompact again)",
                path=str(session.path or "<session>"),
                line=diag.line,
                code="unsafe-migration",
            )
    return None


def _line(value: dict[str, object]) -> str:
    text = js_stringify(value)
    if text is None:  # only for undefined-like values; a dict always serialises
        raise ValueError("entry does not serialise to JSON")
    return text + "\n"


def rewrite_session(
    path: str | os.PathLike[str],
    lines: list[str],
    backup: bool = True,
    *,
    expected: Session | None = None,
    lock_timeout: float = DEFAULT_LOCK_TIMEOUT,
    in_lock: Callable[[], None] | None = None,
) -> WriteResult:
    """Replace the file's content with ``lines`` atomically (temp file, fsync, rename, fsync of the directory).

    The original stays as ``SESSION.bak`` unless ``backup`` is false; permissions and owner are kept. With
    ``expected``, the file must still be what was read (else SessionChangedError, nothing changed).
    """
    p = Path(os.path.realpath(path))  # replace the real file, never a symlink pointing at it
    data = "".join(lines).encode("utf-8", "surrogatepass")
    fd = open_session(p, os.O_RDONLY, "read")
    tmp: Path | None = None
    saved: Path | None = None
    try:
        with locked(fd, p, lock_timeout):
            if expected is not None:
                check_unchanged(fd, p, expected)
                check_header(fd, p, expected)
            st = os.fstat(fd)
            tmp = write_temp(p, data, st.st_mode & 0o7777, (st.st_uid, st.st_gid))
            if in_lock is not None:
                in_lock()
            with signals_deferred():
                if expected is not None:
                    check_unchanged(fd, p, expected)
                try:
                    if backup:
                        saved = make_backup(p)
                    os.replace(tmp, p)
                except OSError as exc:
                    raise os_error(exc, p) from None
                tmp = None
            fsync_dir(p.parent)
    finally:
        os.close(fd)
        if tmp is not None:
            with contextlib.suppress(OSError):
                tmp.unlink()
    return WriteResult(
        p,
        len(data),
        backup=saved,
        migrated_from=expected.original_version if expected is not None else None,
    )


def copy_content(session: Session, new_lines: list[str], *, repair: bool = False) -> bytes:
    """The bytes of a compacted copy: the original file (or its v3 migration) plus the new lines."""
    if session.path is None:
        raise UsageError("the session has no file to copy")
    tail = "".join(new_lines).encode("utf-8", "surrogatepass")
    if session.needs_migration:
        return "".join(migrated_lines(session)).encode("utf-8", "surrogatepass") + tail
    with open(session.path, "rb") as stream:
        original = stream.read(session.size + 1)
    if len(original) != session.size or original[-len(session.tail) :] != session.tail:
        raise SessionChangedError("the session file changed while picompact was working on it", path=str(session.path))
    prefix, _, _ = _separator(session, session.path, repair)
    return original + prefix + tail


def _names_a_descriptor(dest: str | os.PathLike[str]) -> bool:
    """Whether ``dest`` is a name for an open descriptor (``/dev/stdout``, ``/dev/fd/N``, ``/proc/self/fd/N``)
    rather than a link someone made to a file."""
    text = os.fspath(dest)
    if text in ("/dev/stdout", "/dev/stderr"):
        return True
    return any(text.startswith(p) and text[len(p) :].isdigit() for p in ("/dev/fd/", "/proc/self/fd/"))


def write_all(stream: BinaryIO, data: bytes) -> None:
    """Write all of ``data`` to ``stream`` (``streams.write_fully``) and flush it, or raise OSError. A regular file
    is synced too, since a filesystem that allocates on write-back reports a full disk only there."""
    write_fully(stream, data)
    stream.flush()
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return
    if stat.S_ISREG(os.fstat(fd).st_mode):
        os.fsync(fd)


def _write_special(target: Path, data: bytes) -> WriteResult:
    """``--output`` naming a device or a FIFO (``/dev/stdout``, a named pipe): write to it as a shell redirection
    would, never rename a file over it; a failed or short write is OutputWriteError."""
    try:
        with open(target, "wb") as stream:
            stream.write(data)
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise OutputWriteError(f"write error: {exc.strerror or exc}", path=str(target)) from None
    return WriteResult(target, len(data))


def write_copy(
    dest: str | os.PathLike[str],
    session: Session,
    new_lines: list[str],
    *,
    repair: bool = False,
    stream: BinaryIO | None = None,
) -> WriteResult:
    """Write the compacted copy to ``dest`` (temp file + rename), or to ``stream`` when ``dest`` is ``-``."""
    data = copy_content(session, new_lines, repair=repair)
    if str(dest) == "-":
        if stream is None:
            raise ValueError("write_copy to '-' needs the stream to write to")
        try:
            write_all(stream, data)
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputWriteError(
                f"write error: {exc.strerror or exc}; the copy written to stdout is incomplete", path="<stdout>"
            ) from None
        return WriteResult(Path("-"), len(data))
    try:
        found: os.stat_result | None = os.stat(dest)  # through symlinks: /dev/stdout is the pipe or file behind it
    except FileNotFoundError:
        found = None
    except OSError as exc:
        raise os_error(exc, Path(dest)) from None
    if found is not None and not stat.S_ISREG(found.st_mode) and not stat.S_ISDIR(found.st_mode):
        return _write_special(Path(dest), data)
    if found is None and os.path.islink(dest):  # a dangling link: writing through it would make its target
        raise UsageError(
            "--output is a symbolic link to nothing; name the file itself (picompact never writes through a link)",
            path=str(dest),
        )
    if found is not None and stat.S_ISREG(found.st_mode) and os.path.islink(dest):
        if not _names_a_descriptor(dest):
            raise UsageError(
                "--output is a symbolic link; name the file itself (picompact never writes through a link)",
                path=str(dest),
            )
        return _write_special(Path(dest), data)  # /dev/stdout redirected to a file: write it as the shell would
    target = Path(os.path.realpath(dest))
    source = session.path
    if source is not None and found is not None:
        with contextlib.suppress(OSError):
            if os.path.samefile(target, source):
                raise UsageError(
                    "--output names the session itself; leave --output out to append to it", path=str(target)
                )
    if found is not None and stat.S_ISDIR(found.st_mode):
        raise UsageError("--output is a directory; give a file name", path=str(target))
    if not target.parent.is_dir():
        raise UsageError("--output: the directory does not exist", path=str(target))
    mode = None
    if found is not None:  # replacing a file: it keeps its own permissions
        mode = found.st_mode & 0o7777
    elif source is not None:  # a new file: the session's (it holds the same text)
        with contextlib.suppress(OSError):
            mode = os.stat(source).st_mode & 0o777
    tmp = write_temp(target, data, mode, None)
    with discarded_on_failure(tmp, target), signals_deferred():
        os.replace(tmp, target)
    fsync_dir(target.parent)
    return WriteResult(target, len(data), migrated_from=session.original_version if session.needs_migration else None)
