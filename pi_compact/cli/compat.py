"""The click names picompact uses, from wherever this typer keeps them (typer 0.28 vendors click)."""

from __future__ import annotations

try:
    from typer._click.exceptions import ClickException, NoArgsIsHelpError, UsageError
    from typer._click.globals import get_current_context
except ImportError:  # pragma: no cover - a typer that depends on click instead
    from click.exceptions import ClickException, NoArgsIsHelpError, UsageError  # type: ignore[no-redef]
    from click.globals import get_current_context  # type: ignore[no-redef]

__all__ = ["ClickException", "NoArgsIsHelpError", "UsageError", "get_current_context"]
