"""What every command shares: finding the session, reporting load problems, checking numbers, formatting sizes.

Only modules in ``pi_compact.cli`` print, and only through the :class:`~pi_compact.cli.env.Environment`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pi_compact.cli.env import Environment
from pi_compact.errors import NotFoundError, UsageError

if TYPE_CHECKING:
    from pi_compact.session.write import WriteResult


def resolve_session_path(session: Path | None) -> Path:
    """The SESSION argument, or the most recently modified valid session for the current directory (as Pi finds it)."""
    if session is not None:
        if str(session) == "-":
            raise UsageError("reading a session from stdin is not supported; give a file path")
        return session
    from pi_compact.pi.sessions import find_most_recent_session

    found = find_most_recent_session(os.getcwd())
    if found is None:
        from pi_compact.pi.sessions import configured_session_dir, ignored_session_dir, session_dir_for_cwd

        where = configured_session_dir(os.getcwd()) or session_dir_for_cwd(os.getcwd())
        ignored = ignored_session_dir(os.getcwd())
        why = (
            f"; the sessionDir of {ignored[0]} is ignored: Pi does not trust this project without asking"
            if ignored is not None
            else ""
        )
        raise NotFoundError(f"no SESSION given and no Pi session found for this directory (looked in {where}{why})")
    return Path(found)


MAX_WARNINGS = 20  # load problems printed one by one; the rest are counted


def report_diagnostics(env: Environment, diagnostics: list[Any], path: Path | str) -> None:
    """Recoverable load problems go to stderr, one line each, naming file and line, in line order; after the
    first MAX_WARNINGS, one line counts the rest by kind (``picompact lint`` lists them all)."""
    shown = [d for d in diagnostics if not (d.level == "info" and d.code in ("old-version",))]
    shown.sort(key=lambda d: (d.line is None, d.line or 0))
    for diag in shown[:MAX_WARNINGS]:
        where = f"{path}:{diag.line}" if diag.line is not None else f"{path}"
        env.warn(f"{where}: {diag.message}")
    rest = shown[MAX_WARNINGS:]
    if rest:
        counts: dict[str, int] = {}
        for diag in rest:
            counts[diag.code] = counts.get(diag.code, 0) + 1
        kinds = ", ".join(f"{code} x{n:,}" for code, n in sorted(counts.items(), key=lambda item: -item[1]))
        env.warn(f"{path}: {len(rest):,} more problems not shown ({kinds}); picompact lint lists them all")


def check_nonneg(name: str, value: int | None, maximum: int = 100_000_000) -> None:
    """Negative or absurd numbers for token settings are usage errors."""
    if value is None:
        return
    if value < 0:
        raise UsageError(f"{name} must not be negative (got {value})")
    if value > maximum:
        raise UsageError(f"{name} is absurdly large (got {value}; at most {maximum})")


def _names_session(arg: str) -> bool:
    try:
        return arg == "-" or Path(arg).is_file()
    except (OSError, ValueError):  # a name too long to look up, or with a NUL: no file
        return False


def split_thing_session(env: Environment, args: list[str], what: str, command: str) -> tuple[Path | None, str]:
    """``THING [SESSION]``, as grep takes ``PATTERN [FILE]``: one argument is THING, two are THING and SESSION.

    The older order, ``SESSION THING``, still works where it cannot mean anything else: the first argument an
    existing file (or ``-``) and the second not one; a one-line hint on stderr gives the command in the new order."""
    if len(args) == 1:
        return None, args[0]
    if len(args) == 2:
        first, second = args
        if _names_session(first) and not _names_session(second):
            import shlex

            env.note(
                f"hint: {what} comes first, SESSION second (as grep takes PATTERN FILE): "
                f"{env.program_name} {command} {shlex.quote(second)} {shlex.quote(first)}"
            )
            return Path(first), second
        return Path(second), first
    raise UsageError(f"expected {what} [SESSION], got {len(args)} arguments (quote an argument that holds spaces)")


def human_size(n: int) -> str:
    """512 B, 1.5 KB, 3.2 MB, 1.1 GB (powers of 1024)."""
    value = float(n)
    for unit in ("B", "KB", "MB"):
        if value < 1024:
            return f"{n} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GB"


def note_write(env: Environment, write: WriteResult | None, *, rewritten: bool) -> None:
    """The notes a write of ``compact`` or ``prune`` leaves: a newline added, a torn line kept, a v1/v2 file
    migrated (``rewritten``) and where its original is."""
    if write is None:
        return
    if write.added_newline:
        env.note("the file ended without a newline: added it before the new entries (as Pi would)")
    if write.repaired_torn_line:
        env.note("left the torn last line in place (Pi skips it) and appended after it")
    if write.migrated_from is not None and rewritten:
        kept = f"; the original is kept as {write.backup}" if write.backup else "; no backup kept (--no-backup)"
        env.note(f"migrated the v{write.migrated_from} file to v3 and rewrote it, as Pi does on open{kept}")


def count_text(n: int | None) -> str:
    """A count with thousands separators, "-" for none; one past 2^53 as JavaScript shows it (1e+30; Infinity for a
    usage of 1e400), not hundreds of digits no double holds."""
    if n is None:
        return "-"
    if abs(n) <= 2**53:
        return f"{n:,}"
    from pi_compact.js import js_string

    return js_string(n)
