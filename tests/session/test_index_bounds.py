"""``index_format.below``: every value of a column below a bound, as ``max`` says, found without a Python object
for each value."""

from __future__ import annotations

import random
from array import array

import pytest

from pi_compact.session import index_format


def _column(rng: random.Random, code: str) -> array[int]:
    top = (1 << (8 * array(code).itemsize)) - 1
    scale = rng.choice((top, 1 << rng.randrange(1, 8 * array(code).itemsize), 300, 5))
    values = [rng.randrange(min(scale, top) + 1) for _ in range(rng.choice((0, 1, 7, 100, 5000)))]
    if values and rng.random() < 0.5:
        values[rng.randrange(len(values))] = min(scale, top)  # ties with the bound's bytes
    return array(code, values)


@pytest.mark.parametrize("code", ["B", "I", "Q"])
@pytest.mark.parametrize("seed", range(60))
def test_below_agrees_with_max(code: str, seed: int) -> None:
    rng = random.Random(seed)
    column = _column(rng, code)
    peak = max(column, default=0)
    for bound in {0, 1, peak, peak + 1, peak + 2, max(peak - 1, 0), rng.randrange(peak + 2), 1 << 70}:
        assert index_format.below(column, bound) == (max(column, default=-1) < bound), (bound, peak)


def test_below_sees_one_value_among_equal_high_bytes() -> None:
    column = array("I", [0x06000000 + i for i in range(5000)])
    assert index_format.below(column, 0x06000000 + 5000)
    assert not index_format.below(column, 0x06000000 + 4999)
    column[2500] = 0x06FFFFFF
    assert not index_format.below(column, 0x06000000 + 5000)
