"""``frae.codec.prior``: integer tables by the documented rule, malformed priors refused."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import frae
from frae import codec
from frae.codec import MAX_TABLE_SYMBOLS, PRECISION, SYMBOL_LIMIT, Prior

STEP = 2**-6


def test_the_rule_worked_by_hand() -> None:
    """Symbols 0, 0, 0, 1: the window 0 … 1 and the escape, counts 3, 1, 0, N = 4, R = 2^24 − 3.
    ⌊3R/4⌋ = 12,582,909 (remainder 3), ⌊R/4⌋ = 4,194,303 (remainder 1), 0: one left over, to
    the largest remainder; plus one each."""
    prior = codec.prior_of_symbols(np.array([[0], [0], [0], [1]]), STEP)
    assert prior.lo.tolist() == [0]
    assert prior.frequencies.tolist() == [[12_582_911, 4_194_304, 1]]


def test_every_table_covers_its_dimension_and_sums_to_two_to_the_p() -> None:
    rng = np.random.default_rng(0)
    symbols = np.rint(rng.normal(0.0, [2.0, 40.0, 300.0], (2000, 3))).astype(np.int32)
    prior = codec.prior_of_symbols(symbols, STEP)
    assert prior.frequencies.dtype == np.uint32 and prior.frequencies.min() >= 1
    assert (prior.frequencies.astype(np.int64).sum(axis=1) == 2**PRECISION).all()
    assert (prior.indices(symbols) != prior.escape).all(), "a seen symbol escaped"
    # a symbol seen more often never gets a smaller frequency
    for dimension in range(3):
        counts = np.bincount(symbols[:, dimension] - prior.lo[dimension], minlength=prior.escape)
        table = prior.frequencies[dimension, :-1]
        least = [table[counts == count].min() for count in np.unique(counts)]
        most = [table[counts == count].max() for count in np.unique(counts)]
        assert all(low >= high for low, high in zip(least[1:], most[:-1], strict=True))


def test_a_range_too_wide_keeps_its_densest_window_and_escapes_the_rest() -> None:
    rng = np.random.default_rng(1)
    crowd = rng.integers(-50, 50, 500)
    symbols = np.concatenate([crowd, [-SYMBOL_LIMIT, SYMBOL_LIMIT]])[:, None]
    prior = codec.prior_of_symbols(symbols, STEP)
    assert prior.escape == MAX_TABLE_SYMBOLS
    columns = prior.indices(symbols)
    assert (columns[:-2] != prior.escape).all()
    assert (columns[-2:] == prior.escape).all()


def test_fit_prior_reads_the_models_symbols() -> None:
    config = frae.FRAEConfig(latent_dim=2, code_step=STEP)
    model = frae.create("reference", config, seed=3)
    x = frae.data.multi_sine(4, 30, seed=5)
    prior = codec.fit_prior(model, x)
    seen = codec.symbols(model.encode(x), STEP).reshape(-1, 2)
    assert prior.step == STEP and (prior.indices(seen) != prior.escape).all()
    with pytest.raises(ValueError, match="code_step"):
        codec.fit_prior(frae.create("reference", seed=3), x)


GOOD: dict[str, Any] = {"step": STEP, "lo": [-1], "frequencies": [[2**23, 2**23 - 1, 1]]}
MALFORMED = {
    "short": ({"frequencies": [[2**23, 2**23 - 2, 1]]}, "sum to 2\\^24"),
    "zero": ({"frequencies": [[2**24 - 1, 1, 0]]}, "at least 1"),
    "floats": ({"frequencies": [[2.0**23, 2.0**23 - 1, 1.0]]}, "integers"),
    "one-column": ({"frequencies": [[2**24]]}, "columns"),
    "lo-beyond-q": ({"lo": [SYMBOL_LIMIT]}, "within"),
    "rows-not-lo": ({"lo": [0, 0]}, "do not match"),
    "step": ({"step": 0.3}, "code_step"),
    "precision": ({"precision": 16}, "precision"),
}


@pytest.mark.parametrize(("change", "message"), MALFORMED.values(), ids=MALFORMED)
def test_a_malformed_prior_is_refused(change: dict[str, Any], message: str) -> None:
    assert Prior(**GOOD) == Prior(**GOOD)
    with pytest.raises(ValueError, match=message):
        Prior(**(GOOD | change))
