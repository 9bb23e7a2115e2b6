"""``picompact lint``: structural problems of session files, one line each, and what Pi does about them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import typer

from pi_compact.cli.app import app, env_of
from pi_compact.cli.common import resolve_session_path
from pi_compact.cli.env import Environment
from pi_compact.cli.options import JsonOpt, LeafOpt
from pi_compact.errors import ExitCode, UsageError

SEVERITY_STYLE = {"error": "red", "warning": "yellow", "info": "cyan"}


def _plural(n: int, word: str) -> str:
    if word == "info":
        return f"{n} info"
    return f"{n} {word}{'' if n == 1 else 's'}"


def _counts_text(counts: dict[str, int]) -> str:
    return ", ".join(_plural(counts.get(sev, 0), sev) for sev in ("error", "warning", "info"))


def finding_line(path: str, finding: Any) -> str:
    """``FILE:LINE: severity code (entry ID): message; Pi: what Pi does``."""
    where = f"{path}:{finding.line}" if finding.line is not None else path
    entry = f" (entry {finding.entry_id})" if finding.entry_id else ""
    pi = f"; Pi {finding.pi}" if finding.pi else ""
    return f"{where}: {finding.severity} {finding.code}{entry}: {finding.message}{pi}"


def summary_line(report: Any, shown: Callable[[str], str] = str) -> str:
    """One line per file for ``--all`` (``shown``: how the path is printed, ``Environment.shown``)."""
    path = shown(report.path)
    if not report.readable:
        finding = report.findings[0]
        return f"{path}: unreadable ({finding.code}): {finding.message}"
    if report.clean:
        return f"{path}: clean ({report.entries} entries)"
    codes = ", ".join(f"{code}×{n}" if n > 1 else code for code, n in report.codes.items())
    return f"{path}: {_counts_text(report.counts)} ({codes})"


def _print(env: Environment, text: str, severity: str | None = None) -> None:
    style = SEVERITY_STYLE.get(severity or "")
    env.text(env.style(text, style) if style else env.shown_text(text))


def _exit_code(unreadable: bool, at_level: int) -> ExitCode:
    if unreadable:
        return ExitCode.USAGE
    return ExitCode.NO if at_level else ExitCode.OK


@app.command()
def lint(
    ctx: typer.Context,
    sessions: list[Path] | None = typer.Argument(
        None,
        metavar="SESSION...",
        help="Session files (default: the most recent session for the current directory); with --all, "
        "directories to walk (default: Pi's sessions directory).",
        show_default=False,
    ),
    all_: bool = typer.Option(
        False, "--all", help="Lint every *.jsonl under the given directories, or under Pi's sessions directory."
    ),
    level: str = typer.Option(
        "warning", "--level", help="Exit 1 when there are findings at or above this level: error, warning or info."
    ),
    jobs: int | None = typer.Option(
        None, "--jobs", "-j", metavar="N", help="--all: worker processes (default: the number of CPUs, at most 8)."
    ),
    leaf: str | None = LeafOpt,
    json_output: bool = JsonOpt,
) -> ExitCode:
    """Find every structural problem of a session Pi would silently work around or trip over.

    One line per finding: FILE:LINE, severity (error, warning, info), a stable code, the entry id, what is wrong
    and what Pi does about it. Exit codes: 0 clean, 1 findings at or above --level, 2 a file is not readable as a
    Pi session (or a usage error). --json: one document; with --all, JSON Lines (a "file" record per file, then a
    "summary" record).
    """
    from pi_compact.ops.lint import lint_file
    from pi_compact.ops.lint_report import LintTotals, check_level, lint_json

    env = env_of(ctx)
    if json_output:
        env.json_mode = "lines" if all_ else "document"
    check_level(level)
    if jobs is not None and jobs < 1:
        raise UsageError(f"--jobs must be at least 1 (got {jobs})")
    if all_:
        if leaf is not None:
            raise UsageError("--all and --leaf clash: --leaf names an entry of one session")
        return _lint_all(env, sessions or [], level=level, jobs=jobs, json_output=json_output)
    if jobs is not None:
        raise UsageError("--jobs applies only with --all")
    paths = list(sessions) if sessions else [resolve_session_path(None)]
    if leaf is not None and len(paths) > 1:
        raise UsageError("--leaf applies to one session, not several")
    totals = LintTotals()
    reports = []
    for path in paths:
        report = lint_file(path, leaf_id=leaf)
        totals.add(report)
        reports.append(report)
        if json_output:
            continue
        for finding in report.findings:
            _print(env, finding_line(env.shown(path), finding), finding.severity)
    if json_output:
        env.emit({"level": level, **lint_json(reports, totals)})
    else:
        for report in reports:
            if report.readable:
                verdict = "clean" if report.clean else _counts_text(report.counts)
                env.text(f"{env.shown(report.path)}: {verdict} ({report.entries} entries)")  # stdout, as lint --all
    return _exit_code(totals.unreadable > 0, totals.at_or_above(level))


def _lint_all(env: Environment, roots: list[Path], *, level: str, jobs: int | None, json_output: bool) -> ExitCode:
    from pi_compact.ops.lint import iter_session_files, lint_paths
    from pi_compact.ops.lint_report import LintTotals

    if not roots:
        roots = [_sessions_root()]
        if not roots[0].is_dir():
            env.note(f"no Pi sessions directory ({roots[0]}): nothing to lint")
            if json_output:
                env.emit_record("summary", LintTotals().to_json())
            return ExitCode.OK
    totals = LintTotals()
    skipped: list[str] = []

    def unreadable(directory: str, reason: str) -> None:
        skipped.append(directory)
        env.warn(f"{directory}: cannot read the directory ({reason}): its sessions are not linted")

    for report in lint_paths(iter_session_files(roots, unreadable), jobs=jobs):
        totals.add(report)
        if json_output:
            env.emit_record("file", report.to_json())
            continue
        worst = next((sev for sev in ("error", "warning", "info") if report.counts.get(sev)), None)
        _print(
            env, summary_line(report, env.shown), None if report.clean else ("error" if not report.readable else worst)
        )
    summary = totals.to_json()
    if json_output:
        env.emit_record("summary", summary)
    else:
        directories = (
            f", {len(skipped)} {'directory' if len(skipped) == 1 else 'directories'} unreadable" if skipped else ""
        )
        env.text(
            f"{totals.files} files: {totals.clean} clean, {totals.with_findings} with findings, "
            f"{totals.unreadable} unreadable{directories}; {_counts_text(summary['counts'])}"
        )
    return _exit_code(totals.unreadable > 0 or bool(skipped), totals.at_or_above(level))


def _sessions_root() -> Path:
    """Pi's sessions directory: a configured ``sessionDir``, else ``<agent dir>/sessions``."""
    import os

    from pi_compact.pi.sessions import configured_session_dir
    from pi_compact.pi.settings import resolve_agent_dir

    configured = configured_session_dir(os.getcwd())
    return configured if configured is not None else resolve_agent_dir(None) / "sessions"
