"""Files replaced whole, never left half written: the new content goes to a synced temporary file beside the
target, then is renamed over it, and the directory is synced after; a file's backup is a hard link to it. A write
that fails deletes its temporary file and raises a typed error (``os_error``).
"""

from __future__ import annotations

import contextlib
import errno
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path

from pi_compact.errors import ExternalError, SessionError, UsageError


def os_error(exc: OSError, target: Path) -> Exception:
    """A failed write as a typed error: permissions are the user's to fix (exit 2), the rest external (exit 3)."""
    if isinstance(exc, PermissionError):
        return SessionError("permission denied: cannot write here", path=str(target))
    if exc.errno in (errno.ENAMETOOLONG, errno.ELOOP, errno.ENOTDIR, errno.EISDIR):  # the name itself is unusable
        return UsageError(f"cannot write: {exc.strerror or exc}", path=str(target))
    return ExternalError(f"cannot write: {exc.strerror or exc}", path=str(target))


@contextlib.contextmanager
def discarded_on_failure(tmp: Path, target: Path) -> Iterator[None]:
    """Any failure within it deletes the temporary file ``tmp``; an OSError is raised as the typed error of writing
    ``target`` (``os_error``)."""
    try:
        yield
    except BaseException as exc:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(exc, OSError):
            raise os_error(exc, target) from None
        raise


def write_temp(target: Path, data: bytes, mode: int | None, owner: tuple[int, int] | None) -> Path:
    """A fully written, synced temp file next to ``target`` with the given permissions."""
    try:
        fd, name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".picompact-tmp", dir=target.parent)
    except OSError as exc:
        raise os_error(exc, target) from None
    tmp = Path(name)
    with discarded_on_failure(tmp, target):
        try:
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            if mode is not None:
                os.fchmod(fd, mode)
            if owner is not None:
                with contextlib.suppress(OSError):
                    os.fchown(fd, *owner)
            os.fsync(fd)
        finally:
            os.close(fd)
    return tmp


def fsync_dir(directory: Path) -> None:
    try:
        dfd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        with contextlib.suppress(OSError):  # some filesystems cannot sync a directory; the rename stands
            os.fsync(dfd)
    finally:
        os.close(dfd)


def backup_path(path: Path) -> Path:
    """``SESSION.bak``, or ``SESSION.bak.2``, ``.3``… when earlier backups exist (never overwrite one)."""
    candidate = path.with_name(path.name + ".bak")
    n = 2
    while candidate.exists() or candidate.is_symlink():
        candidate = path.with_name(f"{path.name}.bak.{n}")
        n += 1
    return candidate


def make_backup(path: Path) -> Path:
    target = backup_path(path)
    try:
        os.link(path, target)
    except OSError:
        import shutil

        shutil.copy2(path, target)
    return target
