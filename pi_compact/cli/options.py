"""Option declarations shared by several commands, so they read and validate the same everywhere."""

from __future__ import annotations

from pathlib import Path

import typer

SessionArg = typer.Argument(
    None,
    help="Pi session file (.jsonl). Default: the most recent session for the current directory.",
    show_default=False,
)
JsonOpt = typer.Option(False, "--json", help="Print one JSON document (see README for the schema).")
ContextWindowOpt = typer.Option(
    None, "--context-window", help="Context window in tokens (default: from Pi's model table for the session's model)."
)
ModelOpt = typer.Option(None, "--model", help="PROVIDER/ID of the model whose window and overrides apply.")
ReserveOpt = typer.Option(None, "--reserve-tokens", help="Override compaction.reserveTokens.")
KeepOpt = typer.Option(None, "--keep-recent-tokens", help="Override compaction.keepRecentTokens.")
LeafOpt = typer.Option(None, "--leaf", help="Work on the branch ending at this entry id instead of the last entry.")

__all__ = ["ContextWindowOpt", "JsonOpt", "KeepOpt", "LeafOpt", "ModelOpt", "Path", "ReserveOpt", "SessionArg"]
