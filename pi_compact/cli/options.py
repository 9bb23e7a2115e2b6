"""Option declarations shared by several commands, so they read and validate the same everywhere."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import typer

from pi_compact.cli._jsonmode import json_mode_for

# Option fields of the library's dataclasses whose flag is not the field name in kebab case.
_FLAG_OF_FIELD = {"cap_tokens": "--cap", "leaf_id": "--leaf", "tokenizer": "--tokenizer"}


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


def json_option(help: str = "Print one JSON document (see README for the schema).") -> Any:
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

__all__ = [
    "ContextWindowOpt",
    "JsonOpt",
    "KeepOpt",
    "LeafOpt",
    "ModelOpt",
    "Path",
    "ReserveOpt",
    "SessionArg",
    "json_option",
]
