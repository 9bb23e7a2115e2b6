"""The rules block of an instruction file: ``with_rules`` adds lines to it as bullets inside a marked block
(``BLOCK_BEGIN`` … ``BLOCK_END``, made at the end when there is none), never touching the text around it;
``write_rules`` writes the file, replaced atomically and keeping its mode; ``target_file`` is the file of a project
that ``picompact rules --write`` appends to, and ``check_target`` says why it would be refused.

The file written is always the regular file named in the project directory, never what a name points to: a
symbolic link (absolute, relative or dangling), a FIFO, a device, a directory or a file of more than
``MAX_FILE_BYTES`` is refused before anything is asked or written. The write holds a lock on the directory (other
``rules --write`` runs wait), writes a temporary file ``.picompact-rules-*`` beside the target, checks right before
the rename that the target is still the file that was read (the same inode and bytes; a file made meanwhile is
never replaced), and checks afterwards that nobody wrote to the old file in between (its bytes are put back if so).
Ctrl-C, SIGTERM and SIGHUP are held while the temporary file exists: one that arrives before the rename removes it
and nothing is written; a temporary file that a SIGKILL left is removed by the next write (under the lock, every
such file is stale).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import secrets
import signal
import stat
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TypedDict

from pi_compact.checkpoint.context_files import CONTEXT_FILE_NAMES
from pi_compact.errors import ConcurrentWriteError, ExternalError, PiCompactError, UsageError
from pi_compact.pi.sessions import os_reason
from pi_compact.pi.settings import expand_path
from pi_compact.session.jsonline import safe_text

BLOCK_BEGIN = "<!-- picompact rules: begin -->"
BLOCK_END = "<!-- picompact rules: end -->"
MAX_FILE_BYTES = 16 << 20  # an instruction file Pi puts whole into every prompt; anything bigger is not one
TEMP_PREFIX = ".picompact-rules-"
LOCK_TIMEOUT = 10.0
_HELD = {signal.SIGINT, signal.SIGTERM, signal.SIGHUP}
_OPEN = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def target_file(cwd: str) -> str:
    """The instruction file of ``cwd`` that Pi loads (the first of Pi's names that is a file), else the first of
    those names that is there as something else (a dangling link, a FIFO: ``check_target`` refuses it rather than
    writing beside it), else its AGENTS.md."""
    directory = expand_path(cwd)
    for name in CONTEXT_FILE_NAMES:
        path = os.path.join(directory, name)
        if os.path.isfile(path):
            return path
    for name in CONTEXT_FILE_NAMES:
        path = os.path.join(directory, name)
        if os.path.lexists(path):
            return path
    return os.path.join(directory, "AGENTS.md")


class RulesWrittenJSON(TypedDict):
    """``WriteResult.to_json()``: what ``rules --write`` appended, as ``rules --json`` reports it (``written``)."""

    path: str
    added: list[str]
    created_file: bool
    created_block: bool


@dataclass(frozen=True)
class WriteResult:
    """What ``write_rules`` did: the file, the lines added (those already in the block are not added again),
    whether it made the file or the block."""

    path: str
    added: list[str]
    created_file: bool
    created_block: bool

    def to_json(self) -> RulesWrittenJSON:
        return {
            "path": safe_text(self.path),
            "added": [safe_text(line) for line in self.added],
            "created_file": self.created_file,
            "created_block": self.created_block,
        }


def rule_line(line: str) -> str:
    """A suggestion as one bullet's text: its whitespace (newlines included) made single spaces, and the
    openers and closers of HTML comments written as entities (``&lt;!--``, ``--&gt;``), so that no sentence can
    end the block early, open a comment that hides the rest of the file, or pass for a marker. Markdown shows the
    entities as the characters they stand for."""
    return " ".join(line.split()).replace("<!--", "&lt;!--").replace("-->", "--&gt;")


def with_rules(text: str, lines: Sequence[str]) -> tuple[str, list[str], bool]:
    """``text`` with ``lines`` added as bullets to its rules block (made at the end when there is none); every
    other byte of ``text`` is kept. Returns the new text, the lines added (as written, ``rule_line``), and whether
    the block is new."""
    begin = text.find(BLOCK_BEGIN)
    end = text.find(BLOCK_END, begin + len(BLOCK_BEGIN)) if begin >= 0 else -1
    existing = text[begin:end] if begin >= 0 and end >= 0 else ""
    present = {_same(ln.strip().lstrip("-* ").strip()) for ln in existing.splitlines()}
    added: list[str] = []
    for line in lines:
        line = rule_line(line)
        if line and _same(line) not in present and _same(line) not in {_same(a) for a in added}:
            added.append(line)
    if not added:
        return text, [], False
    bullets = "".join(f"- {line}\n" for line in added)
    if begin >= 0 and end >= 0:
        head = text[:end]
        if head and not head.endswith("\n"):
            head += "\n"
        return head + bullets + text[end:], added, False
    newline = "" if not text or text.endswith("\n") else "\n"
    gap = "\n" if text.strip() else ""
    return f"{text}{newline}{gap}{BLOCK_BEGIN}\n{bullets}{BLOCK_END}\n", added, True


def _same(line: str) -> str:
    """A bullet as compared with the lines already in the block: case and end punctuation aside."""
    return line.casefold().rstrip(" .!")


def rules_diff(path: str | os.PathLike[str], lines: Sequence[str]) -> tuple[str, list[str]]:
    """What ``write_rules(path, lines)`` would change, as a unified diff of the file (empty when nothing would
    change), and the lines it would add; nothing is written. Refuses what ``write_rules`` refuses."""
    import difflib

    where = os.path.abspath(os.fspath(path))
    directory, name = os.path.split(where)
    dfd = _open_dir(directory, where)
    try:
        target = _open_target(name, dfd, where)
        try:
            before = _read_all(target[0], where).decode("utf-8", errors="surrogateescape") if target else ""
        finally:
            if target is not None:
                os.close(target[0])
    finally:
        os.close(dfd)
    after, added, _ = with_rules(before, lines)
    if not added:
        return "", []
    label = safe_text(where)
    diff = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile=label if target is not None else "/dev/null",
        tofile=label,
    )
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in diff), added


# ---------------------------------------------------------------------------------------------------------------
# What may be written


def _kind_refusal(st: os.stat_result, link: str | None) -> str | None:
    """Why a directory entry of this kind is not written (None: a regular file)."""
    mode = st.st_mode
    if stat.S_ISLNK(mode):
        to = f" to {link!r}" if link is not None else ""
        return (
            f"is a symbolic link{to}; picompact writes only a regular file in the project, never through a link "
            "(make it a file, or add the lines yourself): nothing written"
        )
    if stat.S_ISREG(mode):
        if st.st_size > MAX_FILE_BYTES:
            return f"is larger than {MAX_FILE_BYTES:,} bytes: not an instruction file picompact edits; nothing written"
        return None
    what = (
        "a directory"
        if stat.S_ISDIR(mode)
        else "a named pipe (FIFO)"
        if stat.S_ISFIFO(mode)
        else "a device"
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
        else "a socket"
        if stat.S_ISSOCK(mode)
        else "not a regular file"
    )
    return f"is {what}, not a regular file; nothing written"


def _lstat(name: str, dfd: int, where: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise PiCompactError(f"cannot read: {os_reason(exc)}", path=where) from None


def _refuse(st: os.stat_result | None, name: str, dfd: int, where: str) -> None:
    if st is None:
        return
    link = None
    if stat.S_ISLNK(st.st_mode):
        with contextlib.suppress(OSError):
            link = os.readlink(name, dir_fd=dfd)
    reason = _kind_refusal(st, link)
    if reason is not None:
        raise UsageError(reason, path=where)


def _open_dir(directory: str, where: str) -> int:
    try:
        return os.open(directory, os.O_RDONLY | os.O_DIRECTORY | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise UsageError(f"cannot open its directory: {os_reason(exc)}", path=where) from None


def check_target(path: str | os.PathLike[str]) -> None:
    """UsageError when ``write_rules`` would refuse ``path`` for what it is (a link, not a regular file, too big);
    a missing file is fine (it is made). Nothing is opened but the directory."""
    where = os.path.abspath(os.fspath(path))
    directory, name = os.path.split(where)
    dfd = _open_dir(directory, where)
    try:
        _refuse(_lstat(name, dfd, where), name, dfd, where)
    finally:
        os.close(dfd)


# ---------------------------------------------------------------------------------------------------------------
# Writing


@contextlib.contextmanager
def _dir_locked(dfd: int, where: str, timeout: float) -> Iterator[None]:
    """An exclusive flock on the directory (released by the kernel if we die): one ``rules --write`` at a time."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            fcntl.flock(dfd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            break
        except OSError as exc:
            if exc.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                break  # a filesystem without flock: the checks before the rename still hold
            if time.monotonic() >= deadline:
                raise ConcurrentWriteError(
                    f"another picompact has been writing here for over {timeout:g}s: nothing written", path=where
                ) from None
            time.sleep(0.02)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(dfd, fcntl.LOCK_UN)


def _remove_stale_temps(dfd: int) -> None:
    """Under the lock no other write has a temporary file here: any ``.picompact-rules-*`` file of ours is what a
    killed write left."""
    with contextlib.suppress(OSError), os.scandir(dfd) as listing:
        names = [e.name for e in listing if e.name.startswith(TEMP_PREFIX)]
    for name in names:
        with contextlib.suppress(OSError):
            st = os.stat(name, dir_fd=dfd, follow_symlinks=False)
            if stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid():
                os.unlink(name, dir_fd=dfd)


def _open_target(name: str, dfd: int, where: str) -> tuple[int, os.stat_result] | None:
    """The target opened for reading (never through a link, never blocking on a FIFO), checked to be the regular
    file looked at; None when there is none."""
    st = _lstat(name, dfd, where)
    _refuse(st, name, dfd, where)
    if st is None:
        return None
    try:
        fd = os.open(name, _OPEN, dir_fd=dfd)
    except FileNotFoundError:
        raise ConcurrentWriteError("disappeared while picompact was reading it: nothing written", path=where) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            _refuse(_lstat(name, dfd, where), name, dfd, where)
        raise PiCompactError(f"cannot read: {os_reason(exc)}", path=where) from None
    opened = os.fstat(fd)
    if (opened.st_dev, opened.st_ino) != (st.st_dev, st.st_ino) or _kind_refusal(opened, None) is not None:
        os.close(fd)
        raise ConcurrentWriteError("was replaced while picompact was reading it: nothing written", path=where)
    return fd, opened


def _read_all(fd: int, where: str) -> bytes:
    """The file's bytes from the start, at most ``MAX_FILE_BYTES`` (a file that grows past it is refused)."""
    data = bytearray()
    offset = 0
    try:
        while chunk := os.pread(fd, MAX_FILE_BYTES + 1 - len(data), offset):
            data += chunk
            offset += len(chunk)
            if len(data) > MAX_FILE_BYTES:
                raise UsageError(f"is larger than {MAX_FILE_BYTES:,} bytes: nothing written", path=where)
    except OSError as exc:
        raise PiCompactError(f"cannot read: {os_reason(exc)}", path=where) from None
    return bytes(data)


def _write_temp(dfd: int, data: bytes, mode: int, owner: tuple[int, int] | None, where: str) -> str:
    """A synced temporary file beside the target, with its mode (and owner, when allowed)."""
    for _ in range(100):
        name = f"{TEMP_PREFIX}{os.getpid()}-{secrets.token_hex(4)}"
        try:
            fd = os.open(name, _CREATE, 0o600, dir_fd=dfd)
            break
        except FileExistsError:
            continue
        except OSError as exc:
            raise PiCompactError(f"cannot write beside it: {os_reason(exc)}", path=where) from None
    else:
        raise PiCompactError("cannot write beside it: no free temporary name", path=where)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fchmod(fd, mode)
            if owner is not None:
                with contextlib.suppress(OSError):
                    os.fchown(fd, *owner)
            os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(name, dir_fd=dfd)
        if isinstance(exc, OSError):
            raise ExternalError(f"cannot write beside it: {os_reason(exc)}", path=where) from None
        raise
    return name


@contextlib.contextmanager
def _signals_held() -> Iterator[Callable[[], bool]]:
    """Ctrl-C, SIGTERM and SIGHUP held while the temporary file exists; yields "has one arrived?". Once released,
    a held signal takes effect (the file is then written whole, or not at all)."""
    old = signal.pthread_sigmask(signal.SIG_BLOCK, _HELD)
    try:
        yield lambda: bool(signal.sigpending() & _HELD)
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _changed(name: str, dfd: int, target: tuple[int, os.stat_result] | None, before: bytes, where: str) -> str | None:
    """What happened to the target since it was read, or None when it is still the same file with the same bytes."""
    now = _lstat(name, dfd, where)
    if target is None:
        return None if now is None else "was made while picompact was writing it"
    fd, st = target
    if now is None:
        return "was removed while picompact was writing it"
    if (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
        return "was replaced while picompact was writing it"
    again = os.fstat(fd)
    if again.st_size != len(before) or again.st_mtime_ns != st.st_mtime_ns or _read_all(fd, where) != before:
        return "changed while picompact was writing it"
    return None


def _put_back(dfd: int, name: str, fd: int, ours: os.stat_result, where: str) -> None:
    """A write that reached the old file between the last check and the rename: its bytes go back under the
    name, over ours (if the name is still ours), so that nothing anyone wrote is lost."""
    data = _read_all(fd, where)
    st = os.fstat(fd)
    temp = _write_temp(dfd, data, st.st_mode & 0o7777, (st.st_uid, st.st_gid), where)
    try:
        now = _lstat(name, dfd, where)
        if now is not None and (now.st_dev, now.st_ino) == (ours.st_dev, ours.st_ino):
            os.replace(temp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
            temp = ""
    finally:
        if temp:
            with contextlib.suppress(OSError):
                os.unlink(temp, dir_fd=dfd)


def _install(dfd: int, temp: str, name: str, exists: bool, where: str) -> None:
    """The temporary file under the target's name: renamed over the file read, or, for a new file, linked to
    the name, which fails rather than replace a file made meanwhile."""
    try:
        if exists:
            os.replace(temp, name, src_dir_fd=dfd, dst_dir_fd=dfd)
            return
        try:
            os.link(temp, name, src_dir_fd=dfd, dst_dir_fd=dfd, follow_symlinks=False)
        except FileExistsError:
            raise ConcurrentWriteError("was made while picompact was writing it: nothing written", path=where) from None
        except OSError as exc:
            if exc.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EMLINK, errno.EXDEV):
                raise
            os.replace(temp, name, src_dir_fd=dfd, dst_dir_fd=dfd)  # no hard links here: checked just before
            return
        os.unlink(temp, dir_fd=dfd)
    except OSError as exc:
        raise ExternalError(f"cannot write: {os_reason(exc)}", path=where) from None


def write_rules(
    path: str | os.PathLike[str],
    lines: Sequence[str],
    *,
    in_lock: Callable[[], None] | None = None,
    lock_timeout: float = LOCK_TIMEOUT,
) -> WriteResult:
    """Append ``lines`` to the rules block of the instruction file at ``path`` (made when missing): the regular
    file of that name, never a link's target (``check_target``'s refusals are UsageError). The new content goes
    to a temporary file beside it, renamed over it with its mode; a file changed meanwhile is left as it is
    (ConcurrentWriteError, exit 3). ``in_lock`` is called with the temporary file written, just before the last
    check (a test pauses there)."""
    where = os.path.abspath(os.fspath(path))
    directory, name = os.path.split(where)
    dfd = _open_dir(directory, where)
    try:
        with _dir_locked(dfd, where, lock_timeout):
            _remove_stale_temps(dfd)
            target = _open_target(name, dfd, where)
            try:
                return _write_locked(dfd, name, target, lines, where, in_lock)
            finally:
                if target is not None:
                    os.close(target[0])
    finally:
        os.close(dfd)


def _write_locked(
    dfd: int,
    name: str,
    target: tuple[int, os.stat_result] | None,
    lines: Sequence[str],
    where: str,
    in_lock: Callable[[], None] | None,
) -> WriteResult:
    before = _read_all(target[0], where) if target is not None else b""
    new, added, created_block = with_rules(before.decode("utf-8", errors="surrogateescape"), lines)
    if not added:
        return WriteResult(where, [], False, False)
    data = new.encode("utf-8", errors="surrogateescape")
    if target is not None:
        st = target[1]
        mode, owner = st.st_mode & 0o7777, (st.st_uid, st.st_gid)
    else:
        umask = os.umask(0)
        os.umask(umask)
        mode, owner = 0o666 & ~umask, None
    with _signals_held() as interrupted:
        temp = _write_temp(dfd, data, mode, owner, where)
        try:
            if in_lock is not None:
                in_lock()
            changed = None if interrupted() else _changed(name, dfd, target, before, where)
            if changed is not None:
                raise ConcurrentWriteError(f"{changed}: nothing written", path=where)
            ours = None if interrupted() else os.stat(temp, dir_fd=dfd, follow_symlinks=False)
            if ours is not None:
                _install(dfd, temp, name, target is not None, where)
                temp = ""
        finally:
            if temp:
                with contextlib.suppress(OSError):
                    os.unlink(temp, dir_fd=dfd)
        if ours is not None:
            with contextlib.suppress(OSError):
                os.fsync(dfd)
            if target is not None and _late_write(target, before, where):
                _put_back(dfd, name, target[0], ours, where)
                raise ConcurrentWriteError(
                    "changed while picompact was writing it: its new content is kept, the lines were not added",
                    path=where,
                )
            return WriteResult(where, added, target is None, created_block)
    # a held signal arrived before the rename: the temporary file is gone, and the signal takes effect now
    raise ExternalError("interrupted before the file was replaced: nothing written", path=where)


def _late_write(target: tuple[int, os.stat_result], before: bytes, where: str) -> bool:
    """Whether the old file was written to after the last check (the bytes are no longer those read)."""
    fd, st = target
    again = os.fstat(fd)
    return again.st_size != len(before) or again.st_mtime_ns != st.st_mtime_ns or _read_all(fd, where) != before
