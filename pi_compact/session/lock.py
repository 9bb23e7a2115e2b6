"""What a write to a session holds while it writes, and checks under it: an exclusive lock on the file (other
picompact runs wait; Pi itself does not lock), the file still the one that was read (the same inode, size and last
bytes, its header still a session header), and Ctrl-C held off while the bytes go out. A file that changed raises
``SessionChangedError``: nothing is written, and the caller re-reads, re-plans and tries again.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

from pi_compact.errors import ConcurrentWriteError, ExternalError, SessionError
from pi_compact.session.entries import Session
from pi_compact.session.load import parse_json_line
from pi_compact.session.source import read_at

DEFAULT_LOCK_TIMEOUT = 10.0
HEADER_SCAN_BYTES = 1024 * 1024


class SessionChangedError(ConcurrentWriteError):
    """The file is not what was read any more (someone appended or rewrote it): re-read and re-plan."""


class LockTimeoutError(ConcurrentWriteError):
    """Another process held the lock on the session for longer than the wait allowed."""


def open_session(path: Path, flags: int, access: str) -> int:
    """The session file opened with ``flags``: SessionChangedError when it is gone, SessionError when this user may
    not ``access`` it ("read", "write")."""
    try:
        return os.open(path, flags | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise SessionChangedError("the session file disappeared", path=str(path)) from None
    except PermissionError:
        raise SessionError(f"permission denied: cannot {access} the session file", path=str(path)) from None


@contextlib.contextmanager
def locked(fd: int, path: Path, timeout: float) -> Iterator[None]:
    """An exclusive flock on ``fd``, waiting at most ``timeout`` seconds (released by the kernel if we die)."""
    deadline = time.monotonic() + max(timeout, 0.0)
    delay = 0.005
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                raise ExternalError(f"cannot lock the session file: {exc.strerror}", path=str(path)) from None
            if time.monotonic() >= deadline:
                raise LockTimeoutError(
                    f"another process has held the lock on this session for over {timeout:g}s; nothing was written "
                    "(is another picompact running?)",
                    path=str(path),
                ) from None
            time.sleep(delay)
            delay = min(delay * 2, 0.1)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(fd, fcntl.LOCK_UN)


@contextlib.contextmanager
def signals_deferred() -> Iterator[None]:
    """Hold Ctrl-C and SIGTERM while the bytes go out, so a write is never abandoned half way by our own handler.

    A Ctrl-C that arrives during the write is consumed: the write it came too late to stop has succeeded.
    SIGTERM stays pending and takes effect afterwards. (SIGKILL cannot be held; one write() keeps that safe too.)
    """
    blockable = hasattr(signal, "pthread_sigmask")
    mask = {signal.SIGINT, signal.SIGTERM}
    old = signal.pthread_sigmask(signal.SIG_BLOCK, mask) if blockable else None
    try:
        yield
    finally:
        if blockable:
            if signal.SIGINT in signal.sigpending():
                with contextlib.suppress(OSError, ValueError):
                    signal.sigtimedwait({signal.SIGINT}, 0)
            signal.pthread_sigmask(signal.SIG_SETMASK, old)  # type: ignore[arg-type]


def _header_is_valid(fd: int) -> bool:
    """The first parsed line is still a session header (blank and malformed lines skipped, as Pi skips them)."""
    offset = 0
    pending = b""
    while offset < HEADER_SCAN_BYTES:
        chunk = os.pread(fd, 65536, offset)
        if not chunk:
            break
        offset += len(chunk)
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            verdict = _header_verdict(line)
            if verdict is not None:
                return verdict
    return _header_verdict(pending) is True


def _header_verdict(line: bytes) -> bool | None:
    """True/False once a line parses; None to keep scanning (blank, malformed or falsy line)."""
    if not line.strip():
        return None
    try:
        value = parse_json_line(line)
    except ValueError:  # UnicodeDecodeError included
        return None
    if not value:
        return None
    return isinstance(value, dict) and value.get("type") == "session" and isinstance(value.get("id"), str)


def _same_file(fd: int, path: Path) -> bool:
    """The path still names the file we opened (not renamed over by a rewrite meanwhile)."""
    try:
        a, b = os.fstat(fd), os.stat(path)
    except FileNotFoundError:
        return False
    return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)


def check_unchanged(fd: int, path: Path, expected: Session) -> None:
    """Raise SessionChangedError unless the open file is exactly as big as read and ends in the same bytes."""
    where = str(path)
    if not _same_file(fd, path):
        raise SessionChangedError("the session file was replaced while picompact was working on it", path=where)
    size = os.fstat(fd).st_size
    if size != expected.size:
        raise SessionChangedError(
            f"the session file changed while picompact was working on it ({expected.size} bytes read, now {size})",
            path=where,
        )
    tail_len = min(len(expected.tail), size)
    if tail_len and read_at(fd, tail_len, size - tail_len) != expected.tail[-tail_len:]:
        raise SessionChangedError("the session file changed while picompact was working on it", path=where)


def check_header(fd: int, path: Path, expected: Session) -> None:
    header = expected.header
    if not (isinstance(header, dict) and header.get("type") == "session" and isinstance(header.get("id"), str)):
        raise SessionError("no valid session header: refusing to write", path=str(path), line=1)
    if not _header_is_valid(fd):
        raise SessionChangedError("the session header is no longer valid: refusing to write", path=str(path), line=1)
