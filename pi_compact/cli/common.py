"""What every command shares: the output environment, error handling, and finding the session.

Only modules in ``pi_compact.cli`` print, colour or exit.
"""

from __future__ import annotations

import functools
import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import orjson
import typer

from pi_compact.errors import ExitCode, NotFoundError, PiCompactError, UsageError

F = TypeVar("F", bound=Callable[..., Any])

JSON_SCHEMA_VERSION = 1


class Output:
    """Owns stdout/stderr, TTY detection and colour (NO_COLOR respected), like httpie's Environment."""

    def __init__(self, json_mode: bool = False) -> None:
        self.json_mode = json_mode
        self.stdout_isatty = sys.stdout.isatty()
        self.stderr_isatty = sys.stderr.isatty()
        self.color = self.stdout_isatty and "NO_COLOR" not in os.environ and os.environ.get("TERM") != "dumb"
        self._console: Any = None
        self._err_console: Any = None

    @property
    def console(self) -> Any:
        """A rich Console for stdout, created on first use (rich is slow to import)."""
        if self._console is None:
            from rich.console import Console

            self._console = Console(
                file=sys.stdout,
                no_color=not self.color,
                force_terminal=self.color or None,
                highlight=False,
                soft_wrap=not self.stdout_isatty,
                emoji=False,
                markup=False,
            )
        return self._console

    def json(self, data: Any) -> None:
        """One JSON document on stdout."""
        sys.stdout.buffer.write(orjson.dumps(data, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS) + b"\n")
        sys.stdout.buffer.flush()

    def jsonl(self, data: Any) -> None:
        """One JSON Lines record on stdout."""
        sys.stdout.buffer.write(orjson.dumps(data, option=orjson.OPT_NON_STR_KEYS) + b"\n")

    def text(self, line: str = "") -> None:
        sys.stdout.write(line + "\n")

    def warn(self, message: str) -> None:
        sys.stderr.write(f"picompact: warning: {message}\n")

    def note(self, message: str) -> None:
        sys.stderr.write(f"picompact: {message}\n")


def fail(message: str, code: int = ExitCode.USAGE, json_mode: bool = False) -> typer.Exit:
    """Report an error the documented way and return the Exit to raise."""
    if json_mode:
        out = {"error": {"message": message, "exit_code": int(code)}}
        sys.stdout.buffer.write(orjson.dumps(out, option=orjson.OPT_INDENT_2) + b"\n")
        sys.stdout.buffer.flush()
    sys.stderr.write(f"picompact: error: {message}\n")
    return typer.Exit(int(code))


def debug_enabled() -> bool:
    return os.environ.get("PICOMPACT_DEBUG", "") not in ("", "0")


def handle_errors(func: F) -> F:
    """Turn typed errors into ``picompact: error: …`` and their exit code; hide unexpected tracebacks.

    Locals are never shown: they hold session text and maybe secrets.
    """

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        json_mode = bool(kwargs.get("json_output", False))
        try:
            return func(*args, **kwargs)
        except typer.Exit:
            raise
        except PiCompactError as exc:
            raise fail(str(exc), exc.exit_code, json_mode) from None
        except KeyboardInterrupt:
            sys.stderr.write("picompact: interrupted; nothing was written\n")
            raise typer.Exit(int(ExitCode.INTERRUPTED)) from None
        except BrokenPipeError:
            raise
        except Exception as exc:  # a bug: say so briefly
            if debug_enabled():
                raise
            raise fail(
                f"internal error ({type(exc).__name__}); run with --debug for the traceback",
                ExitCode.USAGE,
                json_mode,
            ) from None

    return wrapper  # type: ignore[return-value]


def resolve_session_path(session: Path | None) -> Path:
    """The SESSION argument, or the most recently modified valid session for the current directory (as Pi finds it)."""
    if session is not None:
        if str(session) == "-":
            raise UsageError("reading a session from stdin is not supported; give a file path")
        return session
    from pi_compact.session.discovery import find_most_recent_session

    found = find_most_recent_session(os.getcwd())
    if found is None:
        from pi_compact.session.discovery import session_dir_for_cwd

        where = session_dir_for_cwd(os.getcwd())
        raise NotFoundError(f"no SESSION given and no Pi session found for this directory (looked in {where})")
    return Path(found)


@contextmanager
def quiet_broken_pipe() -> Iterator[None]:
    """``picompact … | head`` ends quietly."""
    try:
        yield
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        raise SystemExit(0) from None


def report_diagnostics(out: Output, diagnostics: list[Any], path: Path | str) -> None:
    """Recoverable load problems go to stderr, one line each, naming file and line."""
    for diag in diagnostics:
        if diag.level == "info" and diag.code in ("old-version",):
            continue
        where = f"{path}:{diag.line}" if diag.line is not None else f"{path}"
        out.warn(f"{where}: {diag.message}")


def check_nonneg(name: str, value: int | None, maximum: int = 100_000_000) -> None:
    """Negative or absurd numbers for token settings are usage errors."""
    if value is None:
        return
    if value < 0:
        raise UsageError(f"{name} must not be negative (got {value})")
    if value > maximum:
        raise UsageError(f"{name} is absurdly large (got {value}; at most {maximum})")
