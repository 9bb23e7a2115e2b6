"""Typed errors and exit codes.

Core modules raise these; only the CLI turns them into a message and an exit status.
"""

from __future__ import annotations

from collections.abc import Callable
from enum import IntEnum


class ExitCode(IntEnum):
    """Exit codes shared by every command (documented in docs/json.md)."""

    OK = 0
    NO = 1  # check: compaction needed; grep: no match; lookup: nothing found
    USAGE = 2  # usage or input error
    EXTERNAL = 3  # provider failure, lock timeout, file changed underneath
    INTERNAL = 70  # a bug in picompact (an unexpected exception); sysexits.h's EX_SOFTWARE
    INTERRUPTED = 130


class PiCompactError(Exception):
    """Base class: a problem the user can act on, with the file and line when known."""

    exit_code: ExitCode = ExitCode.USAGE
    code: str | None = None  # a stable machine name for the problem, when it has one (``picompact lint``)

    def __init__(
        self, message: str, *, path: str | None = None, line: int | None = None, code: str | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.path = path
        self.line = line
        if code is not None:
            self.code = code

    def __str__(self) -> str:
        where = ""
        if self.path is not None:
            where = f"{self.path}:{self.line}: " if self.line is not None else f"{self.path}: "
        return f"{where}{self.message}"


class UsageError(PiCompactError):
    """Flags or settings that make no sense together, or an out-of-range value."""


class OptionError(UsageError):
    """An option value (or a combination) that makes no sense, naming the option fields involved.

    The message reads ``"<fields> <text>"``; ``message_for(flag)`` rewrites it with other names for the fields (the
    CLI's flags), so the check itself lives once, in the options dataclass.
    """

    def __init__(self, fields: tuple[str, ...], text: str) -> None:
        self.fields = fields
        self.text = text
        super().__init__(f"{' and '.join(fields)} {text}")

    def message_for(self, flag: Callable[[str], str]) -> str:
        return f"{' and '.join(flag(f) for f in self.fields)} {self.text}"


class SessionError(PiCompactError):
    """The session file cannot be read as a Pi session (fatal, exit 2)."""


class NotFoundError(SessionError):
    """A file, session or entry id that does not exist."""


class FileChangedError(SessionError):
    """An entry read back from the session file is no longer the entry first read there (the file was changed in
    place). ``index_used``: the load resumed from picompact's index of the file, which is deleted by then, so that
    the answer can be given again from the file alone (the CLI does so)."""

    code = "changed-on-disk"

    def __init__(self, message: str, *, path: str | None = None, line: int | None = None, index_used: bool) -> None:
        super().__init__(message, path=path, line=line)
        self.index_used = index_used


class CycleError(SessionError):
    """A parentId cycle: Pi would hang on it, so picompact refuses."""

    code = "parent-cycle"


class SettingsError(PiCompactError):
    """Invalid settings, or a context window that cannot be resolved."""


class InstallError(PiCompactError):
    """The extension's install would overwrite or remove something picompact did not write (exit 2)."""


class NothingToCompactError(PiCompactError):
    """The leaf is already a compaction, or the cut keeps everything."""


class CompactionRefusedError(PiCompactError):
    """A compaction whose result would make Pi compact again at once (``--force`` writes it anyway)."""


class PatternError(PiCompactError):
    """An invalid regular expression, or one that timed out."""


class CursorError(PiCompactError):
    """A pagination cursor that is malformed or belongs to a changed file."""


class ExternalError(PiCompactError):
    """Something outside picompact failed (exit 3)."""

    exit_code = ExitCode.EXTERNAL


class OutputWriteError(ExternalError):
    """picompact's own output could not be written (a full disk, an I/O error): exit 3, never a success."""

    code = "write-error"


class ConcurrentWriteError(ExternalError):
    """Another process changed the session while picompact was writing to it."""


class ProviderError(ExternalError):
    """The LLM provider failed, timed out or answered with something unusable."""
