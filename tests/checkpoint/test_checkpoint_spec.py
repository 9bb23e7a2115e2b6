"""docs/checkpoint.md numbers the checkpoint's requirements; every one of them is checked by a test that names it
(``test_vN_…``), and every test that names a requirement names one the page has."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[2]


def _requirements() -> set[int]:
    return {int(n) for n in re.findall(r"^- \*\*V(\d+)\b", (ROOT / "docs" / "checkpoint.md").read_text(), re.M)}


def _cited() -> set[int]:
    found: set[int] = set()
    for path in (ROOT / "tests").rglob("test_*.py"):
        found.update(int(n) for n in re.findall(r"^\s*def test_v(\d+)_", path.read_text(), re.M))
    return found


def test_every_requirement_has_a_test_and_every_cited_one_exists() -> None:
    requirements = _requirements()
    assert requirements == set(range(1, max(requirements) + 1)), "the requirements are numbered without gaps"
    assert not requirements - _cited(), f"no test names: {sorted(requirements - _cited())}"
    assert not _cited() - requirements, f"tests name requirements the page lacks: {sorted(_cited() - requirements)}"
