"""What ``picompact rules --write`` was told, so that it does not ask again: the lines the user refused and the
lines it wrote, per instruction file, in ``rules-decisions.json`` of picompact's cache directory (beside the search
index, ``sessions.sqlite3``).

A suggestion that states a refused line, or a line written before (since deleted from the block by the user: one
still in the file is left out anyway, as the file states it), is not suggested again (``find_rules``'s
``refused`` and ``written``). The file is JSON, mode 0600, replaced atomically (a temporary file renamed over it)
under a lock on the cache directory, so two runs at once both keep what they add; it is read only if it is a
regular file owned by the user, of at most ``MAX_BYTES``. A file that cannot be read as such counts as empty, with
a warning; it is replaced at the next write.

    {"version": 1, "files": {"/abs/AGENTS.md": {"refused": {"line": "2026-12-02T18:00:00Z"},
                                                "written": {"line": "2026-12-02T18:00:00Z"}}}}
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import orjson

from pi_compact.errors import ExternalError
from pi_compact.pi.sessions import os_reason
from pi_compact.session import cachedir

NAME = "rules-decisions.json"
MAX_BYTES = 8 << 20
MAX_LINES = 2000  # per file and kind: the newest kept


@dataclass(frozen=True)
class Decisions:
    """The lines refused and written for one instruction file (oldest first), and why the record could not be
    read, if it could not."""

    refused: tuple[str, ...] = ()
    written: tuple[str, ...] = ()
    warning: str | None = None


def decisions_path() -> str:
    """Where the decisions are kept: ``$XDG_CACHE_HOME/picompact/rules-decisions.json``."""
    return str(cachedir.cache_dir() / NAME)


def _parse(data: bytes | None) -> tuple[dict[str, Any], str | None]:
    if data is None:
        return {}, None
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        return {}, f"{decisions_path()}: not JSON ({exc}): read as empty, replaced at the next --write"
    files = doc.get("files") if isinstance(doc, dict) else None
    if not isinstance(files, dict):
        return {}, f"{decisions_path()}: not a decisions file: read as empty, replaced at the next --write"
    return files, None


def _read(dfd: int) -> tuple[dict[str, Any], str | None]:
    try:
        os.stat(NAME, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return {}, None
    except OSError as exc:
        return {}, f"{decisions_path()}: cannot read ({os_reason(exc)}): read as empty"
    data = cachedir.read_bounded(dfd, NAME, MAX_BYTES)
    if data is None:
        return {}, (
            f"{decisions_path()}: not a regular file of yours of at most {MAX_BYTES:,} bytes: read as empty, "
            "replaced at the next --write"
        )
    return _parse(data)


def _lines(entry: Any, kind: str) -> tuple[str, ...]:
    if not isinstance(entry, dict):
        return ()
    found = entry.get(kind)
    if not isinstance(found, dict):
        return ()
    return tuple(line for line in found if isinstance(line, str))


def load_decisions(target: str) -> Decisions:
    """The decisions recorded for the instruction file ``target`` (an absolute path)."""
    try:
        dfd = cachedir.open_cache(create=False)
    except (OSError, RuntimeError):
        return Decisions()
    if dfd is None:
        return Decisions()
    try:
        files, warning = _read(dfd)
    finally:
        os.close(dfd)
    entry = files.get(os.path.abspath(target))
    return Decisions(_lines(entry, "refused"), _lines(entry, "written"), warning)


@contextlib.contextmanager
def _locked(dfd: int) -> Iterator[None]:
    fcntl.flock(dfd, fcntl.LOCK_EX)
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            fcntl.flock(dfd, fcntl.LOCK_UN)


def record_decisions(target: str, *, refused: Sequence[str] = (), written: Sequence[str] = ()) -> None:
    """Add these lines to what is recorded for ``target`` (each with the time). ExternalError when the cache
    directory cannot be made or written."""
    if not refused and not written:
        return
    now = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    try:
        dfd = cachedir.open_cache(create=True)
    except (OSError, RuntimeError) as exc:
        raise ExternalError(f"cannot make the cache directory: {exc}", path=str(cachedir.cache_dir())) from None
    if dfd is None:
        raise ExternalError("not a directory owned by you: decisions not kept", path=str(cachedir.cache_dir()))
    try:
        with _locked(dfd):
            files, _ = _read(dfd)
            entry = files.get(os.path.abspath(target))
            entry = dict(entry) if isinstance(entry, dict) else {}
            for kind, lines in (("refused", refused), ("written", written)):
                kept = entry.get(kind)
                kept = {k: v for k, v in kept.items() if isinstance(k, str)} if isinstance(kept, dict) else {}
                for line in lines:
                    kept.pop(line, None)
                    kept[line] = now
                entry[kind] = dict(list(kept.items())[-MAX_LINES:])
            files[os.path.abspath(target)] = entry
            data = orjson.dumps({"version": 1, "files": files}, option=orjson.OPT_INDENT_2)
            cachedir.write_new(dfd, NAME, data)
    except OSError as exc:
        raise ExternalError(f"cannot write: {os_reason(exc)}", path=decisions_path()) from None
    finally:
        os.close(dfd)
