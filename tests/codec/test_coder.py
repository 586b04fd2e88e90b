"""``frae.codec.coder``: symbols round-trip through constriction's range coder, within the
contract's size bound (at 10^6 symbols too), the bytes end at the shortest length that decodes,
bytes no encoder makes are a ``ValueError``, and fixed symbols under a fixed table make
committed bytes."""

from __future__ import annotations

import numpy as np
import pytest

from frae import codec
from frae.codec import SYMBOL_LIMIT, Prior, coder

pytest.importorskip("constriction")

STEP = 2**-8
SPREADS = [0.5, 3.0, 40.0, 3000.0]


def _symbols(seed: int, spread: float, frames: int = 300) -> np.ndarray:
    rng = np.random.default_rng(seed)
    values = np.rint(rng.laplace(0.0, spread, (frames, 3)))
    return np.clip(values, -SYMBOL_LIMIT, SYMBOL_LIMIT).astype(np.int32)


@pytest.mark.parametrize("spread", SPREADS)
def test_symbols_round_trip_escapes_and_both_limits_included(spread: float) -> None:
    prior = codec.prior_of_symbols(_symbols(1, spread), STEP)
    symbols = _symbols(2, spread)
    symbols[0], symbols[-1] = SYMBOL_LIMIT, -SYMBOL_LIMIT  # escaped, or the edges of a table
    data = codec.encode_symbols(prior, symbols)
    np.testing.assert_array_equal(codec.decode_symbols(prior, data, len(symbols)), symbols)


def _bound(prior: Prior, symbols: np.ndarray) -> float:
    escaped = int((prior.indices(symbols) == prior.escape).sum())
    return codec.size_bound_bits(codec.information_bits(prior, symbols), symbols.size + escaped)


@pytest.mark.parametrize("spread", SPREADS)
def test_the_bytes_stay_within_the_stated_bound(spread: float) -> None:
    prior = codec.prior_of_symbols(_symbols(3, spread), STEP)
    for seed, frames in ((4, 1), (5, 40), (6, 3000)):
        symbols = _symbols(seed, spread, frames)
        assert 8 * len(codec.encode_symbols(prior, symbols)) <= _bound(prior, symbols), seed


def test_the_bound_holds_for_a_million_symbols_in_one_sequence() -> None:
    """The coder's rounding grows with the symbols (some 130 bits over 10^6): the bound's
    per-value term covers it, where a constant alone would not."""
    prior = codec.prior_of_symbols(_symbols(1, 3.0, frames=3000)[:, :1], STEP)
    symbols = _symbols(8, 3.0, frames=10**6)[:, :1]
    data = codec.encode_symbols(prior, symbols)
    assert 8 * len(data) <= _bound(prior, symbols)
    assert 8 * len(data) > codec.information_bits(prior, symbols) + 64
    np.testing.assert_array_equal(codec.decode_symbols(prior, data, len(symbols)), symbols)


@pytest.mark.parametrize("spread", SPREADS)
def test_the_bytes_end_at_the_shortest_length_that_decodes(spread: float) -> None:
    """Cut one byte more and some symbol decodes otherwise; the last byte is never zero."""
    prior = codec.prior_of_symbols(_symbols(1, spread), STEP)
    for seed in range(10, 60):
        symbols = _symbols(seed, spread, frames=1 + seed % 7)
        data = codec.encode_symbols(prior, symbols)
        if not data:
            continue
        assert data[-1] != 0
        try:
            shorter = codec.decode_symbols(prior, data[:-1], len(symbols))
        except ValueError:
            continue
        assert not np.array_equal(shorter, symbols), seed


def test_bytes_no_encoder_makes_are_a_value_error() -> None:
    """constriction asserts on a point outside every slot; the codec says ValueError."""
    prior = Prior(STEP, np.array([0]), np.array([[2**23, 2**23 - 2, 1, 1]]))
    with pytest.raises(ValueError, match="not a coding under this prior"):
        codec.decode_symbols(prior, b"\xff" * 12, 40)


@pytest.mark.parametrize("spread", SPREADS)
def test_a_symbol_a_call_and_an_array_a_call_make_the_same_words(
    spread: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A short sequence is coded a symbol a call (``FEW_SYMBOLS``), a long one an array a
    call: the same symbols make the same words either way, and read back either way."""
    prior = codec.prior_of_symbols(_symbols(1, spread), STEP)
    symbols = _symbols(7, spread, frames=coder.FEW_SYMBOLS // 3)
    assert symbols.size <= coder.FEW_SYMBOLS
    few = codec.encode_symbols(prior, symbols)
    decoded_few = codec.decode_symbols(prior, few, len(symbols))
    monkeypatch.setattr(coder, "FEW_SYMBOLS", 0)
    assert codec.encode_symbols(prior, symbols) == few
    np.testing.assert_array_equal(codec.decode_symbols(prior, few, len(symbols)), decoded_few)
    np.testing.assert_array_equal(decoded_few, symbols)


def test_fixed_symbols_under_a_fixed_table_make_the_committed_bytes() -> None:
    """A pin, not a derivation: an upgrade of the coder that changes the bytes of a stream
    fails here (the round trip above shows the bytes decode)."""
    tables = [[1, 2**22, 2**23, 2**22 - 2, 1], [7, 7, 7, 7, 2**24 - 28]]
    prior = Prior(STEP, np.array([-2, 0]), np.array(tables))
    symbols = np.array([[0, 0], [-1, 1], [2, 3], [1, -5], [0, 9000]])
    assert codec.encode_symbols(prior, symbols).hex() == GOLDEN


GOLDEN = "6000017bfd4426fd000000c3cf12bd335f05"
"""Made by constriction 0.5.0 (constraints.txt), ended at the shortest length. Format 1 held
the same symbols as constriction's sealed words, little-endian:
7b010060 fd2644fd c3000000 33bd12cf 98a5045f; read big-endian they begin with these bytes."""


def test_symbols_of_another_shape_or_beyond_q_are_refused() -> None:
    prior = codec.prior_of_symbols(_symbols(1, 3.0), STEP)
    for bad in (np.zeros((4, 2), np.int32), np.zeros(4, np.int32), np.full((2, 3), 40_000)):
        with pytest.raises(ValueError, match="symbols must"):
            codec.encode_symbols(prior, bad)
    with pytest.raises(ValueError, match="32-bit words"):
        coder.decode_words(coder.SymbolCoder(prior), b"\x00" * 6, 2)
