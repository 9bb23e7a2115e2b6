"""Command-line interface: a thin layer over the library. The only package that prints.

``main(argv, env) -> ExitCode`` (in ``pi_compact.cli.core``) runs a command line; it is also the console script.
Every other module of this package that is not infrastructure defines commands and registers them on ``app`` when
imported: adding a command is adding a module (and a line in ``app.COMMAND_MODULES``, so that running it imports
only its module). Command modules are imported when first needed, not with this package.
"""

from __future__ import annotations

from pi_compact.cli.app import app
from pi_compact.cli.core import main
from pi_compact.cli.env import Environment

__all__ = ["Environment", "app", "main"]
