"""``picompact list``, ``grep``, ``show`` and ``context``: read the raw history, and the context Pi sends.

Thin wrappers over ``pi_compact.search``; everything here is about printing. Human output is coloured on a
terminal and plain (grep-like, one record a line) in a pipe; ``--json`` is stable (grep: JSON Lines).
"""

from __future__ import annotations

import gc
from dataclasses import replace
from pathlib import Path
from typing import Any

import typer

from pi_compact.cli._progress import Progress
from pi_compact.cli.app import app, env_of
from pi_compact.cli.common import human_size, report_diagnostics, resolve_session_path, split_thing_session
from pi_compact.cli.env import Environment
from pi_compact.cli.options import JsonOpt, LeafOpt, NoCacheOpt, SessionArg, json_option
from pi_compact.errors import ExitCode, UsageError

AllBranchesOpt = typer.Option(
    False, "--all-branches", help="Also entries off the current branch, each labelled with the leaf of its branch."
)
RoleOpt = typer.Option(
    None,
    "--role",
    metavar="ROLE",
    help="Only these roles or entry types (user, assistant, toolResult, compaction, ...; repeatable).",
)
CursorOpt = typer.Option(
    None, "--cursor", metavar="CURSOR", help="Continue where the previous page ended (printed with each page)."
)


class _Printer:
    """Human output: colours only on a terminal; control characters made visible there."""

    def __init__(self, env: Environment) -> None:
        self.env = env
        self.color = env.colors

    def style(self, text: str, name: str) -> str:
        return self.env.style(text, name)

    def clean(self, text: str) -> str:
        from pi_compact.search.render import safe_text

        return self.env.shown_text(safe_text(text))

    def write(self, line: str) -> None:
        self.env.text(line)


STDIN = "-"  # SESSION given as "-": the session is read from standard input
HOLD = 16 * 1024 * 1024  # list, grep and show drop parsed bodies whenever they hold this much of the file


def load_session_arg(env: Environment, session: Path | None, *, decorated: bool = False, cache: bool = False) -> Any:
    """The session named by SESSION (a file, ``-`` for stdin, or the default session), and its bytes if read
    from stdin. ``decorated``: keep the decorated-only lines of the entries whose body the loader drops (grep
    searches them in every entry; rendering them then would parse those bodies a second time). ``cache``: resume
    from the index of the file kept in the user's cache (``session.index``)."""
    if session is not None and str(session) == STDIN:
        from pi_compact.session.load import load_session_bytes

        data = env.stdin.buffer.read()
        return load_session_bytes(data, "<stdin>"), data
    if not env.owns_process:
        return _load_file(session, decorated, cache), None
    # The process's own run (``core.main`` froze start-up): the session lives to exit, so what the load made is
    # frozen before the collector runs again. Otherwise its first pass after the load walks every entry built (a
    # tenth of a grep that resumes from the index)
    enabled = gc.isenabled()
    gc.disable()
    try:
        loaded = _load_file(session, decorated, cache)
        gc.freeze()
    finally:
        if enabled:
            gc.enable()
    return loaded, None


def _load_file(session: Path | None, decorated: bool, cache: bool) -> Any:
    from pi_compact.session.load import load_session

    if decorated:
        from pi_compact.search.render import render_entry

        def decorate(entry: Any) -> tuple[str, ...]:
            return render_entry(entry, decorated_only=True).lines

        return load_session(resolve_session_path(session), decorate=decorate, cache=cache, release_bytes=HOLD)
    return load_session(resolve_session_path(session), cache=cache, release_bytes=HOLD)


def _where(loaded: Any) -> str:
    return str(loaded.path) if loaded.path is not None else "<stdin>"


def _load(
    env: Environment,
    session: Path | None,
    leaf: str | None,
    all_branches: bool,
    *,
    decorated: bool = False,
    cache: bool = False,
) -> Any:
    """The transcript to search; the load problems of the file and of the branch reported, in line order."""
    from pi_compact.search.transcript import build_transcript

    loaded, data = load_session_arg(env, session, decorated=decorated, cache=cache)
    try:
        transcript = build_transcript(loaded, leaf_id=leaf, all_branches=all_branches)
    except Exception:
        report_diagnostics(env, loaded.diagnostics, _where(loaded))
        raise
    report_diagnostics(env, [*loaded.diagnostics, *transcript.branch.diagnostics], _where(loaded))
    if data is not None:
        transcript.attach_raw(data)
    return transcript


def _next_command(env: Environment, cursor: str) -> str:
    from pi_compact.cli.paging import next_command

    return next_command(env, cursor)


# ---------------------------------------------------------------------------------------------------------------


@app.command("list")
def list_command(
    ctx: typer.Context,
    session: Path | None = SessionArg,
    leaf: str | None = LeafOpt,
    all_branches: bool = AllBranchesOpt,
    role: list[str] | None = RoleOpt,
    since: str | None = typer.Option(
        None, "--since", metavar="TIME", help="Only entries at or after TIME (ISO time, or an age: 30m, 2h, 7d)."
    ),
    limit: int | None = typer.Option(None, "--limit", metavar="N", help="Entries per page (default 50)."),
    cursor: str | None = CursorOpt,
    json_output: bool = JsonOpt,
) -> ExitCode:
    """List the entries of the raw branch: id, type/role, timestamp, size, a one-line preview.

    JSON: {"schema_version": 1, "entries": [{"id", "type", "role", "timestamp", "preview", "size" (bytes of the
    JSON line), "line" (in the file), "branch" (leaf id of its branch), "on_branch"}], "total" (entries passing
    the filters), "next_cursor" (null on the last page)}.
    """
    from pi_compact.search.listing import list_entries

    env = env_of(ctx)
    with Progress(env, f"reading {session if session is not None else 'the session'}"):
        transcript = _load(env, session, leaf, all_branches)
        page = list_entries(transcript, roles=role, since=since, limit=limit, cursor=cursor)
    if json_output:
        env.emit(page.to_json())
        return ExitCode.OK
    printer = _Printer(env)
    for info in page.entries:
        kind = info.role or info.type
        branch = ""
        if all_branches:
            branch = "current  " if info.on_branch else f"{printer.clean(info.branch or '?'):<8} "
        size = human_size(info.size) if env.stdout_isatty else str(info.size)
        printer.write(
            f"{printer.style(info.id, 'id')}  {printer.clean(kind):<17} {printer.clean(info.timestamp or '-'):<24} "
            f"{size:>9}  {branch}{printer.clean(info.preview)}"
        )
    env.stdout.flush()
    if page.next_cursor:
        env.note(f"showing {len(page.entries)} of {page.total}; next page: {_next_command(env, page.next_cursor)}")
    return ExitCode.OK


# ---------------------------------------------------------------------------------------------------------------

_GREP_HELP = """Search the raw branch with a regular expression, line by line.

The branch is rendered as text: an "ENTRY <id> <role> <time>" header per entry, then sections [thinking],
[text], [toolCall] (arguments as "name: value"), [toolResult] (the output in full), [bash], [summary], ...
Each matching line is printed with the entry and section it belongs to (from the renderer's index, never
from the text). Exit 0 when something matched, 1 when nothing did, 2 on error.

The lines picompact writes itself (the ENTRY headers, and the [section] markers such as "[toolResult] read
id=... error") are searched only when asked: --section header for headers, --section meta for markers. So
`grep assistant` finds what was said, not every assistant header. Values from the session (a label's text,
an error message) are always searched.

Arguments, as grep takes them: PATTERN [SESSION]. Or -e PATTERN (repeatable; a line matches when any pattern
does; use -e for a pattern that starts with "-") and -f FILE (one pattern a line; "-" for standard input);
with -e or -f the only argument is SESSION. SESSION "-" reads the session from standard input. The older
order SESSION PATTERN still works when SESSION is an existing file and PATTERN is not (a hint says so).

On a terminal: an "ENTRY <id> <role> <time>" heading per entry with a match, then each line as
LINE:SECTION:TEXT (a context line LINE-SECTION-TEXT), the match highlighted, a blank line between entries.
Plain output (in a pipe): ENTRY_ID:SECTION:LINE:TEXT for a match, ENTRY_ID-SECTION-LINE-TEXT for a context
line, "--" between groups; LINE counts lines within the entry, as `show` numbers them. With --all-branches
an entry off the current branch is written ENTRY_ID@LEAF (the leaf of its branch). -c prints ENTRY_ID:COUNT
(matching lines per entry, entries without any left out), -l only ENTRY_ID, one per line.

--json writes JSON Lines: {"type": "match", "version": 1, "data": {...}} per match, then one
{"type": "summary", "version": 1, "data": {...}}. match data: entry_id, entry_type, role, timestamp, branch
(leaf id), on_branch, line_number, section, text (a window of at most 400 characters around the first match
when the line is longer), offset (where text starts in the line), length (of the full line), truncated,
submatches [{start, end}] (character offsets in text), before and after (context lines, each with
line_number, section, text, offset, length, truncated). summary data: pattern, patterns, invert, matches (on
this page), entries_searched, complete, stopped_by (max_count or max_chars), next_cursor. With -c or -l: one
{"type": "count"} or {"type": "entry"} record per entry (id, type, role, timestamp, preview, size, line,
branch, on_branch, count), then a summary {pattern, patterns, invert, entries, matches}.

Pages hold at most --max-count matches (default 50) and about 20,000 characters; the next page is
printed as a command with --cursor.
"""


@app.command(help=_GREP_HELP)
def grep(
    ctx: typer.Context,
    args: list[str] | None = typer.Argument(None, metavar="PATTERN [SESSION]", show_default=False),
    regexp: list[str] | None = typer.Option(
        None, "-e", "--regexp", metavar="PATTERN", help="A pattern (repeatable; also for one starting with -)."
    ),
    pattern_file: list[str] | None = typer.Option(
        None, "-f", "--file", metavar="FILE", help='Patterns from FILE, one a line ("-": standard input; repeatable).'
    ),
    ignore_case: bool = typer.Option(False, "-i", "--ignore-case", help="Case-insensitive match."),
    fixed: bool = typer.Option(False, "-F", "--fixed-strings", help="PATTERN is a literal string."),
    word: bool = typer.Option(False, "-w", "--word-regexp", help="Match whole words only."),
    invert: bool = typer.Option(False, "-v", "--invert-match", help="Select the lines that do not match."),
    count: bool = typer.Option(False, "-c", "--count", help="Print ENTRY_ID:COUNT, matching lines per entry."),
    ids_only: bool = typer.Option(
        False, "-l", "--files-with-matches", help="Print only the ids of entries with a match, one per line."
    ),
    context: int = typer.Option(
        0, "-C", "--context", metavar="N", help="Show N lines around each match (within its entry; at most 20)."
    ),
    role: list[str] | None = RoleOpt,
    section: list[str] | None = typer.Option(
        None,
        "--section",
        metavar="SECTION",
        help="Only lines in these sections: thinking, text, toolCall, toolResult, bash, summary, custom, system, "
        "meta (metadata, and picompact's [section] markers), header (the ENTRY lines) (repeatable).",
    ),
    max_count: int | None = typer.Option(None, "--max-count", "-m", metavar="N", help="Matches per page (default 50)."),
    max_chars: int | None = typer.Option(
        None, "--max-chars", metavar="N", help="Characters of matched and context lines per page (default 20,000)."
    ),
    cursor: str | None = CursorOpt,
    leaf: str | None = LeafOpt,
    all_branches: bool = AllBranchesOpt,
    color: str = typer.Option(
        "auto", "--color", "--colour", metavar="WHEN", help="Colour: auto (on a terminal), always or never."
    ),
    regex_timeout: float = typer.Option(
        2.0,
        "--regex-timeout",
        metavar="SECONDS",
        help=(
            "Seconds of CPU time the pattern may spend on one line before grep gives up (exit 2; huge values: "
            "no limit; a busy machine makes the wait longer, not the limit shorter)."
        ),
    ),
    search_timeout: float | None = typer.Option(
        None,
        "--search-timeout",
        metavar="SECONDS",
        help=(
            "Seconds of CPU time the pattern may spend matching in the whole search (exit 2; default 10 × "
            "--regex-timeout)."
        ),
    ),
    json_output: bool = json_option("JSON Lines: a record per match, then a summary (an error is an error record)."),
    no_cache: bool = NoCacheOpt,
) -> ExitCode:
    from pi_compact.search.decoration import grep_wants_decorated
    from pi_compact.search.grepping import GrepQuery, grep_counts, grep_stream
    from pi_compact.search.matching import regex_timeout as check_timeout
    from pi_compact.search.matching import search_budget
    from pi_compact.search.pages import DEFAULT_LIMITS

    env = env_of(ctx)
    if color not in ("auto", "always", "never"):
        raise UsageError(f"--color must be auto, always or never (got {color!r})")
    env.color_choice = None if color == "auto" else color == "always"
    session, patterns = _grep_patterns(env, list(args or []), regexp, pattern_file)
    if count and ids_only:
        raise UsageError("-c and -l clash: -c counts matching lines per entry, -l lists the entries only")
    summary_only = "-c" if count else "-l" if ids_only else None
    if summary_only and (context or cursor or max_count is not None or max_chars is not None):
        raise UsageError(
            f"{summary_only} prints one line per entry, unpaged: -C, --cursor, --max-count and --max-chars do not apply"
        )
    check_timeout(regex_timeout)  # NaN, zero or negative: a usage error before the session is read
    search_budget(regex_timeout, search_timeout)
    limits = replace(DEFAULT_LIMITS, regex_timeout=regex_timeout, search_timeout=search_timeout)
    # A spinner on a terminal when the search takes more than a second, gone before anything is printed.
    with Progress(env, f"searching {session if session is not None else 'the session'}") as progress:
        query = GrepQuery.of(
            patterns,
            ignore_case=ignore_case,
            fixed=fixed,
            word=word,
            invert=invert,
            context=context,
            roles=role,
            sections=section,
        )
        decorated = grep_wants_decorated(query)
        transcript = _load(env, session, leaf, all_branches, decorated=decorated, cache=not no_cache)
        if summary_only:
            counts = grep_counts(transcript, query, limits=limits)
            progress.stop()
            _print_counts(env, counts, ids_only=ids_only, json_output=json_output)
            return ExitCode.OK if counts.entries else ExitCode.NO
        # Matches are printed as they are found: the first line comes out at once, and memory does not grow with
        # the page (a page can be the whole transcript with a large --max-count and --max-chars).
        page = grep_stream(transcript, query, max_count=max_count, max_chars=max_chars, cursor=cursor, limits=limits)
        page.wrap(progress.until_first)
        if json_output:
            for match in page.matches:
                env.emit_record("match", match.to_json())
            env.emit_record("summary", page.to_json())
        else:
            _print_grep(_Printer(env), page)
            progress.stop()
            if page.next_cursor:
                env.note(f"more matches ({page.stopped_by} reached); next page: {_next_command(env, page.next_cursor)}")
    return ExitCode.OK if page.count else ExitCode.NO


def _grep_patterns(
    env: Environment, positional: list[str], regexp: list[str] | None, pattern_file: list[str] | None
) -> tuple[Path | None, list[str]]:
    """The session and the patterns: ``PATTERN [SESSION]`` (either order, with a hint), or ``-e``/``-f`` and at
    most ``SESSION``."""
    if regexp or pattern_file:
        if len(positional) > 1:
            raise UsageError(f"with -e or -f, the only argument is SESSION; got {len(positional)} arguments")
        session = Path(positional[0]) if positional else None
        return session, [*(regexp or []), *(_patterns_from_files(env, pattern_file, session) if pattern_file else [])]
    if not positional:
        raise UsageError("missing PATTERN (give PATTERN, -e PATTERN or -f FILE)")
    session, pattern = split_thing_session(env, positional, "PATTERN", "grep")
    return session, [pattern]


def _patterns_from_files(env: Environment, files: list[str], session: Path | None) -> list[str]:
    """grep -f: one pattern a line of each FILE (an empty line matches every line, as in grep)."""
    patterns: list[str] = []
    for name in files:
        if name == STDIN:
            if session is not None and str(session) == STDIN:
                raise UsageError('-f - and SESSION "-" clash: standard input can hold the patterns or the session')
            data = env.stdin.buffer.read()
        else:
            try:
                data = Path(name).read_bytes()
            except OSError as exc:
                raise UsageError(f"cannot read the pattern file: {exc.strerror or exc}", path=name) from None
        text = data.decode("utf-8", "surrogateescape")
        if text.endswith("\n"):
            text = text[:-1]
        if text:
            patterns.extend(text.split("\n"))
    if not patterns:
        raise UsageError(f"no pattern in {', '.join(files)}: -f needs a file with one pattern a line")
    return patterns


def _print_counts(env: Environment, counts: Any, *, ids_only: bool, json_output: bool) -> None:
    """grep -c / -l: one line (or record) per entry with selected lines, then (JSON) the summary."""
    if json_output:
        for item in counts.entries:
            env.emit_record("entry" if ids_only else "count", item.to_json())
        env.emit_record("summary", counts.to_json())
        return
    printer = _Printer(env)
    for item in counts.entries:
        info = item.info
        name = printer.style(info.id if info.on_branch else f"{info.id}@{info.branch or '?'}", "id")
        printer.write(name if ids_only else f"{name}:{printer.style(str(item.count), 'number')}")


def _coloured_plain_lines(printer: _Printer, page: Any) -> Any:
    """``GrepPage.text_lines`` with colours: the same lines once the escape codes are removed."""
    last_entry: str | None = None
    last_line = -1
    for match in page.matches:
        entry = match.entry_id if match.on_branch else f"{match.entry_id}@{match.branch or '?'}"
        first = match.before[0].number if match.before else match.line.number
        if page.context and last_entry is not None and not (entry == last_entry and first == last_line + 1):
            yield printer.style("--", "dim")
        lines = [*((c, "-") for c in match.before), (match.line, ":"), *((c, "-") for c in match.after)]
        for line, sep in lines:
            text = _highlight(printer, line) if sep == ":" else line.display()
            yield sep.join(
                (
                    printer.style(entry, "id"),
                    printer.style(line.section, "section"),
                    printer.style(str(line.number), "number"),
                    text,
                )
            )
        last_entry = entry
        last_line = match.after[-1].number if match.after else match.line.number


def _highlight(printer: _Printer, line: Any) -> str:
    text = line.text
    if not printer.color or not line.submatches:
        body = printer.clean(text)
    else:
        parts: list[str] = []
        at = 0
        for start, end in line.submatches:
            if start < at:
                continue
            parts.append(printer.clean(text[at:start]))
            parts.append(printer.style(printer.clean(text[start:end]), "match"))
            at = end
        parts.append(printer.clean(text[at:]))
        body = "".join(parts)
    if line.offset > 0:
        body = "…" + body
    if line.offset + len(text) < line.length:
        body += "…"
    return body


def _print_grep(printer: _Printer, page: Any) -> None:
    if not printer.env.stdout_isatty:
        if printer.color:  # --color=always in a pipe: the plain format, coloured
            for text in _coloured_plain_lines(printer, page):
                printer.write(text)
            return
        for text in page.text_lines():
            printer.write(text)
        return
    last_entry: str | None = None
    last_line = -1
    for match in page.matches:
        entry = match.entry_id if match.on_branch else f"{match.entry_id}@{match.branch or '?'}"
        lines = [*((c, False) for c in match.before), (match.line, True), *((c, False) for c in match.after)]
        if entry != last_entry:
            if last_entry is not None:
                printer.write("")
            where = "" if match.on_branch else f"  (off the current branch; leaf {match.branch})"
            stamp = f" {match.timestamp}" if match.timestamp else ""
            printer.write(
                printer.style(f"ENTRY {match.entry_id} {match.role or match.entry_type}{stamp}{where}", "heading")
            )
        elif page.context and lines[0][0].number != last_line + 1:
            printer.write(printer.style("--", "dim"))
        for line, is_match in lines:
            sep = ":" if is_match else "-"
            number = printer.style(str(line.number), "number")
            section = printer.style(line.section, "section")
            printer.write(f"{number}{sep}{section}{sep}{_highlight(printer, line)}")
        last_entry = entry
        last_line = lines[-1][0].number


# ---------------------------------------------------------------------------------------------------------------


@app.command()
def show(
    ctx: typer.Context,
    args: list[str] = typer.Argument(..., metavar="ENTRY_ID [SESSION]", show_default=False),
    page: int | None = typer.Option(
        None, "--page", metavar="N", help="Page N of a long entry (pages of 20,000 characters)."
    ),
    cursor: str | None = CursorOpt,
    raw: bool = typer.Option(False, "--raw", help="The entry's exact JSON line from the file, unrendered."),
    leaf: str | None = LeafOpt,
    json_output: bool = JsonOpt,
) -> ExitCode:
    """Show one entry in full, rendered as grep sees it (or its raw JSON line with --raw).

    ENTRY_ID may be any entry of the file (a unique prefix of 4+ characters works); an unknown id exits 2 and
    names the nearest ids. Long entries are paged; a line longer than a page is split across pages. The older
    order SESSION ENTRY_ID still works when SESSION is an existing file and ENTRY_ID is not (a hint says so).

    JSON: {"schema_version": 1, "entry": {id, type, role, timestamp, preview, size, line, branch, on_branch},
    "page", "pages", "total_lines", "total_chars", "lines": [{line_number, section, text, offset, length}],
    "next_cursor"}.
    """
    from pi_compact.search.show import entry_raw, show_entry

    env = env_of(ctx)
    session, entry_id = split_thing_session(env, args, "ENTRY_ID", "show")
    if raw and (page is not None or cursor is not None):
        raise UsageError("--raw prints the whole line: it cannot be combined with --page or --cursor")
    with Progress(env, f"reading {session if session is not None else 'the session'}"):
        transcript = _load(env, session, leaf, True)
        result = None if raw else show_entry(transcript, entry_id, page=page, cursor=cursor)
    if result is None:
        env.write_bytes(env.shown_json(entry_raw(transcript, entry_id) + b"\n"))
        return ExitCode.OK
    if json_output:
        env.emit(result.to_json())
        return ExitCode.OK
    printer = _Printer(env)
    if not result.entry.on_branch:
        ends = f" (its branch ends at {result.entry.branch})" if result.entry.branch else ""
        env.note(f"entry {result.entry.id} is off the current branch{ends}")
    for line in result.lines:
        text = printer.clean(line.text)
        if line.number == 1 and line.offset == 0 and line.section == "header":
            text = printer.style(text, "heading")
        printer.write(text)
    env.stdout.flush()
    if result.pages > 1:
        more = f"; next: {_next_command(env, result.next_cursor)}" if result.next_cursor else ""
        env.note(f"page {result.page} of {result.pages} ({result.total_chars:,} characters){more}")
    return ExitCode.OK


# ---------------------------------------------------------------------------------------------------------------


@app.command()
def context(
    ctx: typer.Context,
    session: Path | None = SessionArg,
    leaf: str | None = LeafOpt,
    json_output: bool = JsonOpt,
) -> ExitCode:
    """What the model sees now: Pi's context after compactions and context edits, message by message.

    Each message with its position, entry id, role and estimated tokens (Pi's chars/4 rule), the compaction
    boundary marked, and the totals: the sum of the estimates and Pi's context-token figure.

    JSON: {"schema_version": 1, "leaf_id", "branch_length", "compaction_id", "first_kept_entry_id",
    "messages": [{position (-1: omitted by a context edit), entry_id, entry_type, role, tokens, segment
    (summary | kept | new | history), edit (omitted | replaced | null), edit_id, preview}], "message_count",
    "estimated_tokens", "context_tokens", "context_tokens_method", "context_tokens_source"}.
    """
    from pi_compact.search.context import SEGMENT_TITLES, build_context_view
    from pi_compact.session.tree import get_branch

    env = env_of(ctx)
    loaded, _ = load_session_arg(env, session)
    try:
        branch = get_branch(loaded, leaf)
    except Exception:
        report_diagnostics(env, loaded.diagnostics, _where(loaded))
        raise
    report_diagnostics(env, [*loaded.diagnostics, *branch.diagnostics], _where(loaded))
    view = build_context_view(branch)
    if json_output:
        env.emit(view.to_json())
        return ExitCode.OK
    printer = _Printer(env)
    segment = None
    for message in view.messages:
        if message.segment != segment:
            segment = message.segment
            title = SEGMENT_TITLES[segment]
            if segment == "summary":
                title += f" (entry {view.compaction_id}; it replaces everything before {view.first_kept_id})"
            printer.write(printer.style(f"── {title} ──", "heading"))
        position = "-" if message.position < 0 else str(message.position)
        edit = f" [{message.edit} by {message.edit_id}]" if message.edit else ""
        printer.write(
            f"{position:>5}  {printer.style(message.entry_id, 'id')}  {printer.clean(message.role):<17} "
            f"{message.tokens:>8,}  {printer.clean(message.preview)}{edit}"
        )
    count = sum(1 for m in view.messages if m.position >= 0)
    printer.write(
        f"{count} messages, ~{view.estimated_tokens:,} tokens estimated; "
        f"context tokens {view.context_tokens:,} [{view.context_tokens_source}]"
    )
    return ExitCode.OK
