"""Command-line interface: a thin layer over the library. The only package that prints or exits."""

from __future__ import annotations

import os
import sys

# Command modules register themselves on ``app`` when imported.
from pi_compact.cli import check as _check  # noqa: F401
from pi_compact.cli.app import app


def _register_optional() -> None:
    """Import command modules that exist; each registers its commands."""
    import importlib

    for name in ("sessions", "compact", "search", "lookup"):
        try:
            importlib.import_module(f"pi_compact.cli.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"pi_compact.cli.{name}":
                raise


_register_optional()


def main() -> None:
    """Console-script entry point."""
    try:
        app()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(0)
    except KeyboardInterrupt:
        sys.stderr.write("picompact: interrupted; nothing was written\n")
        sys.exit(130)


__all__ = ["app", "main"]
