"""The typer application object every command module registers on.

A command takes ``ctx: typer.Context`` and gets its :class:`~pi_compact.cli.env.Environment` with ``env_of(ctx)``;
it prints only through it, raises ``PiCompactError`` for problems, and returns an ``ExitCode`` (None means 0).
``pi_compact.cli.core.main`` runs the app and is the only place where exceptions become exit codes.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import typer
from typer.core import TyperGroup

from pi_compact import __version__
from pi_compact.cli.env import Environment, current_env


class ReaderGone(Exception):
    """stdout's reader went away (EPIPE); carried past click, which would turn it into exit 1."""


class Interrupted(Exception):
    """Ctrl-C; carried past click, which would turn it into a silent exit 130."""


class PiCompactGroup(TyperGroup):
    """The root group: lets a broken pipe and Ctrl-C reach ``main`` as themselves."""

    def make_context(self, info_name: str | None, args: list[str], parent: Any = None, **extra: Any) -> Any:
        with _carried():
            return super().make_context(info_name, args, parent=parent, **extra)

    def invoke(self, ctx: Any) -> Any:
        with _carried():
            return super().invoke(ctx)


@contextlib.contextmanager
def _carried() -> Iterator[None]:
    try:
        yield
    except BrokenPipeError as exc:
        raise ReaderGone() from exc
    except KeyboardInterrupt as exc:
        raise Interrupted() from exc


app = typer.Typer(
    name="picompact",
    cls=PiCompactGroup,
    help=(
        "Check, compact and search Pi coding-agent sessions.\n\n"
        "SESSION may be omitted: then the most recent Pi session for the current directory is used.\n\n"
        "Exit codes: 0 done; 1 the answer is no (check: compaction needed, grep: no match, lookup: not found); "
        "2 usage or input error; 3 external failure (model provider, lock, file changed underneath); "
        "70 internal error (a bug: --debug shows the traceback); 130 interrupted. Errors are one line on stderr, "
        "'picompact: error: ...', and one JSON line on stdout with --json."
    ),
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    pretty_exceptions_show_locals=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def env_of(ctx: typer.Context) -> Environment:
    """The Environment ``main`` handed to this run (one for the process when the app is run some other way)."""
    found = ctx.find_object(Environment)
    if found is None:
        found = current_env()
        ctx.find_root().obj = found
    return found


def _version(ctx: typer.Context, value: bool) -> None:
    if value:
        env_of(ctx).text(f"picompact {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    ctx: typer.Context,
    version: bool = typer.Option(
        False, "--version", "-V", callback=_version, is_eager=True, help="Show the version and exit."
    ),
    debug: bool = typer.Option(
        False, "--debug", help="Show the traceback of an unexpected error (internal error, exit 70)."
    ),
) -> None:
    """Check, compact and search Pi coding-agent sessions."""
    if debug:
        env_of(ctx).debug = True
