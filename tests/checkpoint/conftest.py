"""Fixtures of the checkpoint tests (the builder and its helpers live in ``tests.helpers.checkpoint``)."""

from __future__ import annotations

import pytest

from tests.helpers.sessions import SERIAL, SessionBuilder


@pytest.fixture
def builder() -> SessionBuilder:
    return SessionBuilder(scheme=SERIAL)
