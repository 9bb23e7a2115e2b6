"""Command-line interface: a thin layer over the library. The only package that prints.

``main(argv, env) -> ExitCode`` (in ``pi_compact.cli.core``) runs a command line; it is also the console script.
Every other module of this package that is not infrastructure defines commands and registers them on ``app`` when
imported: adding a command is adding a module.
"""

from __future__ import annotations

import importlib
import pkgutil

from pi_compact.cli.app import app
from pi_compact.cli.core import main
from pi_compact.cli.env import Environment

# Modules of this package that define no commands.
INFRASTRUCTURE = frozenset({"app", "common", "compat", "core", "env", "options", "schema"})


def _register_commands() -> None:
    for module in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        if module.name not in INFRASTRUCTURE and not module.name.startswith("_"):
            importlib.import_module(f"{__name__}.{module.name}")


_register_commands()

__all__ = ["Environment", "app", "main"]
