"""What ``lint`` reports: a ``Finding`` (a code, a severity, where, what Pi does), the ``LintReport`` of one file,
the ``LintTotals`` of many, and the findings made from an entry, a loader diagnostic or a fatal error; their JSON
(``lint_json``: the ``lint --json`` document of one or more files)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal, TypedDict

from pi_compact.errors import PiCompactError, UsageError
from pi_compact.ops.lint_codes import PI_DOES
from pi_compact.session.entries import Diagnostic, Entry

Severity = Literal["error", "warning", "info"]
SEVERITIES: tuple[Severity, ...] = ("error", "warning", "info")
RANK: dict[str, int] = {"info": 0, "warning": 1, "error": 2}
FATAL_DEFAULT_CODE = "unreadable"


class FindingJSON(TypedDict):
    """``Finding.to_json()``."""

    code: str
    severity: str
    line: int | None
    entry_id: str | None
    message: str
    pi: str | None


@dataclass(frozen=True, slots=True)
class Finding:
    """One problem: a stable code, a severity, where it is, and what Pi does about it."""

    code: str
    severity: Severity
    message: str
    line: int | None = None
    entry_id: str | None = None
    pi: str | None = None

    def to_json(self) -> FindingJSON:
        return {
            "code": self.code,
            "severity": self.severity,
            "line": self.line,
            "entry_id": self.entry_id,
            "message": self.message,
            "pi": self.pi,
        }


class LintReportJSON(TypedDict):
    """``LintReport.to_json()``: a ``file`` record of ``lint --all --json`` (and each of ``lint --json``'s
    ``files``); ``counts`` by severity, ``codes`` by code."""

    path: str
    readable: bool
    entries: int
    counts: dict[str, int]
    codes: dict[str, int]
    findings: list[FindingJSON]
    findings_omitted: int


@dataclass(frozen=True)
class LintReport:
    """The findings for one file. ``readable`` is False when the file cannot be read as a Pi session at all.

    ``counts`` and ``codes`` cover every finding, also those left out of ``findings`` by a cap.
    """

    path: str
    findings: tuple[Finding, ...]
    readable: bool = True
    entries: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    codes: dict[str, int] = field(default_factory=dict)
    omitted: int = 0  # findings left out by ``max_findings``

    def at_or_above(self, level: str) -> int:
        return sum(n for sev, n in self.counts.items() if RANK[sev] >= RANK[level])

    @property
    def clean(self) -> bool:
        return self.readable and not self.findings and not self.omitted

    def to_json(self) -> LintReportJSON:
        return {
            "path": self.path,
            "readable": self.readable,
            "entries": self.entries,
            "counts": {sev: self.counts.get(sev, 0) for sev in SEVERITIES},
            "codes": dict(self.codes),
            "findings": [f.to_json() for f in self.findings],
            "findings_omitted": self.omitted,
        }


def check_level(level: str) -> str:
    if level not in RANK:
        raise UsageError(f"--level must be one of error, warning, info (got {level!r})")
    return level


def finding(
    code: str, severity: Severity, message: str, entry: Entry | None = None, line: int | None = None
) -> Finding:
    """A finding about an entry (at its line, with its id), or about a line."""
    return Finding(
        code=code,
        severity=severity,
        message=message,
        line=entry.line if entry is not None else line,
        entry_id=entry.id if entry is not None else None,
        pi=PI_DOES.get(code),
    )


def from_diagnostic(diag: Diagnostic, by_line: dict[int, Entry]) -> Finding:
    """A loader (or branch) diagnostic as a finding: same code, same level, same line."""
    entry = by_line.get(diag.line) if diag.line is not None else None
    severity: Severity = diag.level if diag.level in RANK else "warning"  # type: ignore[assignment]
    return Finding(diag.code, severity, diag.message, diag.line, entry.id if entry else None, PI_DOES.get(diag.code))


def fatal_finding(exc: PiCompactError) -> Finding:
    code = exc.code or FATAL_DEFAULT_CODE
    return Finding(code, "error", exc.message, exc.line, None, PI_DOES.get(code))


class LintTotalsJSON(TypedDict):
    """``LintTotals.to_json()``: the ``summary`` record of ``lint --all --json`` (and ``lint --json``'s ``total``)."""

    files: int
    clean: int
    with_findings: int
    unreadable: int
    counts: dict[str, int]


@dataclass
class LintTotals:
    """The running total of a multi-file lint."""

    files: int = 0
    clean: int = 0
    with_findings: int = 0
    unreadable: int = 0
    counts: Counter[str] = field(default_factory=Counter)

    def add(self, report: LintReport) -> None:
        self.files += 1
        if not report.readable:
            self.unreadable += 1
        elif report.clean:
            self.clean += 1
        else:
            self.with_findings += 1
        self.counts.update(report.counts)

    def at_or_above(self, level: str) -> int:
        return sum(n for sev, n in self.counts.items() if RANK[sev] >= RANK[level])

    def to_json(self) -> LintTotalsJSON:
        return {
            "files": self.files,
            "clean": self.clean,
            "with_findings": self.with_findings,
            "unreadable": self.unreadable,
            "counts": {sev: self.counts.get(sev, 0) for sev in SEVERITIES},
        }


class LintJSON(TypedDict):
    """``lint_json()``: the reports of the files linted one by one, and their total."""

    files: list[LintReportJSON]
    total: LintTotalsJSON


def lint_json(reports: Iterable[LintReport], totals: LintTotals) -> LintJSON:
    """The ``lint --json`` document of ``reports`` (``totals``: the ``LintTotals`` they were added to)."""
    return {"files": [r.to_json() for r in reports], "total": totals.to_json()}
