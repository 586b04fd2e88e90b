"""``frae.quantization``: the rule in Python for a few codes (``symbol_rows``) gives NumPy's
symbols, ties, the clip and float32 codes included, and refuses codes that are not finite."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from frae.quantization import SYMBOL_LIMIT, symbol_rows, symbols

STEPS = st.sampled_from([2.0**-k for k in (0, 2, 6, 9, 14)])
FINITE = st.floats(-1e6, 1e6, width=32, allow_nan=False, allow_infinity=False)


@settings(max_examples=200, deadline=None)
@given(codes=arrays(np.float32, st.tuples(st.integers(1, 6), st.integers(1, 4)), elements=FINITE),
       step=STEPS)  # fmt: skip
def test_the_python_rule_gives_numpys_symbols(codes: np.ndarray, step: float) -> None:
    np.testing.assert_array_equal(
        np.array(symbol_rows(codes.tolist(), step)).T, symbols(codes, step)
    )


def test_ties_go_to_even_and_the_clip_holds() -> None:
    codes = np.array([[0.5, 2.5, -2.5, -0.5, 1.5, 4e5, -4e5]], np.float32).T
    assert symbol_rows(codes.tolist(), 1.0) == [[0, 2, -2, 0, 2, SYMBOL_LIMIT, -SYMBOL_LIMIT]]


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_a_code_that_is_not_finite_is_a_value_error(bad: float) -> None:
    with pytest.raises(ValueError):
        symbol_rows([[0.0], [bad]], 2**-6)
