"""The JSON every command prints, declared in one place.

``Environment.emit`` stamps ``schema_version`` (``SCHEMA_VERSION``) on each document; JSON Lines commands wrap each
record as ``{"type", "version", "data"}``. Each document's top-level keys are declared here once, as a TypedDict;
docs/json.md's "JSON output" table lists the same keys, and ``tests/cli/test_json_schema.py`` checks both against what
the commands print. Nested values are described in docs/commands.md. Adding a key is compatible; renaming or removing
one needs a new ``SCHEMA_VERSION``.
"""

from __future__ import annotations

from typing import Any, TypedDict

from pi_compact.cli._jsonmode import JSON_LINES, JSON_LINES_COMMANDS, json_mode_for
from pi_compact.cli.env import SCHEMA_VERSION


class ErrorDoc(TypedDict):
    """Any command's error with ``--json`` (one line); ``error`` is ``{message, exit_code}``."""

    schema_version: int
    error: dict[str, Any]


class ErrorRecord(TypedDict):
    """The ``data`` of an ``error`` record of a JSON Lines command."""

    message: str
    exit_code: int


class CheckDoc(TypedDict):
    schema_version: int
    session: dict[str, Any]
    leaf_id: str | None
    branch_length: int
    model: dict[str, Any] | None
    model_source: str
    context_tokens: int
    context_tokens_method: str
    context_tokens_source: str
    usage_entry_id: str | None
    usage_tokens: int | None
    trailing_tokens: int
    context_window: int
    context_window_source: str
    reserve_tokens: int
    keep_recent_tokens: int
    settings_sources: dict[str, Any]
    enabled: bool
    threshold: int
    should_compact: bool
    tokens_before: int
    can_compact: bool
    nothing_to_compact_reason: str | None
    first_kept_entry_id: str | None
    first_kept_index: int | None
    is_split_turn: bool
    turn_start_index: int | None
    turn_start_entry_id: str | None
    previous_compaction_id: str | None
    summarize: dict[str, Any]
    turn_prefix: dict[str, Any]
    kept: dict[str, Any]
    read_files: list[str]
    modified_files: list[str]
    tokenizer: str
    context_tokens_cl100k: int | None
    file_evidence: dict[str, Any] | None
    forecast: dict[str, Any] | None
    diagnostics: list[dict[str, Any]]
    warnings: list[str]


class SessionsDoc(TypedDict):
    schema_version: int
    sessions: list[dict[str, Any]]


class CompactDoc(TypedDict):
    """``compact --json`` (verbatim mode, and summary mode when it writes)."""

    schema_version: int
    status: str
    mode: str
    session: str
    output: str | None
    should_compact: bool
    leaf_id: str | None
    compaction_id: str | None
    reminder_id: str | None
    omitted_reminder_ids: list[str]
    first_kept_entry_id: str | None
    is_split_turn: bool
    stats: dict[str, Any]
    trimmed: Any
    attempts: int
    bytes_written: int
    added_newline: bool
    repaired_torn_line: bool
    migrated_from_version: int | None
    backup: str | None
    file_evidence: dict[str, Any] | None
    entries: list[dict[str, Any]]
    forecast: dict[str, Any] | None
    coverage: dict[str, Any] | None
    warnings: list[str]


class SummaryDryRunDoc(TypedDict):
    """``compact --mode summary --dry-run --json``: the requests that would be sent."""

    schema_version: int
    status: str
    mode: str
    session: str | None
    should_compact: bool
    tokens_before: int
    first_kept_entry_id: str | None
    is_split_turn: bool
    update: bool
    previous_summary_source: str | None
    model: dict[str, Any]
    requests: list[dict[str, Any]]
    cost: dict[str, Any]
    chunks: Any
    thinking: Any
    read_files: list[str]
    modified_files: list[str]
    redaction: Any
    warnings: list[str]


class SummaryNotNeededDoc(TypedDict):
    """``compact --mode summary --dry-run --if-needed --json`` when nothing needs compacting."""

    schema_version: int
    status: str
    mode: str
    session: str


class ListDoc(TypedDict):
    schema_version: int
    entries: list[dict[str, Any]]
    total: int
    next_cursor: str | None


class ShowDoc(TypedDict):
    schema_version: int
    entry: dict[str, Any]
    page: int
    pages: int
    total_lines: int
    total_chars: int
    lines: list[dict[str, Any]]
    next_cursor: str | None


class ContextDoc(TypedDict):
    schema_version: int
    leaf_id: str | None
    branch_length: int
    compaction_id: str | None
    first_kept_entry_id: str | None
    messages: list[dict[str, Any]]
    message_count: int
    estimated_tokens: int
    context_tokens: int
    context_tokens_method: str
    context_tokens_source: str


class GrepMatchRecord(TypedDict):
    """The ``data`` of a ``match`` record of ``grep --json``."""

    entry_id: str
    entry_type: str
    role: str | None
    timestamp: str | None
    branch: str | None
    on_branch: bool
    line_number: int
    section: str
    text: str
    offset: int
    length: int
    truncated: bool
    submatches: list[dict[str, int]]
    before: list[dict[str, Any]]
    after: list[dict[str, Any]]


class GrepSummaryRecord(TypedDict):
    """The ``data`` of the ``summary`` record that ends ``grep --json``."""

    pattern: str
    patterns: list[str]
    invert: bool
    matches: int
    entries_searched: int
    complete: bool
    stopped_by: str | None
    next_cursor: str | None


class GrepCountRecord(TypedDict):
    """The ``data`` of a ``count`` (``grep -c``) or ``entry`` (``grep -l``) record: the entry, as ``list`` shows
    it, and its number of selected lines."""

    id: str
    type: str
    role: str | None
    timestamp: str | None
    preview: str
    size: int
    line: int
    branch: str | None
    on_branch: bool
    count: int


class SearchDoc(TypedDict):
    """``picompact search --json``; each of ``results`` has the keys of ``SearchMatchRecord``."""

    schema_version: int
    query: str
    mode: str
    results: list[dict[str, Any]]
    matches: int
    sessions_searched: int
    complete: bool
    next_cursor: str | None
    skipped: list[dict[str, str]]


class SearchStatsDoc(TypedDict):
    schema_version: int
    path: str | None
    format: int
    tokenizer: str
    sessions: int
    other_files: int
    entries: int
    indexed_bytes: int
    database_bytes: int


class SearchMatchRecord(TypedDict):
    """The ``data`` of a ``match`` record of ``search --json-lines`` (and an item of ``SearchDoc.results``)."""

    session: str
    session_id: str | None
    cwd: str | None
    entry_id: str | None
    line: int
    role: str
    timestamp: str | None
    score: float | None
    snippet: str
    highlights: list[dict[str, int]]
    show: str | None


class SearchSummaryRecord(TypedDict):
    query: str
    mode: str
    matches: int
    sessions_searched: int
    complete: bool
    next_cursor: str | None
    skipped: list[dict[str, str]]


class LookupDoc(TypedDict):
    schema_version: int
    session: str
    question: str
    answer: str
    complete: bool
    found: bool
    not_found_reply: bool
    stopped_by: str | None
    writeup: str | None
    error: str | None
    answer_truncated: bool
    citations: list[dict[str, Any]]
    quotes: list[dict[str, Any]]
    unverified_quotes: int
    unknown_citations: int
    searches: dict[str, int]
    model_calls: dict[str, int]
    tool_calls: list[dict[str, Any]]
    model: dict[str, Any]
    usage: dict[str, Any]
    leaf_id: str | None
    note: str | None


class LintDoc(TypedDict):
    schema_version: int
    level: str
    files: list[dict[str, Any]]
    total: dict[str, Any]


class LintFileRecord(TypedDict):
    """``lint --all --json``: one per file (also each item of ``LintDoc.files``)."""

    path: str
    readable: bool
    entries: int
    counts: dict[str, int]
    codes: dict[str, int]
    findings: list[dict[str, Any]]
    findings_omitted: int


class LintSummaryRecord(TypedDict):
    files: int
    clean: int
    with_findings: int
    unreadable: int
    counts: dict[str, int]


class AuditDoc(TypedDict):
    schema_version: int
    session: str | None
    leaf: dict[str, Any]
    model: str | None
    replies: list[dict[str, Any]]
    markers: list[dict[str, Any]]
    ratio: dict[str, Any]
    costs: list[dict[str, Any]]
    cost_total: float
    cost_all_branches: float
    drift: list[dict[str, Any]]
    warnings: list[str]


class CoverageDoc(TypedDict):
    schema_version: int
    session: str | None
    compaction_id: str
    compaction_line: int
    kind: str
    first_kept_entry_id: str | None
    span_entries: int
    context_chars: int
    categories: dict[str, Any]
    missing: list[dict[str, Any]]
    items: list[dict[str, Any]]


class PiInstallDoc(TypedDict):
    schema_version: int
    status: str
    directory: str
    scope: str
    command: list[str]
    mode: str
    previous_mode: str | None
    state: str
    version: str
    written: list[str]
    unchanged: list[str]
    replaced_changed: list[str]
    replaced_other: dict[str, Any] | None


class PiUninstallDoc(TypedDict):
    schema_version: int
    directory: str
    scope: str
    installed: bool
    removed: list[str]
    kept: list[str]
    kept_record: str | None
    removed_directory: bool
    removed_folders: list[str]
    refused: list[str]


class PiStatusDoc(TypedDict):
    schema_version: int
    version: str
    command: list[str]
    installs: list[dict[str, Any]]
    project_trusted: bool | None
    project_trust: str
    settings: dict[str, Any]
    warnings: list[str]


# The documents the Pi extension reads: their keys follow Pi's own names (settings keys, compaction fields).
class PiConfigDoc(TypedDict):
    schema_version: int
    enabled: bool
    mode: str | None
    cap: Any
    lookupModel: str | None
    crossSession: str | bool
    sources: dict[str, str]
    warnings: list[str]
    projectTrusted: bool
    capArgs: list[str]
    lookupAvailable: bool
    tools: list[dict[str, Any]]


class PiCheckpointDoc(TypedDict):
    schema_version: int
    mode: str
    summary: str
    firstKeptEntryId: str | None
    tokensBefore: int
    details: Any
    usage: Any
    reminder: str | None
    reminderCustomType: str | None
    leafId: str | None
    settings: dict[str, Any]
    contextWindow: int
    stats: dict[str, Any] | None
    trimmed: bool
    warnings: list[str]


class PiToolDoc(TypedDict):
    schema_version: int
    text: str


class RulesDoc(TypedDict):
    """``rules --json``: the suggestions, those already in an instruction file, and what --write did."""

    schema_version: int
    cwd: str | None
    all: bool
    min_sessions: int
    sessions_read: int
    unreadable: list[dict[str, Any]]
    context_files: list[str]
    target: str | None
    suggestions: list[dict[str, Any]]
    known: list[dict[str, Any]]
    written: dict[str, Any] | None


# What each document is called in docs/json.md's "JSON output" table, and its keys' declaration.
DOCUMENTS: dict[str, type] = {
    "error": ErrorDoc,
    "check": CheckDoc,
    "sessions": SessionsDoc,
    "compact": CompactDoc,
    "compact --mode summary --dry-run": SummaryDryRunDoc,
    "compact --mode summary --dry-run, not needed": SummaryNotNeededDoc,
    "list": ListDoc,
    "show": ShowDoc,
    "context": ContextDoc,
    "lookup": LookupDoc,
    "search": SearchDoc,
    "search --stats": SearchStatsDoc,
    "lint": LintDoc,
    "audit": AuditDoc,
    "coverage": CoverageDoc,
    "rules": RulesDoc,
    "pi install": PiInstallDoc,
    "pi uninstall": PiUninstallDoc,
    "pi status": PiStatusDoc,
    "pi config": PiConfigDoc,
    "pi checkpoint": PiCheckpointDoc,
    "pi tool": PiToolDoc,
}

# JSON Lines records by command and record type: the keys of their ``data``.
RECORDS: dict[str, dict[str, type]] = {
    "grep": {
        "match": GrepMatchRecord,
        "count": GrepCountRecord,
        "entry": GrepCountRecord,
        "summary": GrepSummaryRecord,
        "error": ErrorRecord,
    },
    "lint --all": {"file": LintFileRecord, "summary": LintSummaryRecord},
    "search --json-lines": {"match": SearchMatchRecord, "summary": SearchSummaryRecord, "error": ErrorRecord},
}


def keys(declaration: type) -> list[str]:
    """A document's top-level keys, in declaration order."""
    return list(declaration.__annotations__)


__all__ = ["DOCUMENTS", "JSON_LINES", "JSON_LINES_COMMANDS", "RECORDS", "SCHEMA_VERSION", "json_mode_for", "keys"]
