"""``picompact rules``: standing instructions said in several sessions of a project, as lines for its AGENTS.md."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

import typer

from pi_compact.cli.app import app, env_of
from pi_compact.cli.env import Environment, printable
from pi_compact.cli.options import JsonOpt
from pi_compact.errors import ExitCode, PiCompactError, UsageError


@app.command()
def rules(
    ctx: typer.Context,
    here: bool = typer.Option(False, "--here", help="Sessions of the current directory (the default)."),
    cwd: Path | None = typer.Option(None, "--cwd", metavar="DIR", help="Sessions of the project at DIR."),
    all_: bool = typer.Option(False, "--all", help="Sessions of every project (no --write)."),
    min_sessions: int = typer.Option(
        2, "--min-sessions", metavar="N", help="Suggest what was said in at least N sessions (default 2)."
    ),
    write: bool = typer.Option(
        False,
        "--write",
        help="Append the chosen lines to the project's AGENTS.md (or the instruction file Pi loads from the "
        "directory), in a marked block; on a terminal shows where each line was said, then asks. Lines refused "
        "or deleted from the block are remembered and not suggested again.",
    ),
    yes: bool = typer.Option(
        False, "--yes", "-y", help="--write every suggestion without asking (no terminal needed)."
    ),
    dry_run: bool = typer.Option(
        False,
        "--dry-run",
        help="Print the unified diff of the instruction file that --write --yes would make; write and ask nothing.",
    ),
    json_output: bool = JsonOpt,
) -> ExitCode:
    """Suggest standing instructions for the project's AGENTS.md: what users said as rules, constraints,
    preferences or conventions ("don't touch .env", "use `stash migrate`, not raw SQL", "tests live in
    tests/extractor/") in at least --min-sessions sessions, the same instruction in other words counted once,
    and not already in the AGENTS.md / CLAUDE.md files Pi loads for the directory.

    Instructions are found as people write them: terse ("no deprecation alias!"), misspelt, imperative ("run
    make check before committing"), in Korean, Japanese, Chinese, German or Spanish; questions, requests for the
    work at hand and pasted documentation or logs are left out.

    Ranked by the number of sessions, then by when last said; each with its sessions and entry ids.
    Deterministic, no model; nothing is written to a session. A session that cannot be read is named on stderr
    and skipped. --write appends inside a '<!-- picompact rules: begin/end -->' block and never rewrites
    other text; without a terminal it needs --yes; --dry-run shows the diff instead. What was refused or written
    is kept in rules-decisions.json of the cache directory. Exit codes: 0 suggestions, 1 none, 2 usage error.
    """
    from pi_compact.ops.rules import find_rules

    env = env_of(ctx)
    if here and (cwd is not None or all_):
        raise UsageError(f"--here and {'--cwd' if cwd is not None else '--all'} clash: --here is the current directory")
    if all_ and cwd is not None:
        raise UsageError("--all and --cwd clash: --all reads the sessions of every project")
    if all_ and write:
        raise UsageError("--all and --write clash: --write appends to one project's AGENTS.md (use --cwd DIR)")
    if yes and not write:
        raise UsageError("--yes applies only with --write")
    if all_ and dry_run:
        raise UsageError(
            "--all and --dry-run clash: --dry-run shows the diff of one project's AGENTS.md (use --cwd DIR)"
        )
    if write and not yes and not dry_run and not env.stdin_isatty:
        raise UsageError(
            "--write asks before it changes AGENTS.md, and stdin is not a terminal: add --yes to write every suggestion"
        )
    if cwd is not None and not cwd.is_dir():
        raise UsageError(f"--cwd {cwd}: not a directory")
    where = str(cwd) if cwd is not None else os.getcwd()
    _note_ignored_session_dir(env, where)
    from pi_compact.ops.rules_memory import Decisions, load_decisions

    decisions = Decisions()
    if not all_:
        from pi_compact.ops.rules_block import target_file

        target = target_file(os.path.abspath(where))
        if write or dry_run:
            from pi_compact.ops.rules_block import check_target

            check_target(target)  # refused at once, before the sessions are read (a link, a FIFO, too big)
        decisions = load_decisions(target)
        if decisions.warning is not None:
            env.warn(decisions.warning)
    report = find_rules(
        str(cwd) if cwd is not None else None,
        all_=all_,
        min_sessions=min_sessions,
        refused=decisions.refused,
        written=decisions.written,
    )
    for path, reason in report.unreadable:
        env.warn(f"{path}: skipped, cannot read it as a Pi session ({reason})")
    written = None
    diff: str | None = None
    if (write or dry_run) and report.target is not None:
        from pi_compact.ops.rules_block import check_target

        check_target(report.target)  # a link, a FIFO, a device: refused before anything is asked or shown
    if dry_run and report.target is not None:
        from pi_compact.ops.rules_block import rules_diff

        diff, _ = rules_diff(report.target, [s.text for s in report.suggestions])
    elif write and report.suggestions and report.target is not None:
        from pi_compact.ops.rules_block import write_rules
        from pi_compact.ops.rules_memory import record_decisions

        refused: list[str] = []
        if yes:
            chosen = [s.text for s in report.suggestions]
        else:
            chosen, refused = _choose(env, report.suggestions, report.target)
        if chosen:
            written = write_rules(report.target, chosen)
        try:
            record_decisions(report.target, refused=refused, written=chosen if written is not None else [])
        except PiCompactError as exc:  # the instruction file is written: say what is not remembered, and go on
            env.warn(f"{exc.path or ''}: {exc.message}: these answers will be asked again")
    if json_output:
        written_doc = written.to_json() if written is not None else None
        env.emit({**report.to_json(), "written": written_doc, "diff": (diff or "") if dry_run else None})
        return ExitCode.OK if report.suggestions else ExitCode.NO
    _print(env, report)
    if diff is not None:
        if diff:
            env.text(diff.rstrip("\n"))
            env.note(f"--dry-run: {env.shown(report.target or '')}: nothing written")
        else:
            env.note(f"--dry-run: {env.shown(report.target or '')}: nothing to add")
    if written is not None:
        if written.added:
            what = "made it" if written.created_file else "added the block" if written.created_block else "appended"
            env.note(f"{env.shown(written.path)}: {what}: {len(written.added)} line(s)")
        else:
            env.note(f"{env.shown(written.path)}: already holds these lines: nothing written")
    return ExitCode.OK if report.suggestions else ExitCode.NO


def _print(env: Environment, report: Any) -> None:
    for rank, item in enumerate(report.suggestions, 1):
        last = (item.last_said or "")[:10]
        env.text(f"{rank}. {env.shown_text(item.text)}")
        when = f"last {last}" if last else "at an unknown time"
        env.text(f"   {item.kind}; {item.sessions} sessions, {len(item.mentions)} times, {when}")
        by_session: dict[str, list[str]] = {}
        for mention in item.mentions:
            by_session.setdefault(mention.path, []).append(mention.entry_id)
        for path, ids in by_session.items():
            env.text(f"   {env.shown(path)}  {', '.join(ids)}")
    where = "every project" if report.all_projects else report.cwd
    summary = f"{len(report.suggestions)} suggestion(s) from {report.sessions_read} session(s) of {where}"
    summary += f", said in at least {report.min_sessions} sessions"
    if report.known:
        files = sorted({k.known_in for k in report.known if k.known_in is not None})
        summary += f"; {len(report.known)} more already in {', '.join(env.shown(f) for f in files)}"
    if report.dismissed:
        refused = sum(1 for d in report.dismissed if d.dismissed == "refused")
        deleted = len(report.dismissed) - refused
        parts = [f"{refused} refused before"] if refused else []
        parts += [f"{deleted} deleted from the block"] if deleted else []
        summary += f"; {' and '.join(parts)}, not suggested again"
    env.note(summary)


EVIDENCE_SHOWN = 5  # statements shown before each question (the newest); the rest counted


def _choose(env: Environment, suggestions: list[Any], target: str) -> tuple[list[str], list[str]]:
    """Show where each suggestion was said, then ask: y adds it, n refuses it (remembered: not asked again), a
    adds it and all the rest, q stops (the rest asked next time). Returns the lines chosen and those refused."""
    chosen: list[str] = []
    refused: list[str] = []
    for index, item in enumerate(suggestions):
        _evidence(env, index + 1, len(suggestions), item)
        answer = _ask(env, f"Add to {printable(target)}: {item.text!r}? [y/n/a/q] ")
        if answer == "a":
            chosen.extend(s.text for s in suggestions[index:])
            break
        if answer == "q":
            break
        if answer == "y":
            chosen.append(item.text)
        else:
            refused.append(item.text)
    return chosen, refused


def _evidence(env: Environment, number: int, total: int, item: Any) -> None:
    """Where a suggestion was said, on stderr before its question: session, entry, date and the user's words."""
    from pi_compact.checkpoint.verbatim.signatures import shorten

    times = f"{item.kind}; {item.sessions} sessions, {len(item.mentions)} times"
    lines = [f"\n{number}/{total} {printable(item.text)}  ({times})"]
    mentions = list(item.mentions)
    shown = mentions[-EVIDENCE_SHOWN:]
    for mention in shown:
        date = (mention.timestamp or "date unknown")[:10]
        lines.append(
            f"  said in {printable(mention.path)}, entry {printable(mention.entry_id)}, {date}: "
            f"{printable(shorten(mention.text, 200))!r}"
        )
    if len(mentions) > len(shown):
        lines.append(f"  … and {len(mentions) - len(shown)} earlier time(s)")
    with contextlib.suppress(OSError, ValueError):
        env.stderr.write("\n".join(lines) + "\n")
        env.stderr.flush()


def _ask(env: Environment, prompt: str) -> str:
    with contextlib.suppress(OSError, ValueError):
        env.stderr.write(prompt)
        env.stderr.flush()
    line = env.stdin.readline()
    if not line:
        return "q"
    return line.strip().lower()[:1] or "n"


def _note_ignored_session_dir(env: Environment, cwd: str) -> None:
    from pi_compact.pi.sessions import ignored_session_dir

    ignored = ignored_session_dir(cwd)
    if ignored is not None:
        env.warn(
            f"{env.shown(ignored[0])}: sessionDir ({env.shown(ignored[1])}) ignored: Pi does not trust this project "
            "without asking, so its settings do not choose the sessions read (trust it in Pi, or set "
            "PI_CODING_AGENT_SESSION_DIR)"
        )
