"""The patterns redaction runs, every one compiled by RE2 (``google-re2``), which never backtracks: one search
costs time linear in the text it is given. ``COMPILED`` lists them (the tests check each is RE2)."""

from __future__ import annotations

from typing import Any

import re2

COMPILED: list[Any] = []  # every pattern redaction runs: all RE2 (the tests check it)


def compile_pattern(pattern: str) -> Any:
    """``pattern`` compiled by RE2 with a bounded memory, and listed in ``COMPILED``."""
    options = re2.Options()
    options.max_mem = 64 << 20
    options.log_errors = False
    compiled = re2.compile(pattern, options)
    COMPILED.append(compiled)
    return compiled


PLACEHOLDER = compile_pattern(r"\[REDACTED:[a-z0-9-]+:\d+\]")  # what a masked secret became
