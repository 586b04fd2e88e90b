"""``frae.codec.loss``: the Gilbert-Elliott model loses the rate asked, in bursts of the mean
length asked, the same packets for the same seed."""

from __future__ import annotations

import numpy as np
import pytest

from frae import codec


def _bursts(lost: np.ndarray) -> np.ndarray:
    """The length of each run of lost packets."""
    edges = np.diff(np.concatenate([[0], lost.astype(int), [0]]))
    return np.flatnonzero(edges == -1) - np.flatnonzero(edges == 1)


@pytest.mark.parametrize(("rate", "burst"), [(0.01, 2.0), (0.05, 1.0), (0.2, 3.0)])
def test_the_rate_and_the_bursts_are_those_asked(rate: float, burst: float) -> None:
    lost = codec.gilbert_elliott(200_000, rate, burst=burst, seed=3)
    assert lost.mean() == pytest.approx(rate, rel=0.1)
    assert _bursts(lost).mean() == pytest.approx(burst, rel=0.1)


def test_one_seed_loses_the_same_packets_and_no_rate_none() -> None:
    first = codec.gilbert_elliott(500, 0.1, seed=4)
    np.testing.assert_array_equal(first, codec.gilbert_elliott(500, 0.1, seed=4))
    assert not np.array_equal(first, codec.gilbert_elliott(500, 0.1, seed=5))
    assert not codec.gilbert_elliott(500, 0.0, seed=4).any()


@pytest.mark.parametrize(
    ("rate", "burst", "message"),
    [
        (1.0, 2.0, "rate must lie"),
        (-0.1, 2.0, "rate must lie"),
        (0.1, 0.5, "burst must be"),
        (0.8, 1.0, "needs bursts longer"),
    ],
)
def test_an_impossible_model_is_refused(rate: float, burst: float, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        codec.gilbert_elliott(10, rate, burst=burst)
