"""``picompact sessions``: the Pi sessions of a directory (or all of them), newest first."""

from __future__ import annotations

import os
from datetime import datetime
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
    """List Pi sessions, by last message time as Pi's session picker sorts them: that time, the file's own
    modification time, entries, size, path, and the name or first user message. The row marked * is the session
    picompact uses when SESSION is omitted (the most recently modified file, as ``pi --continue`` picks it)."""
    from pi_compact.search.render import safe_text as safe
    from pi_compact.session.discovery import find_most_recent_session, list_sessions, search_locations

    env = env_of(ctx)
    where = str(cwd) if cwd else None
    found = list_sessions(where, all_=all_)
    default = find_most_recent_session(where or os.getcwd())
    default_path = os.path.realpath(default) if default is not None else None

    def is_default(path: Path) -> bool:
        return default_path is not None and os.path.realpath(path) == default_path

    if json_output:
        env.emit(
            {
                "sessions": [
                    {
                        "path": str(s.path),
                        "id": safe(s.id),
                        "cwd": safe(s.cwd),
                        "name": safe(s.name) if s.name else s.name,
                        "first_message": safe(s.first_message) if s.first_message else s.first_message,
                        "entries": s.entry_count,
                        "messages": s.message_count,
                        "size": s.size,
                        "modified": s.modified.isoformat(),
                        "file_modified": s.mtime.isoformat(),
                        "default": is_default(s.path),
                        "parent_session": safe(s.parent_session) if s.parent_session else None,
                    }
                    for s in found
                ],
            }
        )
        return
    if not found:
        directory, filter_cwd = search_locations(where, all_=all_)
        looked = f"{directory}" + (f" (sessions whose cwd is {filter_cwd})" if filter_cwd else "")
        env.note(f"no sessions found in {looked}" + ("" if all_ else "; try --all"))
        return
    env.text(f"  {'LAST MESSAGE':<16}  {'FILE MODIFIED':<16}  {'ENTRIES':>7}  {'SIZE':>9}  PATH")
    for s in found:
        title = safe(s.name or (s.first_message or "").replace("\n", " "))
        if len(title) > 70:
            title = title[:69] + "…"
        mark = "*" if is_default(s.path) else " "
        env.text(
            f"{mark} {_local(s.modified)}  {_local(s.mtime)}  {s.entry_count:>7}  {human_size(s.size):>9}  {s.path}"
        )
        if title:
            env.text(f"    {title}")
    if any(is_default(s.path) for s in found):
        env.note(
            "* the session picompact uses when SESSION is omitted (the most recently modified file, as pi "
            "--continue picks it); the list is sorted by last message time, as Pi's session picker sorts it"
        )


def _local(when: datetime) -> str:
    return when.astimezone().strftime("%Y-%m-%d %H:%M")
