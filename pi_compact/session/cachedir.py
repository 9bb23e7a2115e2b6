"""picompact's cache directory, ``$XDG_CACHE_HOME/picompact`` (or ``~/.cache/picompact``): where it is, opening it
without trusting it, the names of the session indexes in it, and reading, writing and tidying its files.

The cache may be shared (``XDG_CACHE_HOME`` pointing at a directory others can write), so nothing in it is trusted
for what it claims to be: the directory must be a real directory owned by the user (made mode 0700 whatever the
umask: ``open_cache``), and a file read from it a regular file owned by the user, opened without following a
symlink and without blocking (a FIFO planted at its name is refused at once), of at most the size the caller allows
(``read_bounded``). A file is written to a temporary file renamed over it (``write_new``), so two processes at once
each see a whole file or none; ``sweep`` deletes the temporaries of writes that did not finish (their process is
gone, or they are an hour old) and the indexes of sessions that are gone (no file at the path, or another file), so
that grep's index, which holds text of the session, does not outlive it.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import time
import zlib
from pathlib import Path

from pi_compact.session.index_format import OWNER_END, owner_head
from pi_compact.session.source import read_at

STALE_TEMPORARY_SECONDS = 3600  # a temporary file this old is an abandoned write, whoever made it
_INDEX_NAME = re.compile(r"[0-9a-f]{16}(?:\.grep)?\.idx")
_TEMPORARY_NAME = re.compile(r"\.tmp-(\d{1,10})-\d+-\d+\.idx")


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/picompact`` (when that is an absolute path), else ``~/.cache/picompact``."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".cache"
    return root / "picompact"


class _Digest:
    """CRC-32 and Adler-32 side by side (64 bits): a change in the bytes shows; zlib is loaded at start-up anyway,
    where hashlib would cost its import on every run. Nothing here guards against a forger: only files owned by the
    user are read (``read_bounded``), and who can write those can write the session file too."""

    def __init__(self, data: bytes = b"") -> None:
        self.crc = zlib.crc32(data)
        self.adler = zlib.adler32(data)

    def update(self, data: bytes) -> None:
        self.crc = zlib.crc32(data, self.crc)
        self.adler = zlib.adler32(data, self.adler)

    def hexdigest(self) -> str:
        return f"{self.crc:08x}{self.adler:08x}"


def index_name(path: Path, decorated: bool = False) -> str:
    """The name of a session path's index in the cache directory (two paths sharing one only take turns at it: the
    path is a key too). grep's index, which also holds every entry's decorated lines, is a file of its own."""
    kind = ".grep" if decorated else ""
    return f"{_Digest(os.fsencode(os.path.abspath(path))).hexdigest()}{kind}.idx"


def index_path(path: Path, decorated: bool = False) -> Path:
    """The index file of a session path (see ``index_name``)."""
    return cache_dir() / index_name(path, decorated)


def open_cache(create: bool) -> int | None:
    """The cache directory, opened (the caller closes it), if it is a directory owned by this user (not a symlink
    to one); None otherwise. ``create`` makes it (mode 0700, whatever the umask) and takes group and other
    permissions off one that has them. OSError when it cannot be made; RuntimeError when there is no home."""
    directory = cache_dir()
    created = False
    if create:
        _make_parents(directory.parent)
        try:
            os.mkdir(directory, 0o700)
        except FileExistsError:
            created = False  # there already: checked below like any other
        else:
            created = True
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(directory, flags)
    except PermissionError:
        if not created:
            return None
        os.chmod(directory, 0o700)  # an umask that takes the owner's own permissions away
        fd = os.open(directory, flags)
    except OSError:
        return None
    st = os.fstat(fd)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        os.close(fd)
        return None
    if create and stat.S_IMODE(st.st_mode) != 0o700:
        os.fchmod(fd, 0o700)
    return fd


def _make_parents(directory: Path) -> None:
    """Make ``directory`` and what is missing above it mode 0700, whatever the umask (``~/.cache``, made by
    picompact first, is then not open to others: the XDG base directory rule); existing ones are left alone."""
    missing: list[Path] = []
    while not directory.is_dir() and directory != directory.parent:
        missing.append(directory)
        directory = directory.parent
    for path in reversed(missing):
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            continue
        if stat.S_IMODE(os.stat(path).st_mode) != 0o700:
            os.chmod(path, 0o700)  # an umask that took the owner's own permissions away


def read_bounded(dir_fd: int, name: str, limit: int) -> bytes | None:
    """The whole of a file in the cache directory if it is a regular file owned by this user of at most ``limit``
    bytes; None for anything else (a symlink, a FIFO, a device, another user's file, a file too large)."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid() or st.st_size > limit:
            return None
        data = read_at(fd, st.st_size, 0)
        return data if len(data) == st.st_size else None
    finally:
        os.close(fd)


def write_new(dir_fd: int, name: str, data: bytes) -> None:
    """``data`` as the file ``name`` of the directory: written to a temporary file renamed over it."""
    tmp, out = _create_temporary(dir_fd)
    try:
        try:
            os.fchmod(out, 0o600)  # whatever the umask took away
            view = memoryview(data)
            while view:
                view = view[os.write(out, view) :]
        finally:
            os.close(out)
        os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp, dir_fd=dir_fd)
        raise


def _create_temporary(dir_fd: int) -> tuple[str, int]:
    """A new file in the directory that no other process has, and its descriptor open for writing (``tempfile``
    costs its imports at every first run). Its name holds the writer's pid, for ``sweep``."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for attempt in range(100):
        tmp = f".tmp-{os.getpid()}-{time.monotonic_ns()}-{attempt}.idx"
        try:
            return tmp, os.open(tmp, flags, 0o600, dir_fd=dir_fd)
        except FileExistsError:
            continue
    raise FileExistsError("no free temporary name in the cache directory")


def sweep(dir_fd: int, now: float) -> None:
    """Delete what the cache should not keep: temporaries of writes that did not finish (``_abandoned``) and
    indexes whose session is gone (``_orphaned``). Only names picompact writes are looked at."""
    with os.scandir(dir_fd) as listing:
        names = [item.name for item in listing]
    for name in names:
        temporary = _TEMPORARY_NAME.fullmatch(name)
        with contextlib.suppress(OSError):
            if (temporary and _abandoned(dir_fd, name, int(temporary[1]), now)) or (
                _INDEX_NAME.fullmatch(name) and _orphaned(dir_fd, name)
            ):
                os.unlink(name, dir_fd=dir_fd)


def _abandoned(dir_fd: int, name: str, pid: int, now: float) -> bool:
    """A temporary file an hour old, or whose writer (the pid in its name) has exited."""
    if now - os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mtime > STALE_TEMPORARY_SECONDS:
        return True
    if pid == os.getpid() or pid <= 0:
        return False
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists
    except ProcessLookupError:
        return True
    except (PermissionError, OverflowError):  # another user's process, or not a pid at all (the age decides)
        return False
    return False


def _orphaned(dir_fd: int, name: str) -> bool:
    """An index whose session file is gone (or another file now holds its path), or that is not a readable index
    of this format owned by this user at all. Only the owner record at its start is read."""
    try:
        fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    except OSError:
        return True  # a symlink, say: not something picompact wrote
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
            return True
        found = owner_head(read_at(fd, OWNER_END, 0))
        if found is None:
            return True  # not an index, or one of another version of picompact: this one would rebuild it anyway
        dev, ino, size = found
        session = read_at(fd, size, OWNER_END)
    finally:
        os.close(fd)
    try:
        stated = os.stat(session)
    except (FileNotFoundError, NotADirectoryError):
        return True
    except OSError:
        return False  # not readable now (permissions, a mount not there): kept, in doubt
    return (stated.st_dev, stated.st_ino) != (dev, ino)
