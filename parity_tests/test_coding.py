"""The contract's "Coding: the model as a codec", through the codec a port brings (its
``codec`` attribute) or ``frae.codec``: bytes round-trip on the backend under test and cross
to every partner and back, equal the reference's on margin-checked inputs, stay within the size
bound, refuse damage and another model, and decode packet by packet to the one-shot result.

Each test takes the quantized cases' margin-checked weights and inputs (``test_quantized``),
and the prior of the reference's symbols on them.
"""

from __future__ import annotations

from types import ModuleType
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import frae
from parity_tests.cases import Case, quantized_params
from parity_tests.conftest import MakeBackend
from parity_tests.test_quantized import margin_checked
from parity_tests.tolerances import assert_close

pytest.importorskip("constriction")

CODED = quantized_params("swish", "state")


def codec_of(model: Any) -> ModuleType:
    """The codec a port brings as its ``codec`` attribute, or ``frae.codec``."""
    return getattr(model, "codec", frae.codec)


def coded(make: MakeBackend, reference: MakeBackend, case: Case) -> tuple[Any, Any, Any, Any]:
    """The backend, the reference, the prior of the reference's symbols, and the inputs."""
    weights, x = margin_checked(case)
    oracle = reference(case.config, weights=weights)
    prior = frae.codec.fit_prior(oracle, x)
    return make(case.config, weights=weights), oracle, prior, x


def expected_symbols(oracle: Any, x: np.ndarray) -> np.ndarray:
    return frae.codec.symbols(oracle.encode(x), oracle.config.code_step)


@pytest.mark.parametrize("case", CODED)
def test_compressed_bytes_round_trip(
    make_backend: MakeBackend, reference: MakeBackend, case: Case
) -> None:
    """read gives the reference's symbols exactly, decompress its decode of them; a single
    sequence comes back without a batch axis."""
    model, oracle, prior, x = coded(make_backend, reference, case)
    codec = codec_of(model)
    data = codec.compress(model, prior, x)
    np.testing.assert_array_equal(codec.read(prior, data), expected_symbols(oracle, x))
    expected = oracle.decode(oracle.encode(x))
    assert_close("outputs", codec.decompress(model, prior, data), expected, "decompress")
    one = codec.compress(model, prior, x[0])
    assert_close("outputs", codec.decompress(model, prior, one), expected[0], "one sequence")


@pytest.mark.parametrize("case", CODED)
def test_the_bytes_are_the_references_and_within_the_bound(
    make_backend: MakeBackend, reference: MakeBackend, case: Case
) -> None:
    """On margin-checked inputs every backend makes the reference's bytes; each sequence's
    words are at most its information under the prior plus 64 bits."""
    model, oracle, prior, x = coded(make_backend, reference, case)
    data = codec_of(model).compress(model, prior, x)
    assert data == frae.codec.compress(oracle, prior, x), "bytes unlike the reference's"
    information = sum(frae.codec.information_bits(prior, q) for q in expected_symbols(oracle, x))
    fixed = frae.codec.HEADER_BYTES + len(x) * frae.codec.SEQUENCE_BYTES
    words = len(data) - fixed - frae.codec.TRAILER_BYTES
    assert 8 * words <= information + 64 * len(x), (8 * words, information)


@pytest.mark.parametrize("case", CODED)
def test_bytes_cross_to_the_partner_and_back(
    make_backend: MakeBackend, partner: MakeBackend, reference: MakeBackend, case: Case
) -> None:
    """Bytes made here decompress there, and there's here: the same symbols, and the
    reference's decode of them."""
    here, oracle, prior, x = coded(make_backend, reference, case)
    there = partner(case.config, weights=here.get_weights())
    expected = oracle.decode(oracle.encode(x))
    for sender, receiver, route in ((here, there, "here to partner"), (there, here, "back")):
        data = codec_of(sender).compress(sender, prior, x)
        np.testing.assert_array_equal(
            codec_of(receiver).read(prior, data), expected_symbols(oracle, x), route
        )
        rebuilt = codec_of(receiver).decompress(receiver, prior, data)
        assert_close("outputs", rebuilt, expected, route)


@pytest.mark.parametrize("case", CODED)
def test_damaged_bytes_and_another_model_are_refused(
    make_backend: MakeBackend, reference: MakeBackend, case: Case
) -> None:
    """Every cut, every flipped bit, and another model's weights: a ValueError each."""
    model, _, prior, x = coded(make_backend, reference, case)
    codec = codec_of(model)
    data = codec.compress(model, prior, x[:1, :3])
    for length in range(len(data)):
        with pytest.raises(ValueError):
            codec.read(prior, data[:length])
    for bit in range(8 * len(data)):
        damaged = bytearray(data)
        damaged[bit // 8] ^= 1 << bit % 8
        with pytest.raises(ValueError):
            codec.read(prior, bytes(damaged))
    weights = {name: value * 0.5 for name, value in model.get_weights().items()}
    other = make_backend(case.config, weights=weights)
    with pytest.raises(ValueError, match="made by model"):
        codec.decompress(other, prior, data)


@pytest.mark.parametrize("case", CODED)
def test_any_split_into_packets_decodes_to_the_one_shot_result(
    make_backend: MakeBackend, reference: MakeBackend, case: Case
) -> None:
    """Chunks (drawn by hypothesis, down to one frame) sent as packets and received in order
    rebuild what decompress of the whole does, for a batch and for one sequence."""
    model, _, prior, x = coded(make_backend, reference, case)
    codec = codec_of(model)
    whole = codec.decompress(model, prior, codec.compress(model, prior, x))

    @settings(max_examples=3, deadline=None, database=None)
    @given(cuts=st.sets(st.integers(1, case.steps - 1)), one=st.booleans())
    def split(cuts: set[int], one: bool) -> None:
        sender, receiver = codec.Encoder(model, prior), codec.Decoder(model, prior)
        chunks = np.split(x[0] if one else x, sorted(cuts), axis=-2)
        frames = [receiver.push(sender.push(chunk)) for chunk in chunks]
        assert_close("self", np.concatenate(frames, axis=-2), whole[0] if one else whole)

    split()
