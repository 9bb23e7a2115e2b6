"""``picompact prune``: replace old tool outputs in the model's context with stubs, through Pi's ``context_edit``.

The clock and the ids of the written entries, and a call under the session's lock, come from the ``Environment``
as for ``compact``; so do ``PICOMPACT_LOCK_TIMEOUT`` and ``PICOMPACT_TORN_QUIET``.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from pi_compact.cli.app import app, env_of
from pi_compact.cli.common import count_text, note_write, report_diagnostics, resolve_session_path
from pi_compact.cli.options import JsonOpt, SessionArg, SettingsFlags, with_settings
from pi_compact.errors import ExitCode

if TYPE_CHECKING:
    from pi_compact.cli.env import Environment
    from pi_compact.ops.prune import PruneResult


def _fmt(n: int) -> str:
    return count_text(n)  # huge counts as JavaScript shows them


def prune_line(data: Mapping[str, Any]) -> str:
    """One line with what was (or would be) pruned and freed, and the turns it buys."""
    verb = {
        "written": "pruned",
        "rewritten": "pruned",
        "dry-run": "dry run, nothing written: would prune",
        "nothing": "nothing to prune in",
    }.get(data["status"], data["status"])
    count = len(data["pruned"])
    before, after = data["tokens_before"], data["tokens_after"]
    if not count:
        kept = ", ".join(f"{n} {why}" for why, n in data["protected"].items() if n)
        return f"{verb} {data['session']}: no tool output outside the protected ones" + (f" ({kept})" if kept else "")
    from pi_compact.ops.prune import freed_percent

    percent = freed_percent(data["tokens_freed"], before)
    plural = "s" if count != 1 else ""
    line = (
        f"{verb} {count} tool output{plural} in {data['session']}: {_fmt(before)} -> {_fmt(after)} tokens "
        f"({percent:.0f}% freed)"
    )
    turns = data.get("turns_bought")
    if turns:
        line += f"; buys ~{turns} more turn{'s' if turns != 1 else ''} before the threshold"
    return line


@app.command()
@with_settings
def prune(
    ctx: typer.Context,
    session: Path | None = SessionArg,
    dry_run: bool = typer.Option(
        False,
        "--dry-run",
        help="Print the stubs (with --json: the context_edit entries, byte for byte what a run would append) and "
        "change nothing.",
    ),
    min_tokens: int = typer.Option(
        500, "--min-tokens", metavar="N", help="Leave tool outputs smaller than N tokens (Pi's estimate) as they are."
    ),
    context_file: list[Path] | None = typer.Option(
        None,
        "--context-file",
        metavar="PATH",
        help="An extra AGENTS.md-like file whose named files are startup reads, never pruned (repeatable).",
    ),
    settings: SettingsFlags = None,  # type: ignore[assignment]  # with_settings: the settings flags
    no_backup: bool = typer.Option(
        False, "--no-backup", help="When a v1/v2 file is migrated and rewritten, keep no SESSION.bak."
    ),
    repair: bool = typer.Option(
        False, "--repair", help="Write even after a torn last line (it stays in place, a line Pi skips)."
    ),
    json_output: bool = JsonOpt,
) -> ExitCode:
    """Replace old tool outputs in the model's context with short stubs (Pi context_edit entries).

    Each stub says what the output was (the call, its size in tokens, ok or error), the facts a checkpoint keeps
    of it (error line, test summary, paths found, versions) and how to get it back: `picompact show ID`, or the
    context_show_entry tool in Pi. The raw output stays in the session file. Never pruned: the recent part
    (--keep-recent-tokens, Pi's keepRecentTokens by default), outputs under --min-tokens, user messages and
    assistant text, the latest read of a file edited after it, results already edited, and the startup reads a
    checkpoint keeps. A second run appends nothing.

    Exit codes: 0 done (or nothing to prune), 2 usage or input error, 3 the file kept changing underneath or
    stayed locked (nothing written), 130 interrupted (nothing written).
    """
    from pi_compact.cli.writing import check_context_file, options_from_environment
    from pi_compact.ops.prune import PruneOptions, prune_session

    env = env_of(ctx)
    for f in context_file or []:
        check_context_file(f)
    written = options_from_environment(env, None)
    written.pop("stdout")
    options = PruneOptions(
        check=settings.check_options(),
        min_tokens=min_tokens,
        context_files=tuple(str(f) for f in context_file or ()),
        dry_run=dry_run,
        backup=not no_backup,
        repair=repair,
        **written,
    )
    result = prune_session(resolve_session_path(session), options)
    if result.written:
        env.interrupted_note = "interrupted after the context edits were written"
    _report(env, result, json_output=json_output)
    return ExitCode.OK


def _report(env: Environment, result: PruneResult, *, json_output: bool) -> None:
    check = result.plan.check
    report_diagnostics(env, check.diagnostics, result.path)
    for warning in [*check.warnings, *result.warnings]:
        env.warn(warning)
    data = result.to_json()
    if json_output:
        env.emit(data)
    elif result.status == "dry-run":
        for n, item in enumerate(result.plan.pruned):
            if n:
                env.text("")
            env.text(f"----- {item.entry_id}: {item.tool}, {item.tokens:,} -> {item.stub_tokens:,} tokens -----")
            env.text(item.stub)
    note_write(env, result.write, rewritten=result.status == "rewritten")
    env.note(prune_line(data))
