"""Read Pi's bundled model table for output limits, prices and default endpoints.

Loaded lazily and once: only the LLM commands need it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class ModelEntry:
    """One row of the table; prices are in dollars per million tokens."""

    provider: str
    id: str
    name: str = ""
    api: str = ""
    base_url: str = ""
    context_window: int | None = None
    max_tokens: int | None = None
    reasoning: bool = False
    cost_input: float | None = None
    cost_output: float | None = None
    cost_cache_read: float | None = None
    cost_cache_write: float | None = None


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _int(value: Any) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        return None
    return value


def _entry(row: dict[str, Any]) -> ModelEntry | None:
    provider, model_id = row.get("provider"), row.get("id")
    if not isinstance(provider, str) or not isinstance(model_id, str):
        return None
    cost: dict[str, Any] = row["cost"] if isinstance(row.get("cost"), dict) else {}
    return ModelEntry(
        provider=provider,
        id=model_id,
        name=str(row.get("name") or ""),
        api=str(row.get("api") or ""),
        base_url=str(row.get("baseUrl") or ""),
        context_window=_int(row.get("contextWindow")),
        max_tokens=_int(row.get("maxTokens")),
        reasoning=bool(row.get("reasoning")),
        cost_input=_number(cost.get("input")),
        cost_output=_number(cost.get("output")),
        cost_cache_read=_number(cost.get("cacheRead")),
        cost_cache_write=_number(cost.get("cacheWrite")),
    )


@lru_cache(maxsize=1)
def _table() -> dict[tuple[str, str], ModelEntry]:
    import orjson

    raw = (Path(__file__).resolve().parent.parent / "data" / "pi-models.json").read_bytes()
    rows = orjson.loads(raw)
    table: dict[tuple[str, str], ModelEntry] = {}
    for row in rows if isinstance(rows, list) else []:
        entry = _entry(row) if isinstance(row, dict) else None
        if entry is not None:
            table.setdefault((entry.provider, entry.id), entry)
    return table


def find_model(provider: str, model_id: str) -> ModelEntry | None:
    """The table row for provider/model_id, or None when Pi does not know the model."""
    return _table().get((provider, model_id))


def provider_entries(provider: str) -> list[ModelEntry]:
    """Every row of one provider, in table order."""
    return [entry for (name, _), entry in _table().items() if name == provider]


def estimate_cost(
    model_info: Any,
    input_tokens: int,
    output_tokens: int,
    cache_read_tokens: int = 0,
    cache_write_tokens: int = 0,
) -> float | None:
    """Dollar cost of one exchange from the table prices; None when the prices are unknown.

    Accepts a `ModelEntry`, a `pi_compact.models.ModelInfo` (input_cost/output_cost attributes),
    a table row (mapping with a `cost` object), or any object with a `cost` attribute holding
    `input`/`output` prices, so callers can pass what they have.
    """
    prices = _prices(model_info)
    if prices is None:
        return None
    p_in, p_out, p_read, p_write = prices
    total = (
        input_tokens * p_in
        + output_tokens * p_out
        + cache_read_tokens * (p_read if p_read is not None else p_in)
        + cache_write_tokens * (p_write if p_write is not None else p_in)
    )
    return total / 1_000_000


def _prices(info: Any) -> tuple[float, float, float | None, float | None] | None:
    if info is None:
        return None
    if isinstance(info, ModelEntry):
        p_in, p_out = info.cost_input, info.cost_output
        p_read, p_write = info.cost_cache_read, info.cost_cache_write
    elif hasattr(info, "input_cost") and hasattr(info, "output_cost"):  # pi_compact.models.ModelInfo
        p_in, p_out = _number(info.input_cost), _number(info.output_cost)
        p_read = _number(getattr(info, "cache_read_cost", None))
        p_write = _number(getattr(info, "cache_write_cost", None))
    else:
        cost = info.get("cost") if isinstance(info, dict) else getattr(info, "cost", None)
        if cost is None:
            return None

        def pick(name: str) -> float | None:
            value = cost.get(name) if isinstance(cost, dict) else getattr(cost, name, None)
            return _number(value)

        p_in, p_out = pick("input"), pick("output")
        p_read, p_write = pick("cacheRead"), pick("cacheWrite")
        if p_read is None and not isinstance(cost, dict):
            p_read, p_write = pick("cache_read"), pick("cache_write")
    if p_in is None or p_out is None:
        return None
    return p_in, p_out, p_read, p_write
