"""Redaction tests share the summary tests' server helpers and fake keys."""

from tests.checkpoint.summary.conftest import keys  # noqa: F401
