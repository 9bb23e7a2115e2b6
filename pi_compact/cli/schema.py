"""The JSON every command prints, declared in one place.

``Environment.emit`` stamps ``schema_version`` (``SCHEMA_VERSION``) on each document; JSON Lines commands wrap each
record as ``{"type", "version", "data"}``. Each document's top-level keys are declared once, as a TypedDict: a
document that is a library result's ``to_json()`` derives from the TypedDict that method returns (declared beside
it, in the core: ``CheckJSON`` in ``ops.check``, and mypy checks ``to_json`` against it), with ``schema_version``
first (``Versioned``) and the keys the command line adds of its own declared here; the documents the command line
assembles itself (``error``, ``pi status``, ``pi tool``) are declared here whole. docs/json.md's "JSON output"
table lists the same keys, and ``tests/cli/test_json_schema.py`` checks both against what the commands print.
Nested values are described in docs/commands.md. Adding a key is compatible; renaming or removing one needs a new
``SCHEMA_VERSION``.

Only the tests and tools/docs.py import this module (no command does), so it may import the core freely.
"""

from __future__ import annotations

from typing import Any, TypedDict

from pi_compact.archive.query import HitJSON, SearchPageJSON, SearchSummaryJSON
from pi_compact.archive.store import StoreStatsJSON
from pi_compact.checkpoint.mode import NotNeededJSON
from pi_compact.checkpoint.summary.preview import SummaryPreviewJSON
from pi_compact.cli._jsonmode import JSON_LINES, JSON_LINES_COMMANDS, json_mode_for
from pi_compact.cli.env import SCHEMA_VERSION
from pi_compact.extension.hook import CheckpointJSON, EffectiveConfigJSON, PruneDraftsJSON
from pi_compact.extension.install import InstallJSON, InstallStatusJSON, UninstallJSON
from pi_compact.lookup.agent import LookupJSON
from pi_compact.ops.audit import AuditJSON
from pi_compact.ops.check import CheckJSON
from pi_compact.ops.compact import CompactJSON
from pi_compact.ops.coverage import CoverageJSON
from pi_compact.ops.lint_report import LintJSON, LintReportJSON, LintTotalsJSON
from pi_compact.ops.prune import PruneJSON, PruneSummaryJSON
from pi_compact.ops.prune_policy import DecisionJSON  # noqa: F401  (PruneDraftsJSON's "decision", for the docs)
from pi_compact.ops.rules import RulesReportJSON
from pi_compact.ops.rules_block import RulesWrittenJSON
from pi_compact.pi.config import PicompactConfigJSON
from pi_compact.pi.sessions import SessionListingJSON
from pi_compact.search.context import ContextViewJSON
from pi_compact.search.grep_results import EntryCountJSON, GrepMatchJSON, GrepSummaryJSON
from pi_compact.search.listing import EntryPageJSON
from pi_compact.search.show import ShowPageJSON


class Versioned(TypedDict):
    """The key ``Environment.emit`` stamps first on every document."""

    schema_version: int


class ErrorDoc(Versioned):
    """Any command's error with ``--json`` (one line); ``error`` is ``{message, exit_code}``."""

    error: dict[str, Any]


class ErrorRecord(TypedDict):
    """The ``data`` of an ``error`` record of a JSON Lines command."""

    message: str
    exit_code: int


class CheckDoc(Versioned, CheckJSON):
    """``check --json``: ``CheckResult.to_json()``."""

    prune: PruneSummaryJSON  # what `picompact prune` would free now (``PrunePlan.summary_json``)


class SessionsDoc(Versioned, SessionListingJSON):
    """``sessions --json``: ``SessionListing.to_json()``."""


class CompactDoc(Versioned, CompactJSON):
    """``compact --json`` (verbatim mode, and summary mode when it writes): ``CompactResult.compaction_json()``."""


class PruneDoc(Versioned, PruneJSON):
    """``prune --json`` (a run, a dry run, or nothing to prune): ``PruneResult.to_json()``."""


class SummaryDryRunDoc(Versioned, SummaryPreviewJSON):
    """``compact --mode summary --dry-run --json``: ``SummaryPreview.to_json()``, the requests that would be sent."""


class SummaryNotNeededDoc(Versioned, NotNeededJSON):
    """``compact --mode summary --dry-run --if-needed --json`` when nothing needs compacting:
    ``CompactResult.not_needed_json()``."""


class ListDoc(Versioned, EntryPageJSON):
    """``list --json``: ``EntryPage.to_json()``."""


class ShowDoc(Versioned, ShowPageJSON):
    """``show --json``: ``ShowPage.to_json()``."""


class ContextDoc(Versioned, ContextViewJSON):
    """``context --json``: ``ContextView.to_json()``."""


class SearchDoc(Versioned, SearchPageJSON):
    """``search --json``: ``SearchPage.to_json()``; each of ``results`` is a ``Hit.to_json()``, as the ``match``
    records of ``search --json-lines``."""


class SearchStatsDoc(Versioned, StoreStatsJSON):
    """``search --stats --json``: ``Store.stats()``."""


class _LookupSession(TypedDict):
    session: str  # the session file, as the command resolved it


class LookupDoc(Versioned, _LookupSession, LookupJSON):
    """``lookup --json``: the session, ``LookupResult.to_json()``, and the command's note."""

    note: str | None


class _LintLevel(TypedDict):
    level: str  # --level, the severity from which findings make the exit status 1


class LintDoc(Versioned, _LintLevel, LintJSON):
    """``lint --json``: the level, then ``lint_json()`` (each of ``files`` a ``LintReport.to_json()``, as the
    ``file`` records of ``lint --all --json``; ``total`` a ``LintTotals.to_json()``, as its ``summary`` record)."""


class AuditDoc(Versioned, AuditJSON):
    """``audit --json``: ``AuditResult.to_json()``."""


class CoverageDoc(Versioned, CoverageJSON):
    """``coverage --json``: ``CoverageResult.to_json()``."""


class _InstallStatus(TypedDict):
    status: str


class PiInstallDoc(Versioned, _InstallStatus, InstallJSON):
    """``pi install --json``: ``status`` then ``InstallResult.to_json()``."""


class PiUninstallDoc(Versioned, UninstallJSON):
    """``pi uninstall --json``: ``UninstallResult.to_json()``."""


class PiStatusDoc(Versioned):
    version: str
    command: list[str]
    installs: list[InstallStatusJSON]
    project_trusted: bool | None
    project_trust: str
    settings: PicompactConfigJSON
    warnings: list[str]


# The documents the Pi extension reads: their keys follow Pi's own names (settings keys, compaction fields).
class PiConfigDoc(Versioned, EffectiveConfigJSON):
    """``pi config --json``: ``effective_config()``, ``PicompactConfig.to_json()`` and what the extension needs
    beside it."""


class PiCheckpointDoc(Versioned, CheckpointJSON):
    """``pi checkpoint``: ``build_checkpoint()``."""


class PiToolDoc(Versioned):
    text: str


class PiPruneDraftsDoc(Versioned, PruneDraftsJSON):
    """``pi prune-drafts``: ``prune_drafts()``."""


class RulesDoc(Versioned, RulesReportJSON):
    """``rules --json``: ``RulesReport.to_json()``, what --write did (``WriteResult.to_json()``), and with
    --dry-run the unified diff it would make ("" when nothing would change; null without --dry-run)."""

    written: RulesWrittenJSON | None
    diff: str | None


# What each document is called in docs/json.md's "JSON output" table, and its keys' declaration.
DOCUMENTS: dict[str, type] = {
    "error": ErrorDoc,
    "check": CheckDoc,
    "sessions": SessionsDoc,
    "compact": CompactDoc,
    "compact --mode summary --dry-run": SummaryDryRunDoc,
    "compact --mode summary --dry-run, not needed": SummaryNotNeededDoc,
    "prune": PruneDoc,
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
    "pi prune-drafts": PiPruneDraftsDoc,
}

# JSON Lines records by command and record type: the keys of their ``data`` (each a library result's ``to_json()``
# but the error).
RECORDS: dict[str, dict[str, type]] = {
    "grep": {
        "match": GrepMatchJSON,
        "count": EntryCountJSON,
        "entry": EntryCountJSON,
        "summary": GrepSummaryJSON,
        "error": ErrorRecord,
    },
    "lint --all": {"file": LintReportJSON, "summary": LintTotalsJSON},
    "search --json-lines": {"match": HitJSON, "summary": SearchSummaryJSON, "error": ErrorRecord},
}


def keys(declaration: type) -> list[str]:
    """A document's top-level keys, in declaration order: its bases' first, in the order they are listed, then its
    own (a TypedDict merges them into ``__annotations__``)."""
    return list(declaration.__annotations__)


__all__ = ["DOCUMENTS", "JSON_LINES", "JSON_LINES_COMMANDS", "RECORDS", "SCHEMA_VERSION", "json_mode_for", "keys"]
