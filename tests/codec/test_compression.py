"""``frae.codec.compression``: a signal to bytes and back on the reference, the symbols read
with the prior alone, the bytes within the contract's size bound, a signal of another shape
and codes that ran away refused before anything is coded."""

from __future__ import annotations

import re

import numpy as np
import pytest

import frae
from frae import codec
from parity_tests.tolerances import assert_close
from tests.codec.small_model import CONFIG, large_weights

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
        escaped = int((prior.indices(sequence) == prior.escape).sum())
        information = codec.information_bits(prior, sequence)
        assert 8 * size <= codec.size_bound_bits(information, sequence.size + escaped)


def test_a_model_and_prior_that_do_not_match_are_refused(model: frae.Backend) -> None:
    x = frae.data.multi_sine(2, 10, seed=4)
    prior = codec.fit_prior(model, x)
    finer = frae.create("reference", frae.FRAEConfig(latent_dim=2, code_step=2**-7))
    with pytest.raises(ValueError, match=r"the prior codes 2 symbols a step of 0\.015625"):
        codec.compress(finer, prior, x)
    with pytest.raises(ValueError, match="code_step set"):
        codec.compress(frae.create("reference"), prior, x)


def test_a_signal_of_another_shape_is_refused_whole(model: frae.Backend) -> None:
    """Checked as a whole before any group is encoded: the shape named is the input's."""
    prior = codec.fit_prior(model, frae.data.multi_sine(2, 10, seed=4))
    for bad in (np.zeros(300), np.zeros((70, 5, 3)), np.zeros((0, 5, 2)), np.zeros((2, 0, 2))):
        with pytest.raises(ValueError, match=rf"got (shape )?{re.escape(str(bad.shape))}"):
            codec.compress(model, prior, bad)


class RunAway:
    """A model whose codes turn NaN from frame ``FROM`` of its stream on, as a float32 model's
    do when its codes grow past float32 inside its loop; everything else is ``inner``'s."""

    FROM = 7

    def __init__(self, inner: frae.Backend) -> None:
        self.inner, self.config, self.seen = inner, inner.config, 0

    def encode(self, x: np.ndarray, **kwargs: object) -> object:
        made = self.inner.encode(x, **kwargs)
        codes = made[0] if isinstance(made, tuple) else made
        codes[..., max(self.FROM - self.seen, 0) :, :] = np.nan
        self.seen += np.shape(x)[-2]
        return made

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


def test_codes_that_run_away_are_refused_naming_the_first_bad_frame(model: frae.Backend) -> None:
    """By compress, and by the Encoder, whose stream stays as it was."""
    x = frae.data.multi_sine(2, 10, seed=4)
    prior = codec.fit_prior(model, x)
    with pytest.raises(ValueError, match="not finite from frame 7 on"):
        codec.compress(RunAway(model), prior, x)
    sender = codec.Encoder(RunAway(model), prior)
    sender.push(x[:, :5])
    state = sender.state.copy()
    with pytest.raises(ValueError, match="not finite from frame 7 on"):
        sender.push(x[:, 5:])
    np.testing.assert_array_equal(sender.state, state)
    assert sender.packets == 1
