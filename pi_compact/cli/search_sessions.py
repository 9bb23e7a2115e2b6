"""``picompact search``: every session Pi can find, searched at once through the index in the user's cache."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import typer

from pi_compact.cli.app import app, env_of
from pi_compact.cli.common import human_size
from pi_compact.cli.env import Environment
from pi_compact.cli.options import json_option
from pi_compact.errors import ExitCode, UsageError

_HELP = """Search every Pi session at once: ranked results across projects, sessions and branches.

Covers Pi's sessions tree (<agent dir>/sessions, PI_CODING_AGENT_DIR honoured, or the configured session
directory) and each --dir DIR (any depth). QUERY is words: `timeout retry` (both), `"connection reset"` (the
phrase), `migrat*` (a prefix), OR, AND, NOT (upper case) and parentheses; case and accents do not matter; a
word of Chinese, Japanese or Korean matches wherever its characters stand in a row (`설정` in `설정을`). Results
are ranked by BM25 weighed by role: what the user said first (a question less), then the agent's replies, then
tool output; an identifier or path (`max_retries`, `src/app.py`) counts most where it is written as typed.
--regex PATTERN or -F STRING search for an exact pattern instead, matched on each entry's text as `picompact
show` renders it (the index only narrows the candidates; -i ignores case). Nothing found: where it looked and
what it searched are said on stderr, with the likely fixes of a typo ("did you mean").

Each result: the session file, the entry's time, id and role, a snippet with the match highlighted, and the
command that shows the whole entry (picompact show ENTRY_ID SESSION). Exit 0 when something matched, 1 when
nothing did, 2 on bad input. A session that cannot be read is named on stderr and skipped.

The index is one SQLite file in the user's cache (mode 0600: it holds session text), brought up to date on every
search: sessions Pi appended to cost only their new lines, a rewritten or truncated one is indexed again, deleted
ones drop out. --no-index searches the files without it (the same results, slower); --reindex builds it again
from nothing; --stats describes it.

--json prints one document {"schema_version", "query", "mode", "results": [{session, session_id, cwd,
entry_id, line, role, timestamp, score, snippet, highlights [{start, end}], show}], "matches" (on this page),
"total" (on all pages; null when not counted), "total_at_least" (the total, or those counted when the count
stopped), "sessions_searched", "complete", "next_cursor", "skipped":
[{path, reason}], "stopped", "did_you_mean"}; --json-lines prints
a {"type": "match", "version": 1, "data": {...}} record per result, then a "summary" record (the document's
other keys). Pages hold --max-count results (default 20); the next page is printed as a command with --cursor.
A --regex or -F search stops after 10 s of matching in all (a pattern slow on every entry): "stopped" then
says so, and the results are those found until then (RE2 runs every pattern it reads as Python does, in linear
time).
"""


def _json_lines_mode(ctx: typer.Context, value: bool) -> bool:
    if value:
        env_of(ctx).json_mode = "lines"
    return value


@app.command("search", help=_HELP)
def search_command(
    ctx: typer.Context,
    query: str | None = typer.Argument(None, metavar="[QUERY]", show_default=False),
    regex: str | None = typer.Option(None, "--regex", "-e", metavar="PATTERN", help="Search for a regular expression."),
    fixed: str | None = typer.Option(None, "-F", "--fixed-strings", metavar="STRING", help="Search for a literal."),
    ignore_case: bool = typer.Option(False, "-i", "--ignore-case", help="--regex and -F ignore case."),
    dirs: list[Path] | None = typer.Option(
        None, "--dir", metavar="DIR", help="Also the sessions under DIR, at any depth (repeatable)."
    ),
    cwd: Path | None = typer.Option(None, "--cwd", metavar="DIR", help="Only sessions whose working directory is DIR."),
    here: bool = typer.Option(False, "--here", help="Only sessions of the current directory (--cwd .)."),
    branch: str = typer.Option("all", "--branch", metavar="WHICH", help="all (every branch) or leaf (the active one)."),
    since: str | None = typer.Option(
        None, "--since", metavar="TIME", help="Entries at or after TIME (ISO, or 30m, 2h, 7d)."
    ),
    until: str | None = typer.Option(None, "--until", metavar="TIME", help="Entries at or before TIME."),
    role: list[str] | None = typer.Option(
        None, "--role", metavar="ROLE", help="Only these roles or entry types (user, assistant, toolResult, ...)."
    ),
    tool: str | None = typer.Option(None, "--tool", metavar="NAME", help="Only calls of tool NAME and their results."),
    errors: bool = typer.Option(False, "--errors", help="Only failed tool results."),
    max_count: int = typer.Option(20, "--max-count", "-m", metavar="N", help="Results per page (default 20)."),
    cursor: str | None = typer.Option(None, "--cursor", metavar="CURSOR", help="Continue where the last page ended."),
    no_index: bool = typer.Option(False, "--no-index", help="Search the files without the index (slower)."),
    reindex: bool = typer.Option(False, "--reindex", help="Build the index again from nothing first."),
    stats: bool = typer.Option(False, "--stats", help="Describe the index (after bringing it up to date)."),
    color: str = typer.Option("auto", "--color", "--colour", metavar="WHEN", help="auto, always or never."),
    json_output: bool = json_option(),
    json_lines: bool = typer.Option(
        False,
        "--json-lines",
        help="JSON Lines: a record per result, then a summary.",
        callback=_json_lines_mode,
        is_eager=True,
    ),
) -> ExitCode:
    from pi_compact.archive import Filters, Query, search, session_files
    from pi_compact.archive.scope import NO_HEADER

    env = env_of(ctx)
    if json_output and json_lines:
        raise UsageError("--json and --json-lines clash: choose one document or a stream of records")
    if color not in ("auto", "always", "never"):
        raise UsageError(f"--color must be auto, always or never (got {color!r})")
    env.color_choice = None if color == "auto" else color == "always"
    given = [name for name, value in (("QUERY", query), ("--regex", regex), ("-F", fixed)) if value is not None]
    if len(given) > 1:
        raise UsageError(f"{' and '.join(given)} clash: search for words, a --regex or a -F string")
    if stats and given:
        raise UsageError("--stats describes the index: it takes no QUERY, --regex or -F")
    if no_index and (stats or reindex):
        raise UsageError(f"--no-index and {'--stats' if stats else '--reindex'} clash: one leaves the index out")
    if not given and not stats and not reindex:
        raise UsageError("missing QUERY (or --regex PATTERN, -F STRING; --stats describes the index)")
    if cwd is not None and here:
        raise UsageError("--cwd and --here clash: --here is --cwd with the current directory")
    if branch not in ("all", "leaf"):
        raise UsageError(f"--branch must be all or leaf (got {branch!r})")
    if ignore_case and not (regex is not None or fixed is not None):
        raise UsageError("-i applies to --regex and -F: words match whatever their case")
    parsed = None
    if given:
        text = query if query is not None else regex if regex is not None else fixed
        assert text is not None
        parsed = Query.parse(text, regex=regex is not None, fixed=fixed is not None, ignore_case=ignore_case)
    filters = Filters(
        cwd=os.getcwd() if here else str(cwd) if cwd is not None else None,
        since_ms=_ms(since, "--since"),
        until_ms=_ms(until, "--until"),
        roles=frozenset(role) if role else None,
        tool=tool,
        errors=errors,
        branch=branch,
    )
    found = session_files([str(d) for d in dirs or []])
    for path, reason in found.unreadable:
        env.warn(f"{path}: cannot read ({reason}): skipped")
    store = _open(env, no_index=no_index, reindex=reindex)
    try:
        with _Indexing(env) as progress:
            scope = store.run(lambda: store.update(found.files, progress.update))
        for warning in store.warnings:
            env.warn(warning)
        for path, reason in scope.skipped:
            if reason == NO_HEADER:
                env.warn(f"{path}: {reason}: skipped")
            else:
                env.warn(f"{path}: cannot read the session ({reason}): skipped")
        if parsed is None:
            figures = store.run(store.stats)
            if json_output or json_lines:
                env.emit(figures)
            else:
                _print_stats(env, figures, reindexed=reindex)
            return ExitCode.OK
        shown = len(store.warnings)
        page = search(store, scope, parsed, filters, limit=max_count, cursor=cursor)
        for warning in store.warnings[shown:]:  # the index found corrupt by the query itself, built again
            env.warn(warning)
        if page.stopped:
            env.warn(page.stopped)
    finally:
        store.close()
    if json_output:
        env.emit(page.to_json())
    elif json_lines:
        for hit in page.hits:
            env.emit_record("match", hit.to_json())
        env.emit_record("summary", page.summary_json())
    else:
        _print_hits(env, page)
        if page.next_cursor:
            from pi_compact.cli.paging import next_command

            if page.total is not None:
                count = f"{len(page.hits)} of {page.total:,}"
            else:  # the count stopped: those it reached, at least one more than this page's (there is a next page)
                count = f"{len(page.hits)} of at least {max(page.total_at_least, len(page.hits) + 1):,}"
            env.note(f"{count} results; next page: {next_command(env, page.next_cursor, drop=('--reindex',))}")
    if not page.hits:
        _say_nothing_found(env, page, found, store.path)
    return ExitCode.OK if page.hits else ExitCode.NO


def _say_nothing_found(env: Environment, page: Any, found: Any, index: Path | None) -> None:
    """What a search that found nothing looked for, and where: the sessions and the trees searched, the index;
    the likely fixes of a typo."""
    where = ", ".join(env.shown(root) for root in found.roots) or "no directory"
    query = page.query
    what = {"words": "the words", "regex": "the regular expression", "fixed": "the string"}[query.mode]
    if page.sessions == 0:
        env.note(f"no sessions to search: none found under {where}")
        return
    sessions = f"{page.sessions:,} session{'s' if page.sessions != 1 else ''}"
    kept = f" (index {env.shown(str(index))})" if index is not None else ""
    env.note(f"no results for {what} {query.text!r} in {sessions} under {where}{kept}")
    if page.suggestions:
        env.note("did you mean: " + "; ".join(repr(s) for s in page.suggestions) + "?")


def _ms(text: str | None, flag: str) -> int | None:
    if text is None:
        return None
    from pi_compact.search.pages import parse_time

    try:
        when = parse_time(text)
    except UsageError as exc:
        raise UsageError(exc.message.replace("--since", flag, 1)) from None
    return int(when.timestamp() * 1000)


def _open(env: Environment, *, no_index: bool, reindex: bool) -> Any:
    from pi_compact.archive.store import open_store, reset_store, temporary_store

    if no_index:
        return temporary_store()
    return reset_store() if reindex else open_store()


class _Indexing:
    """A progress line on stderr while the index is brought up to date (a terminal only, after half a second)."""

    def __init__(self, env: Environment) -> None:
        self.env = env
        self.enabled = env.stderr_isatty and env.json_mode is None and env.environ.get("TERM", "") != "dumb"
        self.started = time.monotonic()
        self.last = 0.0
        self.shown = False

    def __enter__(self) -> _Indexing:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.shown:
            self.env.stderr.write("\r\x1b[K")
            self.env.stderr.flush()

    def update(self, done: int, total: int) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now - self.started < 0.5 or now - self.last < 0.2:
            return
        self.last = now
        self.shown = True
        share = done * 100 // total if total else 100
        self.env.stderr.write(f"\rindexing sessions: {share}% ({human_size(done)} of {human_size(total)})\x1b[K")
        self.env.stderr.flush()


def _print_stats(env: Environment, figures: dict[str, Any], *, reindexed: bool) -> None:
    if reindexed:
        env.note("the search index was built again")
    env.text(f"index:     {env.shown(figures['path']) if figures['path'] else 'none (a temporary one, as --no-index)'}")
    env.text(f"sessions:  {figures['sessions']:,} ({figures['other_files']:,} other .jsonl files)")
    env.text(f"entries:   {figures['entries']:,}")
    env.text(f"indexed:   {human_size(figures['indexed_bytes'])} of session files")
    env.text(f"size:      {human_size(figures['database_bytes'])} ({figures['tokenizer']}, format {figures['format']})")


def _print_hits(env: Environment, page: Any) -> None:
    from pi_compact.session.jsonline import safe_text

    for number, hit in enumerate(page.hits):
        if number:
            env.text("")
        where = env.style(env.shown(hit.session), "heading")
        stamp, role = env.shown_text(hit.timestamp or "-"), env.shown_text(hit.role)
        env.text(f"{where}  {stamp}  {env.style(hit.entry_id or '-', 'id')}  {role}")
        snippet = safe_text(hit.snippet)
        parts: list[str] = []
        at = 0
        for start, end in hit.highlights:
            if start < at:
                continue
            parts.append(env.shown_text(snippet[at:start]))
            parts.append(env.style(env.shown_text(snippet[start:end]), "match"))
            at = end
        parts.append(env.shown_text(snippet[at:]))
        env.text("  " + "".join(parts))
        if hit.show_command:
            env.text("  " + env.style(hit.show_command, "dim"))
