"""The typer application object every command module registers on."""

from __future__ import annotations

import os

import typer

from pi_compact import __version__

app = typer.Typer(
    name="picompact",
    help=(
        "Check, compact and search Pi coding-agent sessions.\n\n"
        "SESSION may be omitted: then the most recent Pi session for the current directory is used."
    ),
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
    pretty_exceptions_show_locals=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"picompact {__version__}")
        raise typer.Exit()


@app.callback()
def root(
    version: bool = typer.Option(False, "--version", callback=_version, is_eager=True, help="Show the version."),
    debug: bool = typer.Option(False, "--debug", help="Show tracebacks of unexpected errors."),
) -> None:
    """Check, compact and search Pi coding-agent sessions."""
    if debug:
        os.environ["PICOMPACT_DEBUG"] = "1"
