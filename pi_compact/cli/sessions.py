"""``picompact sessions``: the Pi sessions of a directory (or all of them), newest first."""

from __future__ import annotations

from pathlib import Path

import typer

from pi_compact.cli.app import app
from pi_compact.cli.common import Output, handle_errors
from pi_compact.cli.options import JsonOpt


def _size(n: int) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if n < 1024 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return f"{n} B"


@app.command()
@handle_errors
def sessions(
    cwd: Path | None = typer.Option(None, "--cwd", help="Project directory (default: the current directory)."),
    all_: bool = typer.Option(False, "--all", help="Sessions of every project."),
    json_output: bool = JsonOpt,
) -> None:
    """List Pi sessions: path, id, name, first user message, entries, size, modified time."""
    from pi_compact.session.discovery import list_sessions

    out = Output(json_output)
    found = list_sessions(str(cwd) if cwd else None, all_=all_)
    if json_output:
        out.json(
            {
                "schema_version": 1,
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
        out.note("no sessions found" + ("" if all_ else " for this directory (try --all)"))
        return
    for s in found:
        title = s.name or (s.first_message or "").replace("\n", " ")
        if len(title) > 70:
            title = title[:69] + "…"
        out.text(f"{s.modified.strftime('%Y-%m-%d %H:%M')}  {s.entry_count:>6} entries  {_size(s.size):>9}  {s.path}")
        if title:
            out.text(f"    {title}")
