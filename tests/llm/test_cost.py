"""Cost estimates from the model catalogue's per-million-token prices."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pi_compact.llm import ModelInfo, estimate_cost, find_model


def _info(**prices: float) -> ModelInfo:
    return ModelInfo("p", "m", "m", 1000, 100, base_url="", api="", **prices)  # type: ignore[arg-type]


def test_cost_from_the_prices() -> None:
    info = _info(input_cost=3.0, output_cost=15.0, cache_read_cost=0.3, cache_write_cost=3.75)
    assert estimate_cost(info, 1000, 2000) == pytest.approx(0.003 + 0.03)
    assert estimate_cost(info, 0, 0, cache_read_tokens=1_000_000, cache_write_tokens=1_000_000) == pytest.approx(
        0.3 + 3.75
    )


def test_an_unknown_model_has_no_cost() -> None:
    assert estimate_cost(None, 10, 10) is None
    assert estimate_cost(find_model("nosuchprovider", "m"), 10, 10) is None


def test_table_prices_are_read_from_the_bundled_table() -> None:
    rows = json.loads((Path(__file__).parents[2] / "pi_compact" / "data" / "pi-models.json").read_text())
    row = next(r for r in rows if r["provider"] == "openai" and r["cost"]["input"] > 0)
    entry = find_model("openai", row["id"])
    assert entry is not None
    expected = (1_000_000 * row["cost"]["input"] + 10_000 * row["cost"]["output"]) / 1_000_000
    assert estimate_cost(entry, 1_000_000, 10_000) == pytest.approx(expected)


def test_prices_set_in_models_json_are_the_ones_used(agent: Path) -> None:
    (agent / "models.json").write_text(
        json.dumps(
            {
                "providers": {
                    "openai": {
                        "modelOverrides": {"gpt-4.1-mini": {"cost": {"input": 100, "output": 1000}}},
                    }
                }
            }
        )
    )
    info = find_model("openai", "gpt-4.1-mini")
    assert estimate_cost(info, 1_000_000, 1_000_000) == pytest.approx(1100.0)
