"""``frae.codec.packets``: any split into packets decodes to the one-shot result; a packet
damaged, out of order or of another layout is refused, and the stream goes on unharmed."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import frae
from frae import codec
from parity_tests.tolerances import assert_close
from tests.codec.test_byte_format import CONFIG, large_weights

pytest.importorskip("constriction")

MODEL = frae.create("reference", CONFIG, weights=large_weights(41))
X = frae.data.multi_sine(2, 24, seed=5)
PRIOR = codec.fit_prior(MODEL, X[:1])
WHOLE = MODEL.decode(MODEL.encode(X))


def sent(chunks: list[np.ndarray]) -> tuple[list[bytes], np.ndarray]:
    """The packets of ``chunks`` and what the receiver rebuilds from them."""
    sender, receiver = codec.Encoder(MODEL, PRIOR), codec.Decoder(MODEL, PRIOR)
    packets = [sender.push(chunk) for chunk in chunks]
    return packets, np.concatenate([receiver.push(packet) for packet in packets], axis=-2)


@settings(max_examples=20, deadline=None)
@given(cuts=st.sets(st.integers(1, 23)), one=st.booleans())
def test_any_split_decodes_to_the_one_shot_result(cuts: set[int], one: bool) -> None:
    x, whole = (X[1], WHOLE[1]) if one else (X, WHOLE)
    _, rebuilt = sent(np.split(x, sorted(cuts), axis=-2))
    assert_close("self", rebuilt, whole)


def test_a_bad_packet_is_refused_and_the_stream_goes_on() -> None:
    packets, rebuilt = sent(np.split(X, [5, 11], axis=1))
    receiver = codec.Decoder(MODEL, PRIOR)
    with pytest.raises(ValueError, match=r"is at least \d+ bytes|magic"):
        receiver.push(packets[1])  # a later packet first: no header
    outputs = [receiver.push(packets[0])]
    damaged = bytearray(packets[1])
    damaged[9] ^= 4
    with pytest.raises(ValueError, match="CRC-32"):
        receiver.push(bytes(damaged))
    with pytest.raises(ValueError, match="packet 2 arrived where packet 1 was due"):
        receiver.push(packets[2])
    outputs += [receiver.push(packet) for packet in packets[1:]]
    assert_close("self", np.concatenate(outputs, axis=1), rebuilt)


def test_a_chunk_of_another_layout_is_refused_before_it_is_encoded() -> None:
    sender = codec.Encoder(MODEL, PRIOR)
    first = sender.push(X[:, :5])
    for chunk in (X[0, 5:], X[:1, 5:]):
        with pytest.raises(ValueError, match="in a stream of 2 sequences"):
            sender.push(chunk)
    receiver = codec.Decoder(MODEL, PRIOR)
    rebuilt = np.concatenate([receiver.push(first), receiver.push(sender.push(X[:, 5:]))], 1)
    assert_close("self", rebuilt, WHOLE)


def test_a_packet_for_another_model_is_refused() -> None:
    packets, _ = sent([X])
    other = frae.create("reference", CONFIG, weights=large_weights(42))
    with pytest.raises(ValueError, match="made by model"):
        codec.Decoder(other, PRIOR).push(packets[0])
