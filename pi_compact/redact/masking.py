"""Masking: each detected secret replaced by a placeholder ``[REDACTED:kind:N]``, numbered per kind in the order one
``Redactor`` first meets them, and where each placeholder went."""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import Counter
from dataclasses import dataclass

from pi_compact.redact.scan import find_secrets


@dataclass(frozen=True)
class Masked:
    """Masked text and where its placeholders are: ``spans`` holds, for each secret in order, its (start, end) in
    the original text and its placeholder's (start, end) in ``text``."""

    text: str
    spans: tuple[tuple[int, int, int, int], ...] = ()

    def position(self, offset: int, *, inside: str = "end") -> int:
        """Where a position of the original text is in the masked one. A position inside a secret is the end of its
        placeholder (``inside="start"``: its start), so a cut there leaves the placeholder whole on one side."""
        k = bisect_right(self.spans, (offset, math.inf)) - 1
        if k < 0:
            return offset
        start, end, masked_start, masked_end = self.spans[k]
        if offset >= end:
            return masked_end + offset - end
        if offset == start:
            return masked_start
        return masked_end if inside == "end" else masked_start


class Redactor:
    """Masks secrets with placeholders numbered per kind, stable for the life of the object (one run)."""

    def __init__(self) -> None:
        self._numbers: dict[tuple[str, str], int] = {}
        self._per_kind: Counter[str] = Counter()
        self.occurrences: Counter[str] = Counter()

    def placeholder(self, kind: str, secret: str) -> str:
        key = (kind, secret)
        if key not in self._numbers:
            self._per_kind[kind] += 1
            self._numbers[key] = self._per_kind[kind]
        return f"[REDACTED:{kind}:{self._numbers[key]}]"

    def mask(self, text: str) -> Masked:
        """text with every detected secret replaced by its placeholder, and where each one went."""
        findings = find_secrets(text)
        if not findings:
            return Masked(text)
        parts: list[str] = []
        spans: list[tuple[int, int, int, int]] = []
        at = 0
        size = 0
        for finding in findings:
            parts.append(text[at : finding.start])
            size += finding.start - at
            placeholder = self.placeholder(finding.kind, text[finding.start : finding.end])
            parts.append(placeholder)
            spans.append((finding.start, finding.end, size, size + len(placeholder)))
            size += len(placeholder)
            self.occurrences[finding.kind] += 1
            at = finding.end
        parts.append(text[at:])
        return Masked("".join(parts), tuple(spans))

    def redact(self, text: str) -> str:
        """text with every detected secret replaced by its placeholder."""
        return self.mask(text).text

    @property
    def counts(self) -> dict[str, int]:
        """Distinct secrets masked so far, by kind (never the secrets themselves)."""
        return dict(sorted(self._per_kind.items()))


def describe_counts(counts: dict[str, int]) -> str:
    """``3 secrets (github-token 1, password 2)`` or ``no secrets``."""
    total = sum(counts.values())
    if not total:
        return "no secrets"
    kinds = ", ".join(f"{kind} {n}" for kind, n in counts.items())
    return f"{total} secret{'s' if total != 1 else ''} ({kinds})"
