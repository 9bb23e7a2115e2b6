"""Redaction tests share the summary tests' server helpers and fake keys."""

from tests.summary.conftest import keys  # noqa: F401
