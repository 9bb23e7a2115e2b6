"""Redaction's work on a text of many short assignments (``PASSWORD=a; `` a hundred thousand times) grows with the
matches by a constant, and finds what it found before.

``google-re2`` rebuilt a pattern's name -> group dict at every ``match.group("name")`` (and asked RE2 for the
number of groups at every group): most of the time of such a text. Redaction's patterns look both up once; that
is counted here (the calls into RE2 for them), not timed."""

from __future__ import annotations

import re2

from pi_compact.redact import Redactor, find_secrets
from pi_compact.redact.patterns import COMPILED

TEXT = "PASSWORD=a; " * 20_000 + 'db_password = "s3cr3t-Value-9x"\napi_key: sk-ant-api03-' + "x" * 90 + "\n"


class _Counting:
    """Stands in for a compiled RE2 object: every call into it counted, by method name."""

    def __init__(self, inner: object, counts: dict[str, int]) -> None:
        self.inner = inner
        self.counts = counts

    def __getattr__(self, name: str) -> object:
        attribute = getattr(self.inner, name)
        if not callable(attribute):
            return attribute

        def counted(*args: object, **kwargs: object) -> object:
            self.counts[name] = self.counts.get(name, 0) + 1
            return attribute(*args, **kwargs)

        return counted


def test_group_names_are_looked_up_once_per_pattern() -> None:
    counts: dict[str, int] = {}
    saved = [(pattern, pattern._regexp) for pattern in COMPILED]
    try:
        for pattern in COMPILED:
            pattern._regexp = _Counting(pattern._regexp, counts)
        findings = find_secrets(TEXT)
    finally:
        for pattern, inner in saved:
            pattern._regexp = inner
    assert findings  # the scan ran, and found the quoted password at least
    assert counts.get("NamedCapturingGroups", 0) == 0  # looked up when compiled, never per match
    assert counts.get("NumberOfCapturingGroups", 0) == 0


def test_the_patterns_match_as_re2_compiled_them() -> None:
    for pattern in COMPILED:
        plain = re2.compile(pattern.pattern, pattern.options)
        assert pattern.groupindex == plain.groupindex and pattern.groups == plain.groups
        spans = [m.span() for m in pattern.finditer(TEXT[-400:])]
        assert spans == [m.span() for m in plain.finditer(TEXT[-400:])]


def test_the_secret_is_masked_and_the_rest_kept() -> None:
    masked = Redactor().mask(TEXT)
    assert "s3cr3t-Value-9x" not in masked.text
    assert masked.text.count("PASSWORD=") == 20_000
