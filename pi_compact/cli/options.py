"""Option declarations shared by several commands, so they read and validate the same everywhere."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, TypeVar

import typer

if TYPE_CHECKING:
    from pi_compact.ops.check import CheckOptions

from pi_compact.cli._jsonmode import json_mode_for

# Option fields of the library's dataclasses whose flag is not the field name in kebab case.
_FLAG_OF_FIELD = {
    "cap_tokens": "--cap",
    "context_files": "--context-file",
    "leaf_id": "--leaf",
    "tokenizer": "--tokenizer",
}


def flag_for(field: str) -> str:
    """The command-line flag that sets an options field (``keep_recent_tokens`` -> ``--keep-recent-tokens``), for
    the messages of ``OptionError``: the library names fields, the CLI names flags."""
    return _FLAG_OF_FIELD.get(field) or "--" + field.replace("_", "-")


def _json_mode(ctx: typer.Context, value: bool) -> bool:
    """``--json`` switches the Environment to JSON as soon as it is parsed, so that errors are JSON too."""
    if value:
        from pi_compact.cli.app import env_of

        env = env_of(ctx)
        env.json_mode = json_mode_for(ctx.info_name, env.argv)
    return value


def json_option(help: str = "Print one JSON document (see docs/json.md for the schema).") -> Any:
    """The ``--json`` flag of a command (JSON Lines commands are listed in ``pi_compact.cli._jsonmode.JSON_LINES``)."""
    return typer.Option(False, "--json", help=help, callback=_json_mode, is_eager=True)


SessionArg = typer.Argument(
    None,
    metavar="SESSION",
    help="Pi session file (.jsonl). Default: the most recent session for the current directory.",
    show_default=False,
)
JsonOpt = json_option()
ContextWindowOpt = typer.Option(
    None, "--context-window", help="Context window in tokens (default: from Pi's model table for the session's model)."
)
ModelOpt = typer.Option(None, "--model", help="PROVIDER/ID of the model whose window and overrides apply.")
ReserveOpt = typer.Option(None, "--reserve-tokens", help="Override compaction.reserveTokens.")
KeepOpt = typer.Option(None, "--keep-recent-tokens", help="Override compaction.keepRecentTokens.")
LeafOpt = typer.Option(None, "--leaf", help="Work on the branch ending at this entry id instead of the last entry.")
NoCacheOpt = typer.Option(
    False,
    "--no-cache",
    help="Neither read nor write the index of the file kept in the user's cache (also: PICOMPACT_NO_CACHE=1).",
)


class SettingsFlags(NamedTuple):
    """The settings flags of ``check``, ``compact`` and ``audit``, as parsed (None: as Pi resolves it)."""

    context_window: int | None
    model: str | None
    reserve_tokens: int | None
    keep_recent_tokens: int | None
    leaf: str | None

    def check_options(self, **extra: Any) -> CheckOptions:
        """The library's ``CheckOptions`` for these flags (``extra``: its other fields, such as ``tokenizer``)."""
        from pi_compact.ops.check import CheckOptions

        return CheckOptions(
            context_window=self.context_window,
            model=self.model,
            reserve_tokens=self.reserve_tokens,
            keep_recent_tokens=self.keep_recent_tokens,
            leaf_id=self.leaf,
            **extra,
        )


_SETTINGS = (
    ("context_window", int | None, ContextWindowOpt),
    ("model", str | None, ModelOpt),
    ("reserve_tokens", int | None, ReserveOpt),
    ("keep_recent_tokens", int | None, KeepOpt),
    ("leaf", str | None, LeafOpt),
)
Command = TypeVar("Command", bound=Callable[..., Any])


def with_settings(command: Command | None = None, *, model: Any = None) -> Any:
    """Declare the settings flags once: the command's ``settings`` parameter becomes ``--context-window``,
    ``--model``, ``--reserve-tokens``, ``--keep-recent-tokens`` and ``--leaf`` on the command line (in that
    place), and the command receives them as one ``SettingsFlags``. ``model``: a ``--model`` declaration of the
    command's own (compact's also names the summary's model). Use as ``@with_settings`` or
    ``@with_settings(model=…)``."""
    if command is None:
        return functools.partial(with_settings, model=model)
    declared = {
        name: (kind, model if name == "model" and model is not None else option) for name, kind, option in _SETTINGS
    }
    signature = inspect.signature(command)
    params = list(signature.parameters.values())
    at = [p.name for p in params].index("settings")
    kind = params[at].kind
    flags = [
        inspect.Parameter(name, kind, default=option, annotation=hint) for name, (hint, option) in declared.items()
    ]

    @functools.wraps(command)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        settings = SettingsFlags(*(kwargs.pop(name) for name in declared))
        return command(*args, settings=settings, **kwargs)

    wrapper.__signature__ = signature.replace(parameters=[*params[:at], *flags, *params[at + 1 :]])  # type: ignore[attr-defined]
    return wrapper


__all__ = [
    "ContextWindowOpt",
    "JsonOpt",
    "KeepOpt",
    "LeafOpt",
    "ModelOpt",
    "NoCacheOpt",
    "Path",
    "ReserveOpt",
    "SessionArg",
    "SettingsFlags",
    "json_option",
    "with_settings",
]
