"""``picompact sessions``: the Pi sessions of a directory (or all of them), newest first."""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

import typer

from pi_compact.cli.app import app, env_of
from pi_compact.cli.common import human_size
from pi_compact.cli.options import JsonOpt
from pi_compact.errors import ExitCode


@app.command()
def sessions(
    ctx: typer.Context,
    cwd: Path | None = typer.Option(None, "--cwd", help="Project directory (default: the current directory)."),
    all_: bool = typer.Option(False, "--all", help="Sessions of every project."),
    json_output: bool = JsonOpt,
) -> ExitCode:
    """List Pi sessions, by last message time as Pi's session picker sorts them: that time, the file's own
    modification time, entries, size, path, and the name or first user message. The row marked * is the session
    picompact uses when SESSION is omitted (the most recently modified file, as ``pi --continue`` picks it).
    Exit 2 when a directory could not be read (it is named on stderr; the others are listed)."""
    from pi_compact.pi.sessions import search_locations, session_listing
    from pi_compact.session.jsonline import safe_text as safe

    env = env_of(ctx)
    where = str(cwd) if cwd else None
    listing = session_listing(where, all_=all_)
    for directory, reason in listing.unreadable:
        env.warn(f"{directory}: cannot read the directory ({reason}): its sessions are not listed")
    code = ExitCode.USAGE if listing.unreadable else ExitCode.OK
    if json_output:
        env.emit(listing.to_json())
        return code
    found = listing.sessions
    if not found and listing.unreadable:
        return code
    if not found:
        directory, filter_cwd = search_locations(where, all_=all_)
        looked = f"{directory}" + (f" (sessions whose cwd is {filter_cwd})" if filter_cwd else "")
        env.note(f"no sessions found in {looked}" + ("" if all_ else "; try --all"))
        from pi_compact.pi.sessions import ignored_session_dir

        ignored = ignored_session_dir(where or os.getcwd())
        if ignored is not None:
            env.note(
                f"{env.shown(ignored[0])}: its sessionDir ({env.shown(ignored[1])}) is ignored: Pi does not trust "
                "this project without asking"
            )
        return code
    env.text(f"  {'LAST MESSAGE':<16}  {'FILE MODIFIED':<16}  {'ENTRIES':>7}  {'SIZE':>9}  PATH")
    for s in found:
        title = safe(s.name or (s.first_message or "").replace("\n", " "))
        if len(title) > 70:
            title = title[:69] + "…"
        mark = "*" if listing.is_default(s.path) else " "
        size = human_size(s.size)
        env.text(f"{mark} {_local(s.modified)}  {_local(s.mtime)}  {s.entry_count:>7}  {size:>9}  {env.shown(s.path)}")
        if title:
            env.text(f"    {env.shown_text(title)}")
    if any(listing.is_default(s.path) for s in found):
        env.note(
            "* the session picompact uses when SESSION is omitted (the most recently modified file, as pi "
            "--continue picks it); the list is sorted by last message time, as Pi's session picker sorts it"
        )
    return code


def _local(when: datetime) -> str:
    return when.astimezone().strftime("%Y-%m-%d %H:%M")
