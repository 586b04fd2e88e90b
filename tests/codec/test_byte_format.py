"""``frae.codec.byte_format``: every hostile stream is a ``ValueError`` that says what is
wrong, whatever byte or bit it changes."""

from __future__ import annotations

import struct
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import frae
from frae import codec
from tests.codec.small_model import CONFIG, FORMAT_1, FORMAT_1_SYMBOLS, large_weights
from tests.processes import fresh_json

pytest.importorskip("constriction")

HEADER = "<4sBBBHII16s16s"
FIELDS = ("magic", "version", "code_exponent", "flags", "latent_dim", "sequences", "frames")


@pytest.fixture(scope="module")
def coded() -> tuple[frae.Backend, codec.Prior, bytes]:
    model = frae.create("reference", CONFIG, weights=large_weights(41))
    x = frae.data.multi_sine(3, 20, seed=5)
    prior = codec.fit_prior(model, x)
    return model, prior, codec.compress(model, prior, x)


def resealed(body: bytes) -> bytes:
    """``body`` under a CRC-32 that matches it: damage made on purpose, which the CRC passes."""
    return body + struct.pack("<I", zlib.crc32(body))


def with_header(data: bytes, **changed: object) -> bytes:
    values = list(struct.unpack_from(HEADER, data))
    values = [
        changed.get(name, value) for name, value in zip(FIELDS, values, strict=False)
    ] + values[7:]
    head = struct.pack(HEADER, *values)
    return resealed(head + data[len(head) : -4])


def test_the_stream_reads_back(coded: tuple[frae.Backend, codec.Prior, bytes]) -> None:
    model, prior, data = coded
    assert codec.read(prior, data).shape == (3, 20, 2)
    assert codec.decompress(model, prior, data).shape == (3, 20, CONFIG.input_dim)


def test_every_cut_is_refused(coded: tuple[frae.Backend, codec.Prior, bytes]) -> None:
    _, prior, data = coded
    for length in range(len(data)):
        with pytest.raises(ValueError, match=r"FRAE stream is at least|CRC-32"):
            codec.read(prior, data[:length])


def test_every_flipped_bit_is_refused(coded: tuple[frae.Backend, codec.Prior, bytes]) -> None:
    _, prior, data = coded
    for bit in range(8 * len(data)):
        damaged = bytearray(data)
        damaged[bit // 8] ^= 1 << bit % 8
        with pytest.raises(ValueError, match=r"magic|format|CRC-32"):
            codec.read(prior, bytes(damaged))


HOSTILE = {
    "magic": ({"magic": b"RIFF"}, "not an FRAE stream: magic b'RIFF'"),
    "version": ({"version": 3}, r"format 3: this version reads \[1, 2\]"),
    "two-to-the-40-symbols": ({"sequences": 2**20, "frames": 2**20}, "declares 2199023255552"),
    "sequences-past-the-bytes": ({"sequences": 1000}, "declares 1000 sequences"),
    "more-frames": ({"frames": 21}, "not the shortest coding of 21 frames"),
    "fewer-frames": ({"frames": 19}, "not the shortest coding of 19 frames"),
    "latent-dim": ({"latent_dim": 3}, "disagrees with its prior"),
    "step": ({"code_exponent": 7}, "disagrees with its prior"),
    "flags": ({"flags": 6}, "malformed"),
    "one-sequence-of-three": ({"flags": 1}, "one-sequence stream declares 3"),
    "no-frames": ({"frames": 0}, r"declares no frames \(T = 0\)"),
}


@pytest.mark.parametrize(("changed", "message"), HOSTILE.values(), ids=HOSTILE)
def test_a_hostile_header_is_refused(
    coded: tuple[frae.Backend, codec.Prior, bytes], changed: dict[str, object], message: str
) -> None:
    _, prior, data = coded
    with pytest.raises(ValueError, match=message):
        codec.read(prior, with_header(data, **changed))


def test_lengths_past_the_data_and_bytes_after_them_are_refused(
    coded: tuple[frae.Backend, codec.Prior, bytes],
) -> None:
    _, prior, data = coded
    first = codec.HEADER_BYTES
    (length,) = struct.unpack_from("<I", data, first)
    body = bytearray(data[:-4])
    struct.pack_into("<I", body, first, length + 4096)
    with pytest.raises(ValueError, match=r"sequence 0's length .* runs past the data"):
        codec.read(prior, resealed(bytes(body)))
    with pytest.raises(ValueError, match="4 bytes follow the last sequence"):
        codec.read(prior, resealed(data[:-4] + bytes(4)))


def test_another_prior_or_model_is_named_by_both_digests(
    coded: tuple[frae.Backend, codec.Prior, bytes],
) -> None:
    _, prior, data = coded
    other_prior = codec.prior_of_symbols(codec.read(prior, data)[:1], CONFIG.code_step)
    with pytest.raises(
        ValueError, match=r"coded under prior [0-9a-f]{32}, this prior is [0-9a-f]{32}"
    ):
        codec.read(other_prior, data)
    other_model = frae.create("reference", CONFIG, weights=large_weights(42))
    with pytest.raises(ValueError, match=r"made by model [0-9a-f]{32}, this model is [0-9a-f]{32}"):
        codec.decompress(other_model, prior, data)


def hostile_streams() -> tuple[codec.Prior, bytes, dict[str, bytes]]:
    """A prior, a stream, and streams each built to make a reader allocate or loop beyond the
    format's limits: headers declaring 2^40 frames, 2^31 symbols, 2^32 − 1 sequences, more
    sequences than the bytes hold, a sequence longer than the bytes, and a cut header."""
    model = frae.create("reference", CONFIG, weights=large_weights(41))
    x = frae.data.multi_sine(3, 20, seed=5)
    prior = codec.fit_prior(model, x)
    data = codec.compress(model, prior, x)
    body = bytearray(data[:-4])
    struct.pack_into("<I", body, codec.HEADER_BYTES, 2**32 - 4)
    streams = {
        "2^40 frames": with_header(data, sequences=2**20, frames=2**20),
        "2^31 symbols and 2": with_header(data, sequences=1, frames=2**30 + 1),
        "2^32 - 1 sequences": with_header(data, sequences=2**32 - 1),
        "2^20 one-frame sequences": with_header(data, sequences=2**20, frames=1),
        "a length of 4 GiB": resealed(bytes(body)),
        "a cut header": data[: codec.HEADER_BYTES - 1],
    }
    return prior, data, streams


READ_THEM_ALL = """
import json, resource, time
from frae import codec
from tests.codec.test_byte_format import hostile_streams

prior, valid, streams = hostile_streams()
codec.read(prior, valid)  # the coder imported and warm
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
seen = {}
for name, data in streams.items():
    start = time.perf_counter()
    try:
        codec.read(prior, data)
        seen[name] = ["accepted", 0.0]
    except ValueError as error:
        seen[name] = [str(error), time.perf_counter() - start]
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(json.dumps({"grown_kib": grown, "seen": seen}))
"""


def test_hostile_headers_are_refused_in_bounded_time_and_memory() -> None:
    """In a fresh process, whose peak memory after building them is measured: each stream a
    ValueError within a second, the peak grown by less than 16 MiB."""
    found = fresh_json(READ_THEM_ALL)
    for name, (message, seconds) in found["seen"].items():
        assert message != "accepted", name
        assert seconds < 1.0, (name, seconds)
    assert found["grown_kib"] < 16 * 1024, found


def test_format_1_still_reads() -> None:
    """Format 1's bytes (whole 32-bit words, little-endian) through its entry in READERS: the
    symbols it held, and today's model decodes them."""
    model = frae.create("reference", CONFIG, weights=large_weights(41))
    x = frae.data.multi_sine(2, 6, seed=5)
    prior = codec.fit_prior(model, x)
    data = bytes.fromhex(FORMAT_1)
    np.testing.assert_array_equal(codec.read(prior, data), FORMAT_1_SYMBOLS)
    np.testing.assert_array_equal(FORMAT_1_SYMBOLS, codec.symbols(model.encode(x), prior.step))
    expected = model.decode(np.asarray(FORMAT_1_SYMBOLS) * prior.step)
    np.testing.assert_allclose(codec.decompress(model, prior, data), expected)
    assert codec.compress(model, prior, x)[4] == codec.byte_format.VERSION == 2


@settings(max_examples=200, deadline=None, database=None)
@given(data=st.binary(max_size=200), at=st.integers(0, 2**16 - 1), resealed_too=st.booleans())
def test_any_bytes_read_to_symbols_or_a_value_error(
    coded: tuple[frae.Backend, codec.Prior, bytes], data: bytes, at: int, resealed_too: bool
) -> None:
    """Random bytes; and the stream with a byte changed, its CRC made to match where
    ``resealed_too`` (forged words under a valid header and CRC): frames or a ValueError. A
    forged T may decode: bytes ended at their shortest can stand for more frames than were
    coded (the frame count is the header's, which the CRC guards against damage alone)."""
    model, prior, valid = coded
    mutated = bytearray(valid[:-4])
    mutated[at % len(mutated)] ^= at >> 8 or 1
    forged = resealed(bytes(mutated)) if resealed_too else bytes(mutated) + valid[-4:]
    for candidate in (data, forged):
        try:
            frames = codec.decompress(model, prior, candidate)
        except ValueError:
            continue
        assert frames.shape[-1] == CONFIG.input_dim and np.isfinite(frames).all()
