"""The patterns redaction runs, every one compiled by RE2 (``google-re2``), which never backtracks: one search
costs time linear in the text it is given. ``COMPILED`` lists them (the tests check each is RE2)."""

from __future__ import annotations

from typing import Any

import re2

COMPILED: list[Any] = []  # every pattern redaction runs: all RE2 (the tests check it)


class _Indexed(re2._Regexp):  # type: ignore[misc, name-defined]
    """An RE2 pattern whose group names and count are looked up once: ``google-re2`` builds the name -> number
    dict again at every ``groupindex``, so at every ``match.group("name")``, and asks RE2 for the count at every
    group (most of the time redaction spent on a text of many short assignments, ``PASSWORD=a; `` again and
    again). The same pattern, the same matches."""

    __slots__ = ("_count", "_names")

    def __init__(self, pattern: str, options: Any) -> None:
        super().__init__(pattern, options)
        self._names: dict[str, int] = super().groupindex
        self._count: int = super().groups

    @property
    def groupindex(self) -> dict[str, int]:
        return self._names

    @property
    def groups(self) -> int:
        return self._count


def compile_pattern(pattern: str) -> Any:
    """``pattern`` compiled by RE2 with a bounded memory, and listed in ``COMPILED``."""
    options = re2.Options()
    options.max_mem = 64 << 20
    options.log_errors = False
    compiled = _Indexed(pattern, options)
    COMPILED.append(compiled)
    return compiled


PLACEHOLDER = compile_pattern(r"\[REDACTED:[a-z0-9-]+:\d+\]")  # what a masked secret became
