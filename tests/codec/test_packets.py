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
from tests.codec.small_model import CONFIG, large_weights

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


def test_a_bad_packet_is_refused_and_leaves_the_stream_as_it_was() -> None:
    packets, rebuilt = sent(np.split(X, [5, 11], axis=1))
    receiver = codec.Decoder(MODEL, PRIOR)
    with pytest.raises(ValueError, match="opens with its opening packet, got a frames packet"):
        receiver.push(packets[1])
    outputs = [receiver.push(packets[0])]
    for bad, message in (
        (b"", "an empty packet"),
        (bytes([0b11 << 6]) + packets[1][1:], "a packet of kind 3"),
        (packets[0], "a second opening packet"),
        (bytes([packets[1][0] | 3, 0x80, 0x80, 0x80]), "longer than 3 bytes"),
    ):
        with pytest.raises(ValueError, match=message):
            receiver.push(bad)
    outputs += [receiver.push(packet) for packet in packets[1:]]
    assert_close("self", np.concatenate(outputs, axis=1), rebuilt)


def test_a_gap_in_the_numbers_is_concealed_and_the_stream_goes_on() -> None:
    """Packets 1 and 2 of six lost: packet 3 brings their frames, concealed, before its own;
    the frames before the gap are the lossless receiver's."""
    chunks = np.split(X, [2, 4, 6, 8, 10], axis=1)
    packets, rebuilt = sent(chunks)
    receiver = codec.Decoder(MODEL, PRIOR)
    first = receiver.push(packets[0])
    after = receiver.push(packets[3])
    assert after.shape == (2, 6, CONFIG.input_dim)
    rest = [receiver.push(packet) for packet in packets[4:]]
    total = np.concatenate([first, after, *rest], axis=1)
    assert total.shape == rebuilt.shape
    assert_close("self", total[:, :2], rebuilt[:, :2])
    assert not np.allclose(total[:, 2:6], rebuilt[:, 2:6])


@pytest.mark.parametrize("concealment", codec.CONCEALMENTS)
def test_a_refresh_brings_the_receiver_back_in_step(concealment: str) -> None:
    """One frame a packet, a refresh every 5: a receiver that lost packets 2, 3 and 9 gives,
    from the first refresh after each loss, exactly a lossless receiver's frames."""
    sender = codec.Encoder(MODEL, PRIOR, refresh=5)
    packets = [sender.push(X[:, t : t + 1]) for t in range(X.shape[1])]
    kinds = [packet[0] >> 6 for packet in packets]
    assert [t for t, kind in enumerate(kinds) if kind == 1] == [5, 10, 15, 20]
    whole = codec.Decoder(MODEL, PRIOR)
    lossless = np.concatenate([whole.push(packet) for packet in packets], axis=1)
    receiver = codec.Decoder(MODEL, PRIOR, concealment=concealment)
    kept = [p for t, p in enumerate(packets) if t not in (2, 3, 9)]
    lossy = np.concatenate([receiver.push(p) for p in kept], axis=1)
    assert lossy.shape == lossless.shape
    np.testing.assert_array_equal(lossy[:, :2], lossless[:, :2])
    np.testing.assert_array_equal(lossy[:, 5:9], lossless[:, 5:9])
    np.testing.assert_array_equal(lossy[:, 10:], lossless[:, 10:])
    assert not np.array_equal(lossy[:, 2:5], lossless[:, 2:5])


def test_lost_conceals_the_frames_it_is_told_of() -> None:
    chunks = np.split(X, [3, 7], axis=1)
    packets, rebuilt = sent(chunks)
    receiver = codec.Decoder(MODEL, PRIOR)
    with pytest.raises(ValueError, match="no stream is open"):
        receiver.lost(3)
    first = receiver.push(packets[0])
    hidden = receiver.lost(4)
    last = receiver.push(packets[2])
    assert hidden.shape == (2, 4, CONFIG.input_dim) and last.shape == (2, 17, CONFIG.input_dim)
    assert_close("self", first, rebuilt[:, :3])


def test_a_one_frame_packet_costs_at_most_16_bits_over_its_information() -> None:
    """The packet's bits less its symbols' information under the prior, over a stream of
    one-frame packets, on average (the first, which opens the stream, apart)."""
    sender = codec.Encoder(MODEL, PRIOR)
    packets = [sender.push(X[0, t : t + 1]) for t in range(X.shape[1])]
    values = codec.symbols(MODEL.encode(X[0]), PRIOR.step)
    over = [
        8 * len(packet) - codec.information_bits(PRIOR, values[t : t + 1])
        for t, packet in enumerate(packets[1:], 1)
    ]
    assert np.mean(over) <= 16, over


FUZZED = sent(np.split(X, [5], axis=1))[0]


@settings(max_examples=150, deadline=None, database=None)
@given(data=st.binary(max_size=64), mutate=st.integers(0, 2**16 - 1))
def test_any_bytes_decode_to_frames_or_a_value_error(data: bytes, mutate: int) -> None:
    """Random bytes, and a real packet with a byte changed, given to a receiver that has
    opened the stream: frames or a ValueError, nothing else."""
    receiver = codec.Decoder(MODEL, PRIOR)
    receiver.push(FUZZED[0])
    mutated = bytearray(FUZZED[1])
    mutated[mutate % len(mutated)] ^= mutate >> 8 or 1
    for candidate in (data, bytes(mutated)):
        try:
            frames = receiver.push(candidate)
        except ValueError:
            continue
        assert frames.ndim == 3 and frames.shape[0] == 2


def test_a_chunk_of_another_layout_is_refused_before_it_is_encoded() -> None:
    sender = codec.Encoder(MODEL, PRIOR)
    first = sender.push(X[:, :5])
    for chunk in (X[0, 5:], X[:1, 5:]):
        with pytest.raises(ValueError, match="in a stream of 2 sequences"):
            sender.push(chunk)
    receiver = codec.Decoder(MODEL, PRIOR)
    rebuilt = np.concatenate([receiver.push(first), receiver.push(sender.push(X[:, 5:]))], 1)
    assert_close("self", rebuilt, WHOLE)


def test_a_packet_beyond_the_symbol_limit_is_refused_at_both_ends() -> None:
    """An opening that declares 65535 sequences: its own frame already passes 2^16 symbols,
    refused before anything is decoded; a sender refuses to make such a packet."""
    opening = codec.byte_format.Header(
        code_exponent=6, flags=0, latent_dim=2, sequences=65535, frames=0,
        model_digest=codec.byte_format.model_digest(CONFIG, MODEL.get_weights()),
        prior_digest=codec.byte_format.prior_digest(PRIOR),
    )  # fmt: skip
    packet = codec.byte_format.pack_packet(codec.byte_format.OPENING, 0, 1, b"", opening)
    with pytest.raises(ValueError, match="131070 symbols, beyond 65536"):
        codec.Decoder(MODEL, PRIOR).push(packet)
    sender = codec.Encoder(MODEL, PRIOR)
    sender.push(np.zeros((9, 1, CONFIG.input_dim), np.float32))
    with pytest.raises(ValueError, match="72000 symbols, beyond 65536"):
        sender.push(np.zeros((9, 4000, CONFIG.input_dim), np.float32))
    with pytest.raises(ValueError, match=r"got shape \(6,\)"):
        sender.push(np.zeros(6, np.float32))
    assert sender.packets == 1


def test_a_packet_for_another_model_is_refused() -> None:
    packets, _ = sent([X])
    other = frae.create("reference", CONFIG, weights=large_weights(42))
    with pytest.raises(ValueError, match="made by model"):
        codec.Decoder(other, PRIOR).push(packets[0])
