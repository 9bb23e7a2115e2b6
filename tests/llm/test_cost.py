"""Cost estimates from per-million-token prices."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from pi_compact.llm import ModelEntry, estimate_cost, find_model


def test_cost_from_entry_prices() -> None:
    entry = ModelEntry("p", "m", cost_input=3.0, cost_output=15.0, cost_cache_read=0.3, cost_cache_write=3.75)
    assert estimate_cost(entry, 1000, 2000) == pytest.approx(0.003 + 0.03)
    assert estimate_cost(entry, 0, 0, cache_read_tokens=1_000_000, cache_write_tokens=1_000_000) == pytest.approx(
        0.3 + 3.75
    )


def test_cost_accepts_table_rows_and_model_info_like_objects() -> None:
    row = {"cost": {"input": 2.0, "output": 8.0, "cacheRead": 0.5, "cacheWrite": 0}}
    assert estimate_cost(row, 500_000, 100_000) == pytest.approx(1.0 + 0.8)
    info = SimpleNamespace(input_cost=1.0, output_cost=4.0, cache_read_cost=0.1, cache_write_cost=0.0)
    assert estimate_cost(info, 1_000_000, 1_000_000, cache_read_tokens=1_000_000) == pytest.approx(5.1)


def test_unknown_prices_give_none() -> None:
    assert estimate_cost(None, 10, 10) is None
    assert estimate_cost(ModelEntry("p", "m"), 10, 10) is None
    assert estimate_cost({"name": "no cost"}, 10, 10) is None


def test_table_prices_are_read_from_the_bundled_table() -> None:
    rows = json.loads((Path(__file__).parents[2] / "pi_compact" / "data" / "pi-models.json").read_text())
    row = next(r for r in rows if r["provider"] == "openai" and r["cost"]["input"] > 0)
    entry = find_model("openai", row["id"])
    assert entry is not None
    expected = (1_000_000 * row["cost"]["input"] + 10_000 * row["cost"]["output"]) / 1_000_000
    assert estimate_cost(entry, 1_000_000, 10_000) == pytest.approx(expected)
