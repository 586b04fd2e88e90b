"""``frae.codec.compression``: a signal to bytes and back on the reference, the symbols read
with the prior alone, and the bytes within the contract's size bound."""

from __future__ import annotations

import numpy as np
import pytest

import frae
from frae import codec
from parity_tests.tolerances import assert_close
from tests.codec.test_byte_format import CONFIG, large_weights

pytest.importorskip("constriction")


@pytest.fixture(scope="module")
def model() -> frae.Backend:
    return frae.create("reference", CONFIG, weights=large_weights(41))


def test_decompress_of_compress_is_decode_of_encode(model: frae.Backend) -> None:
    prior = codec.fit_prior(model, frae.data.multi_sine(2, 10, seed=1))
    x = frae.data.multi_sine(3, 25, seed=2)
    data = codec.compress(model, prior, x)
    expected = codec.symbols(model.encode(x), CONFIG.code_step)
    assert (prior.indices(expected) == prior.escape).any(), "held out, yet no symbol escapes"
    np.testing.assert_array_equal(codec.read(prior, data), expected)
    assert_close("outputs", codec.decompress(model, prior, data), model.decode(model.encode(x)))
    one = codec.compress(model, prior, x[1])
    np.testing.assert_array_equal(codec.read(prior, one), expected[1:2])
    assert codec.decompress(model, prior, one).shape == x[1].shape


def test_each_sequence_within_its_information_and_the_rest_fixed(model: frae.Backend) -> None:
    x = frae.data.multi_sine(4, 300, seed=3)
    prior = codec.fit_prior(model, x[:2])
    data = codec.compress(model, prior, x)
    symbols = codec.read(prior, data)
    words = [len(codec.encode_symbols(prior, sequence)) for sequence in symbols]
    fixed = codec.HEADER_BYTES + len(x) * codec.SEQUENCE_BYTES + codec.TRAILER_BYTES
    assert len(data) == fixed + sum(words)
    for sequence, size in zip(symbols, words, strict=True):
        assert 8 * size <= codec.information_bits(prior, sequence) + 64


def test_a_model_and_prior_that_do_not_match_are_refused(model: frae.Backend) -> None:
    x = frae.data.multi_sine(2, 10, seed=4)
    prior = codec.fit_prior(model, x)
    finer = frae.create("reference", frae.FRAEConfig(latent_dim=2, code_step=2**-7))
    with pytest.raises(ValueError, match=r"the prior codes 2 symbols a step of 0\.015625"):
        codec.compress(finer, prior, x)
    with pytest.raises(ValueError, match="code_step set"):
        codec.compress(frae.create("reference"), prior, x)
