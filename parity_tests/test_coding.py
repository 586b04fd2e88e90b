"""The contract's "Coding: the model as a codec", through the codec a port brings (its
``codec`` attribute) or ``frae.codec``: bytes round-trip on the backend under test and cross
to every partner and back, equal the reference's on margin-checked inputs, stay within the size
bound, refuse damage and another model, and decode packet by packet to the one-shot result;
a packet of one frame costs at most 16 bits over its information; a receiver that lost
packets goes on, and a refresh brings it back in step with the sender, across backends.

Each test takes the quantized cases' margin-checked weights and inputs
(``cases.margin_checked``), and the prior of the reference's symbols on them.
"""

from __future__ import annotations

import zlib
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import frae
from parity_tests.cases import Case, margin_checked, quantized_params
from parity_tests.conftest import MakeBackend
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
    bytes are within the contract's bound: its information under the prior, plus
    ``ROUNDING_BITS`` a coded value, plus ``ENDING_BITS``."""
    model, oracle, prior, x = coded(make_backend, reference, case)
    data = codec_of(model).compress(model, prior, x)
    assert data == frae.codec.compress(oracle, prior, x), "bytes unlike the reference's"
    bound = 0.0
    for q in expected_symbols(oracle, x):
        escaped = int((prior.indices(q) == prior.escape).sum())
        bound += frae.codec.size_bound_bits(frae.codec.information_bits(prior, q), q.size + escaped)
    fixed = frae.codec.HEADER_BYTES + len(x) * frae.codec.SEQUENCE_BYTES
    coded_bytes = len(data) - fixed - frae.codec.TRAILER_BYTES
    assert 8 * coded_bytes <= bound, (8 * coded_bytes, bound)


@pytest.mark.parametrize("case", CODED)
def test_bytes_cross_to_the_partner_and_back(
    make_backend: MakeBackend, partner: MakeBackend, reference: MakeBackend, case: Case
) -> None:
    """Bytes made here decompress there, and there's here: the same symbols, and the
    reference's decode of them. Run on every backend, this is the crossing matrix: every
    ordered pair of the backends in one process, and Keras on each of its other backends
    both ways with the reference (the kit's run there, ``tests/test_keras_rnn.py``). As
    every backend makes the reference's bytes (the test above), one that reads the
    reference's bytes reads every backend's, and the reference's readers read its own."""
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


def forgeries(data: bytes) -> list[bytes]:
    """``data`` (a stream of one sequence) with its coded bytes replaced, under a matching
    length and CRC: 16 bytes of 0xff, of 0x00, and of a pattern."""
    head = data[: frae.codec.HEADER_BYTES]
    forged = []
    for coded in (b"\xff" * 16, bytes(16), bytes(range(200, 216))):
        body = head + len(coded).to_bytes(4, "little") + coded
        forged.append(body + zlib.crc32(body).to_bytes(4, "little"))
    return forged


@pytest.mark.parametrize("case", CODED)
def test_damaged_bytes_and_another_model_are_refused(
    make_backend: MakeBackend, reference: MakeBackend, case: Case
) -> None:
    """Every cut, every flipped bit, and another model's weights: a ValueError each; coded
    bytes forged under a valid header and CRC: symbols, or a ValueError (nothing else)."""
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
    for forged in forgeries(data):
        try:
            symbols = codec.read(prior, forged)
        except ValueError:
            continue
        assert symbols.shape == (1, 3, case.config.latent_dim)
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


PACKET_OVERHEAD_BITS = 16
"""The most a one-frame packet at B = 1 may cost over its symbols' information, on average."""


@pytest.mark.parametrize("case", CODED)
def test_a_one_frame_packet_costs_at_most_16_bits_over_its_information(
    make_backend: MakeBackend, reference: MakeBackend, case: Case
) -> None:
    """Each sequence sent a frame a packet: the packets' mean bits less their symbols'
    information under the prior, the opening packet apart, at most 16."""
    model, oracle, prior, x = coded(make_backend, reference, case)
    codec = codec_of(model)
    over = []
    for sequence, values in zip(x, expected_symbols(oracle, x), strict=True):
        sender = codec.Encoder(model, prior)
        packets = [sender.push(sequence[t : t + 1]) for t in range(len(sequence))]
        over += [
            8 * len(packet) - frae.codec.information_bits(prior, values[t : t + 1])
            for t, packet in enumerate(packets[1:], 1)
        ]
    assert np.mean(over) <= PACKET_OVERHEAD_BITS, np.mean(over)


LOST = (2, 3)
"""The packets lost in the tests of loss (one frame each, of the cases' seven): two in a row."""
REFRESH = 4
"""A refresh every 4 frames: packet 4 refreshes the state, after the losses."""


def one_frame_packets(model: Any, prior: Any, sequence: np.ndarray, **options: Any) -> list[bytes]:
    sender = codec_of(model).Encoder(model, prior, **options)
    return [sender.push(sequence[t : t + 1]) for t in range(len(sequence))]


@pytest.mark.parametrize("case", CODED)
def test_a_receiver_that_lost_packets_goes_on(
    make_backend: MakeBackend, reference: MakeBackend, case: Case
) -> None:
    """Packets lost (a gap in their numbers) and frames lost (``lost``): the receiver
    conceals them and goes on, a frame for every frame sent, in the layout sent."""
    model, _, prior, x = coded(make_backend, reference, case)
    packets = one_frame_packets(model, prior, x[0])
    receiver = codec_of(model).Decoder(model, prior)
    frames = [receiver.push(p) for t, p in enumerate(packets) if t not in LOST]
    assert np.concatenate(frames).shape == x[0].shape
    receiver = codec_of(model).Decoder(model, prior)
    told = [receiver.push(packets[0]), receiver.lost(1)]
    told += [receiver.push(packet) for packet in packets[2:]]
    assert np.concatenate(told).shape == x[0].shape
    assert np.isfinite(np.concatenate(frames + told)).all()


@pytest.mark.parametrize("case", CODED)
def test_a_refresh_brings_the_receiver_back_in_step(
    make_backend: MakeBackend, partner: MakeBackend, reference: MakeBackend, case: Case
) -> None:
    """Sent here with a refresh every 4 frames, received on the partner with packets lost:
    from each refresh after a loss on, the receiver's frames are a lossless receiver's, and
    after the last packet its state is the sender's."""
    model, _, prior, x = coded(make_backend, reference, case)
    there = partner(case.config, weights=model.get_weights())
    sender = codec_of(model).Encoder(model, prior, refresh=REFRESH)
    packets = [sender.push(x[0, t : t + 1]) for t in range(len(x[0]))]
    assert packets[REFRESH][0] >> 6 == frae.codec.byte_format.REFRESH, "no refresh sent"
    lossless, lossy = (codec_of(there).Decoder(there, prior) for _ in range(2))
    whole = np.concatenate([lossless.push(packet) for packet in packets])
    kept = np.concatenate([lossy.push(p) for t, p in enumerate(packets) if t not in LOST])
    assert not np.allclose(kept[2:REFRESH], whole[2:REFRESH]), "the losses changed nothing"
    after = "after the refresh that follows the losses"
    assert_close("self", kept[REFRESH:], whole[REFRESH:], after)
    assert_close("outputs", lossy.state, sender.state, "the receiver's state and the sender's")
