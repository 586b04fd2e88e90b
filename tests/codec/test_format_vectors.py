"""docs/format.md's test vectors (docs/format/vectors/): frae's codec makes every byte and
symbol of them again and decodes their frames; a reader and writer written from that page
alone (``independent_format``, a range coder in plain integers) reads them and frae's fresh
bytes to the same symbols and writes the same bytes; both refuse the same forged bytes."""

from __future__ import annotations

import json
import struct
import zlib
from typing import Any

import numpy as np
import pytest

import frae
from frae import codec
from frae.codec import byte_format, coder
from parity_tests.tolerances import assert_close
from tests.codec import independent_format as independent
from tests.codec.small_model import FORMAT_1
from tests.processes import ROOT, fresh_json

pytest.importorskip("constriction")

VECTORS = ROOT / "docs" / "format" / "vectors"
MODEL = json.loads((VECTORS / "model.json").read_text())
PRIOR = json.loads((VECTORS / "prior.json").read_text())
WHOLE = json.loads((VECTORS / "whole.json").read_text())["streams"]
STREAMS = json.loads((VECTORS / "packets.json").read_text())["streams"]
WEIGHTS_FILE = (VECTORS / MODEL["weights"]).read_bytes()


@pytest.fixture(scope="module")
def model() -> frae.Backend:
    from safetensors.numpy import load

    config = frae.FRAEConfig.from_dict(MODEL["config"])
    return frae.create("reference", config, weights=load(WEIGHTS_FILE))


@pytest.fixture(scope="module")
def prior() -> codec.Prior:
    return codec.Prior(PRIOR["step"], np.array(PRIOR["lo"]), np.array(PRIOR["frequencies"]))


def chunks(stream: dict[str, Any]) -> list[np.ndarray]:
    x = np.asarray(stream["x"], np.float32)
    return np.split(x, np.cumsum(stream["chunks"])[:-1], axis=-2)


def frae_contents(
    prior: codec.Prior, packet: bytes, sequences: int, width: int
) -> tuple[byte_format.PacketHead, list[list[int]] | None, np.ndarray]:
    """A packet's head, refresh state values (B, S) and symbols (B, t, L), read by frae."""
    head = byte_format.unpack_packet(packet)
    symbol_coder, decoder = coder.SymbolCoder(prior), coder.opened(packet[head.start :])
    state = None
    if head.kind == byte_format.REFRESH:
        state = symbol_coder.read_values(decoder, sequences * width).reshape(sequences, width)
    read = np.stack([symbol_coder.read(decoder, head.frames) for _ in range(sequences)])
    return head, None if state is None else state.tolist(), read


# frae's codec against the vectors.


def test_frae_makes_the_digests_and_the_prior(model: frae.Backend, prior: codec.Prior) -> None:
    config = model.config
    assert byte_format.config_json(config) == MODEL["config_json"]
    assert list(config.parameter_shapes()) == MODEL["parameter_order"]
    assert byte_format.model_digest(config, model.get_weights()).hex() == MODEL["digest"]
    assert byte_format.prior_digest(prior).hex() == PRIOR["digest"]
    assert codec.fit_prior(model, np.asarray(PRIOR["fitted_on"]["x"], np.float32)) == prior
    rng = np.random.default_rng(MODEL["weights_drawn"]["seed"])
    for name, shape in config.parameter_shapes().items():
        drawn = rng.normal(0.0, MODEL["weights_drawn"]["std"], shape).astype(np.float32)
        np.testing.assert_array_equal(model.get_weights()[name], drawn, err_msg=name)


@pytest.mark.parametrize("case", WHOLE, ids=[case["file"] for case in WHOLE])
def test_frae_writes_and_reads_each_whole_signal(
    model: frae.Backend, prior: codec.Prior, case: dict[str, Any]
) -> None:
    data = (VECTORS / case["file"]).read_bytes()
    if case["version"] == 2:
        assert codec.compress(model, prior, np.asarray(case["x"], np.float32)) == data
    else:
        assert data.hex() == FORMAT_1, "format 1's bytes, as its writer made them"
    np.testing.assert_array_equal(codec.read(prior, data), case["symbols"])
    assert_close("outputs", codec.decompress(model, prior, data), np.float32(case["frames"]))


@pytest.mark.parametrize("stream", STREAMS, ids=[stream["name"] for stream in STREAMS])
def test_frae_sends_and_receives_each_packet_stream(
    model: frae.Backend, prior: codec.Prior, stream: dict[str, Any]
) -> None:
    sender = codec.Encoder(model, prior, refresh=stream["refresh"])
    receiver = codec.Decoder(model, prior)
    lossy = codec.Decoder(model, prior, concealment=stream["concealment"])
    sequences, width = len(stream["packets"][0]["symbols"]), model.initial_state().shape[-1]
    rebuilt = []
    for index, (chunk, expected) in enumerate(zip(chunks(stream), stream["packets"], strict=True)):
        packet = sender.push(chunk)
        assert packet.hex() == expected["bytes"], index
        head, state, symbols = frae_contents(prior, packet, sequences, width)
        found = (head.kind, head.number, head.frames, len(packet) - head.start, state)
        assert found == (
            expected["kind"],
            expected["number"],
            expected["frames"],
            expected["payload_bytes"],
            expected["state"],
        ), index
        np.testing.assert_array_equal(symbols, expected["symbols"])
        assert_close("outputs", receiver.push(packet), np.float32(expected["frames_decoded"]))
        if index not in stream["lost"]:
            rebuilt.append(lossy.push(packet))
    assert_close("outputs", np.concatenate(rebuilt, -2), np.float32(stream["lossy_frames"]))


def test_the_vectors_hold_the_cases_the_page_names(prior: codec.Prior) -> None:
    """Escaped symbols in every form, a refresh, a LEB128 count and 0 coder bytes."""
    packets = [packet for stream in STREAMS for packet in stream["packets"]]
    for symbols in [case["symbols"] for case in WHOLE[:2]] + [p["symbols"] for p in packets]:
        if (prior.indices(np.asarray(symbols)) == prior.escape).any():
            break
    else:
        pytest.fail("no symbol escapes")
    assert {packet["kind"] for packet in packets} == {0, 1, 2}
    assert any(packet["frames"] > 3 for packet in packets)
    assert any(packet["payload_bytes"] == 0 for packet in packets)


# The independent reader and writer against the vectors.


IMPORTED = """
import json, sys
import tests.codec.independent_format
print(json.dumps(sorted({name.partition(".")[0] for name in sys.modules})))
"""


def test_the_independent_reader_imports_no_codec() -> None:
    """In a fresh process: neither frae nor constriction nor safetensors is imported."""
    assert {"frae", "constriction", "safetensors"}.isdisjoint(fresh_json(IMPORTED))


def independent_prior() -> independent.Prior:
    return independent.Prior(PRIOR)


def test_the_independent_digests_are_the_vectors() -> None:
    weights = independent.read_safetensors(WEIGHTS_FILE)
    assert json.dumps(MODEL["config"], sort_keys=True) == MODEL["config_json"]
    assert independent.parameter_names(MODEL["config"]) == MODEL["parameter_order"]
    assert independent.model_digest(MODEL["config"], weights).hex() == MODEL["digest"]
    assert independent_prior().digest.hex() == PRIOR["digest"]


@pytest.mark.parametrize("case", WHOLE, ids=[case["file"] for case in WHOLE])
def test_the_independent_reader_and_writer_on_each_whole_signal(case: dict[str, Any]) -> None:
    data, prior = (VECTORS / case["file"]).read_bytes(), independent_prior()
    header, symbols = independent.read_stream(data, prior)
    assert header["version"] == case["version"]
    assert header["model"].hex() == MODEL["digest"]
    np.testing.assert_array_equal(symbols, case["symbols"])
    if case["version"] == 2:
        assert header["flags"] == case["signal"].get("one", 0)
        assert independent.write_stream(header, prior, symbols) == data


@pytest.mark.parametrize("stream", STREAMS, ids=[stream["name"] for stream in STREAMS])
def test_the_independent_reader_and_writer_on_each_packet_stream(stream: dict[str, Any]) -> None:
    prior, model = independent_prior(), bytes.fromhex(MODEL["digest"])
    width = MODEL["config"]["input_dim"]
    receiver, opening = independent.Receiver(prior, model, width), None
    for expected in stream["packets"]:
        data = bytes.fromhex(expected["bytes"])
        read = receiver.read(data)
        opening = opening or read["opening"]
        found = (read["kind"], read["number"], read["frames"], len(data) - read["start"])
        assert found == tuple(
            expected[key] for key in ("kind", "number", "frames", "payload_bytes")
        )
        state = None if read["state"] is None else np.reshape(read["state"], (-1, width)).tolist()
        assert state == expected["state"]
        np.testing.assert_array_equal(read["symbols"], expected["symbols"])
        written = independent.write_packet(
            read["kind"], read["number"], prior, read["symbols"], read["state"], opening
        )
        assert written == data
    lossy = independent.Receiver(prior, model, width)
    kept = [p for index, p in enumerate(stream["packets"]) if index not in stream["lost"]]
    frames = sum(
        (packet["frames"]) * (1 + lossy.read(bytes.fromhex(packet["bytes"]))["gap"])
        for packet in kept
    )
    assert frames == np.shape(stream["lossy_frames"])[-2], "concealed: the gap times the count"


# The independent reader and writer against frae's fresh bytes.

SPREADS = [0.5, 40.0, 3000.0]


def laplace_symbols(seed: int, spread: float, frames: int) -> np.ndarray:
    values = np.rint(np.random.default_rng(seed).laplace(0.0, spread, (frames, 3)))
    return np.clip(values, -codec.SYMBOL_LIMIT, codec.SYMBOL_LIMIT).astype(np.int32)


def as_independent(prior: codec.Prior) -> independent.Prior:
    return independent.Prior(
        {
            "step": prior.step,
            "precision": prior.precision,
            "lo": prior.lo.tolist(),
            "frequencies": prior.frequencies.tolist(),
        }
    )


@pytest.mark.parametrize("spread", SPREADS)
def test_the_independent_coder_makes_frae_s_bytes(spread: float) -> None:
    """Symbols from tables of a few columns to 4096, escapes and both limits included, over
    enough values that carries pass into the words emitted: the same bytes, read back."""
    prior = codec.prior_of_symbols(laplace_symbols(1, spread, 300), 2**-8)
    symbols = laplace_symbols(2, spread, 400)
    symbols[0], symbols[-1] = codec.SYMBOL_LIMIT, -codec.SYMBOL_LIMIT
    data = codec.encode_symbols(prior, symbols)
    assert independent.code(as_independent(prior), symbols) == data
    decoded = independent.read_sequence(independent.Decoder(data), as_independent(prior), 400)
    np.testing.assert_array_equal(decoded, symbols)


def test_the_independent_reader_and_writer_on_fresh_streams(
    model: frae.Backend, prior: codec.Prior
) -> None:
    """A whole signal and a stream of packets frae makes now, of other sizes than the
    vectors': read to frae's symbols, written to frae's bytes."""
    mine, x = independent_prior(), frae.data.multi_sine(3, 30, seed=7)
    data = codec.compress(model, prior, x)
    header, symbols = independent.read_stream(data, mine)
    np.testing.assert_array_equal(symbols, codec.read(prior, data))
    assert independent.write_stream(header, mine, symbols) == data
    sender = codec.Encoder(model, prior, refresh=3)
    receiver = independent.Receiver(mine, header["model"], model.initial_state().shape[-1])
    opening = None
    for chunk in np.split(x, [1, 5, 7, 8, 20], axis=1):
        packet = sender.push(chunk)
        read = receiver.read(packet)
        opening = opening or read["opening"]
        _, state, symbols = frae_contents(prior, packet, 3, model.initial_state().shape[-1])
        np.testing.assert_array_equal(read["symbols"], symbols)
        flat = None if state is None else np.ravel(state).tolist()
        assert read["state"] == flat
        args = (read["kind"], read["number"], mine, read["symbols"], read["state"], opening)
        assert independent.write_packet(*args) == packet


def test_an_ending_whose_seal_would_carry_makes_the_same_bytes() -> None:
    """The rare final interval (about one state in 2^20) whose lower end lies within 2^32 of
    2^64: constriction's seal, lower + 2^32 − 1, carries into the words it holds back, and
    ``coder.ended`` takes that carry back; plain integers need no such care."""
    weights = np.random.default_rng(2).integers(2048, 6144, 4097)
    frequencies = weights * 2**24 // weights.sum()
    frequencies[-1] += 2**24 - frequencies.sum()
    prior = codec.Prior(2**-8, np.array([-2000]), frequencies[None])
    symbols = np.array([[413], [2726], [1474], [2084]]) - 2000
    encoder = independent.Encoder()
    independent.write_sequence(encoder, as_independent(prior), symbols)
    assert encoder.x % 2**64 + 2**32 - 1 >= 2**64, "the fixture's seal carries"
    assert codec.encode_symbols(prior, symbols) == encoder.ended() == bytes.fromhex("1a1e65d5")


def resealed(body: bytes) -> bytes:
    return body + struct.pack("<I", zlib.crc32(body))


def with_first_sequence(sequence: bytes, frames: int = 8) -> bytes:
    """whole_batch.frac with ``sequence`` for its first sequence's bytes and ``frames`` for
    its T, under a CRC that matches."""
    data = (VECTORS / "whole_batch.frac").read_bytes()
    first = byte_format.HEADER_BYTES
    (length,) = struct.unpack_from("<I", data, first)
    head = bytearray(data[:first])
    struct.pack_into("<I", head, 13, frames)
    rest = data[first + 4 + length : -4]
    return resealed(bytes(head) + struct.pack("<I", len(sequence)) + sequence + rest)


def escaping(symbols: np.ndarray, forced: tuple[int, int]) -> bytes:
    """A sequence (T, L) coded as docs/format.md's "A sequence's symbols in the coder" codes
    it, save that the symbol at ``forced`` (frame, dimension) is escaped too, though its table
    holds it."""
    prior, encoder = independent_prior(), independent.Encoder()
    for dimension, (lo, table) in enumerate(zip(prior.lo, prior.tables, strict=True)):
        escaped = []
        for frame, symbol in enumerate(symbols[:, dimension].tolist()):
            column = symbol - lo
            if (frame, dimension) == forced or not 0 <= column < prior.escape:
                column = prior.escape
                escaped.append(symbol)
            encoder.encode(table.cumulative[column], table.frequencies[column])
        independent.write_values(encoder, escaped)
    return encoder.ended()


FIRST = np.asarray(WHOLE[0]["symbols"][0])
"""The symbols of whole_batch.frac's first sequence."""


def forged_sequences() -> dict[str, bytes]:
    """Bytes that decode to ``FIRST`` but are not the writer's coding of it: the coding padded
    with a zero byte, and a coding that escapes a symbol its table holds."""
    coded = independent.code(independent_prior(), FIRST)
    return {"padded": coded + b"\0", "escaping a held symbol": escaping(FIRST, (0, 0))}


@pytest.mark.parametrize("sequence", forged_sequences().values(), ids=list(forged_sequences()))
def test_both_readers_refuse_a_coding_not_the_writer_s(prior: codec.Prior, sequence: bytes) -> None:
    decoder = independent.Decoder(sequence)
    decoded = independent.read_sequence(decoder, independent_prior(), len(FIRST))
    np.testing.assert_array_equal(decoded, FIRST, err_msg="the forged bytes' symbols")
    data = with_first_sequence(sequence)
    with pytest.raises(ValueError, match="not the shortest coding"):
        codec.read(prior, data)
    with pytest.raises(ValueError, match="not the shortest coding"):
        independent.read_stream(data, independent_prior())


def test_both_readers_agree_on_every_changed_byte(prior: codec.Prior) -> None:
    """Each byte of whole_batch.frac, and its T, changed under a CRC that matches: both
    readers refuse, or both read the same symbols (bytes cut short, say, may be the coding
    of other symbols)."""
    data = (VECTORS / "whole_batch.frac").read_bytes()
    rng = np.random.default_rng(3)
    changed = [with_first_sequence(b"", 8), *(with_first_sequence(b"", t) for t in (0, 1))]
    for offset in range(len(data) - 4):
        body = bytearray(data[:-4])
        body[offset] ^= int(rng.integers(1, 256))
        changed.append(resealed(bytes(body)))
    for candidate in changed:
        try:
            expected = codec.read(prior, candidate)
        except ValueError:
            with pytest.raises(ValueError):
                independent.read_stream(candidate, independent_prior())
            continue
        np.testing.assert_array_equal(
            independent.read_stream(candidate, independent_prior())[1], expected
        )
