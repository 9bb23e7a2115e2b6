"""``picompact sessions``: the Pi sessions of a directory (or all of them), newest first."""

from __future__ import annotations

from pathlib import Path

import typer

from pi_compact.cli.app import app, env_of
from pi_compact.cli.common import human_size
from pi_compact.cli.options import JsonOpt


@app.command()
def sessions(
    ctx: typer.Context,
    cwd: Path | None = typer.Option(None, "--cwd", help="Project directory (default: the current directory)."),
    all_: bool = typer.Option(False, "--all", help="Sessions of every project."),
    json_output: bool = JsonOpt,
) -> None:
    """List Pi sessions: path, id, name, first user message, entries, size, modified time."""
    from pi_compact.session.discovery import list_sessions

    env = env_of(ctx)
    found = list_sessions(str(cwd) if cwd else None, all_=all_)
    if json_output:
        env.emit(
            {
                "sessions": [
                    {
                        "path": str(s.path),
                        "id": s.id,
                        "cwd": s.cwd,
                        "name": s.name,
                        "first_message": s.first_message,
                        "entries": s.entry_count,
                        "messages": s.message_count,
                        "size": s.size,
                        "modified": s.modified.isoformat(),
                        "parent_session": s.parent_session,
                    }
                    for s in found
                ],
            }
        )
        return
    if not found:
        env.note("no sessions found" + ("" if all_ else " for this directory (try --all)"))
        return
    for s in found:
        title = s.name or (s.first_message or "").replace("\n", " ")
        if len(title) > 70:
            title = title[:69] + "…"
        env.text(
            f"{s.modified.strftime('%Y-%m-%d %H:%M')}  {s.entry_count:>6} entries  {human_size(s.size):>9}  {s.path}"
        )
        if title:
            env.text(f"    {title}")
