"""The rules block of an instruction file: ``with_rules`` adds lines to it as bullets inside a marked block
(``BLOCK_BEGIN`` … ``BLOCK_END``, made at the end when there is none), never touching the text around it;
``write_rules`` writes the file, replaced atomically and keeping its mode; ``target_file`` is the file of a project
that ``picompact rules --write`` appends to."""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypedDict

from pi_compact.checkpoint.context_files import CONTEXT_FILE_NAMES
from pi_compact.errors import ConcurrentWriteError, PiCompactError
from pi_compact.pi.sessions import os_reason
from pi_compact.pi.settings import expand_path
from pi_compact.session.jsonline import safe_text

BLOCK_BEGIN = "<!-- picompact rules: begin -->"
BLOCK_END = "<!-- picompact rules: end -->"


def target_file(cwd: str) -> str:
    """The instruction file of ``cwd`` that Pi loads (the first that exists of Pi's names), else its AGENTS.md."""
    directory = expand_path(cwd)
    for name in CONTEXT_FILE_NAMES:
        path = os.path.join(directory, name)
        if os.path.isfile(path):
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


def with_rules(text: str, lines: Sequence[str]) -> tuple[str, list[str], bool]:
    """``text`` with ``lines`` added as bullets to its rules block (made at the end when there is none); every
    other byte of ``text`` is kept. Returns the new text, the lines added, and whether the block is new."""
    begin = text.find(BLOCK_BEGIN)
    end = text.find(BLOCK_END, begin + len(BLOCK_BEGIN)) if begin >= 0 else -1
    existing = text[begin:end] if begin >= 0 and end >= 0 else ""
    present = {ln.strip().lstrip("-* ").strip() for ln in existing.splitlines()}
    added: list[str] = []
    for line in lines:
        line = " ".join(line.split())
        if line and line not in present and line not in added:
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


def write_rules(path: str | os.PathLike[str], lines: Sequence[str]) -> WriteResult:
    """Append ``lines`` to the rules block of the instruction file at ``path`` (created when missing). The file is
    written to a temporary file beside it and renamed over it, with its mode; a file changed while this ran is
    left as it is (ConcurrentWriteError)."""
    where = os.path.realpath(os.fspath(path))
    try:
        with open(where, "rb") as handle:
            before = handle.read()
        mode: int | None = os.stat(where).st_mode & 0o7777
    except FileNotFoundError:
        before, mode = b"", None
    except OSError as exc:
        raise PiCompactError(f"cannot read: {os_reason(exc)}", path=where) from None
    text = before.decode("utf-8", errors="surrogateescape")
    new, added, created_block = with_rules(text, lines)
    if not added:
        return WriteResult(where, [], False, False)
    existed = mode is not None
    directory = os.path.dirname(where)
    try:
        fd, temp = tempfile.mkstemp(prefix=".picompact-rules-", dir=directory)
    except OSError as exc:
        raise PiCompactError(f"cannot write beside it: {os_reason(exc)}", path=where) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(new.encode("utf-8", errors="surrogateescape"))
            handle.flush()
            os.fsync(handle.fileno())
        if mode is None:
            umask = os.umask(0)
            os.umask(umask)
            mode = 0o666 & ~umask
        os.chmod(temp, mode)
        try:
            with open(where, "rb") as handle:
                now = handle.read()
        except FileNotFoundError:
            now = b""
        if now != before:
            raise ConcurrentWriteError("changed while picompact was writing to it: nothing written", path=where)
        os.replace(temp, where)
    except OSError as exc:
        _unlink(temp)
        raise PiCompactError(f"cannot write: {os_reason(exc)}", path=where) from None
    except BaseException:
        _unlink(temp)
        raise
    return WriteResult(where, added, not existed, created_block)


def _unlink(path: str) -> None:
    with contextlib.suppress(OSError):
        os.unlink(path)
