"""``bench.measuring.operations.codec``: through packets, the coder alone and the coder
bypassed at each side and chunk length, timed in turn; the sender's packets weighed."""

from __future__ import annotations

import numpy as np
import pytest

import frae
from bench.grid import STREAM_CHUNKS
from bench.measuring.job import Job, Settings
from bench.measuring.operations.codec import (
    RANGE_CODER,
    codec_runs,
    codec_weights,
    coding_through,
    packet_sizes,
    read_symbols,
    recording,
    replaying,
    unpack,
)
from bench.measuring.worker import measure_shape
from bench.records import BYPASSED, CODEC, CODER, CODING, SENDER, SIDES, Point
from frae.data import multi_sine

pytest.importorskip("constriction")

QUANTIZED = "default Δ=2^-6"
TINY = Settings(repeats=2, min_time_s=0.0, budget_s=0.0, max_samples=2)
CONFIG = frae.FRAEConfig(code_step=2**-6)


def test_the_worker_times_the_codec_and_its_coder_at_each_side_and_chunk_length() -> None:
    """Every run timed at each side and chunk length; the sender's codec records carry its
    packets' mean bits and information, and no other record does."""
    job = Job("reference", "reference", TINY, models={QUANTIZED: CONFIG})
    rows = list(measure_shape(job, Point(QUANTIZED, 1, 30, (CODEC,))))
    keys = [(op, side, chunk) for chunk in STREAM_CHUNKS for op in CODING for side in SIDES]
    assert sorted((r.operation, r.side, r.chunk) for r in rows) == sorted(keys)
    for r in rows:
        assert r.median_s is not None and r.samples == 2 and r.model == QUANTIZED, r
        weighed = (r.operation, r.side) == (CODEC, SENDER)
        assert (r.packet_bits is not None and r.information_bits is not None) == weighed, r
    figure = {(r.operation, r.side, r.chunk): r.median_s for r in rows}
    for side in SIDES:  # the coder is a part of the codec's work
        assert figure[CODER, side, 1] < figure[CODEC, side, 1]


def test_a_float_model_gets_every_codec_row_with_why() -> None:
    job = Job("reference", "reference", TINY)
    rows = list(measure_shape(job, Point("default", 1, 30, (CODEC,))))
    assert len(rows) == 12 and all(r.median_s is None for r in rows)
    assert {r.error for r in rows} == {
        "ValueError: fit_prior needs a model with code_step set: it codes symbols"
    }


def _codec() -> tuple[frae.Backend, frae.codec.Prior, np.ndarray]:
    model = frae.create("reference", CONFIG, weights=codec_weights(CONFIG))
    prior = frae.codec.fit_prior(model, multi_sine(batch=1, steps=40, features=2, seed=1))
    return model, prior, multi_sine(batch=1, steps=40, features=CONFIG.input_dim, seed=0)


def test_the_codec_runs_send_the_bytes_the_one_shot_codec_makes() -> None:
    """The packets a sender run makes decode, packet by packet, to what one compress of the
    same sequence decompresses to, and the run with its coder bypassed makes the same packets;
    the codec's weights spread the codes over several symbols."""
    model, prior, x = _codec()
    runs = {(run.operation, run.side): run.run for run in codec_runs(model, x, (10,))}
    packets = runs[CODEC, SENDER]()
    assert isinstance(packets, list) and len(packets) == 4
    assert runs[BYPASSED, SENDER]() == packets, "the bypassed coder's bytes are not the coder's"
    symbols = frae.codec.symbols(model.encode(x), CONFIG.code_step)
    assert len(np.unique(symbols)) >= 3, "the codec's weights code one symbol throughout"
    receiver = frae.codec.Decoder(model, prior)
    frames = np.concatenate([receiver.push(packet) for packet in packets], axis=1)
    whole = frae.codec.decompress(model, prior, frae.codec.compress(model, prior, x))
    np.testing.assert_allclose(frames, whole, rtol=1e-6)


def test_the_coder_alone_reads_each_packets_bytes_and_the_bypass_answers_every_call() -> None:
    """Each packet's coder bytes read to the symbols of the model's encode, a chunk a packet;
    a receiver whose coder calls replay what a receiver's coder answered returns its frames,
    and the codec's own functions are back once the bypass ends."""
    from frae.codec import packets as module

    model, prior, x = _codec()
    sender = frae.codec.Encoder(model, prior)
    packets = [sender.push(x[:, at : at + 7]) for at in range(0, 40, 7)]
    read = read_symbols(prior, unpack(packets), 1)
    expected = frae.codec.symbols(model.encode(x), CONFIG.code_step)[0]
    assert [len(sequences[0]) for sequences in read] == [7] * 5 + [5]
    np.testing.assert_array_equal(np.concatenate([s[0] for s in read]), expected)
    answers: list = []
    recorded = frae.codec.Decoder(model, prior)
    with coding_through(recorded, recording(answers)):
        frames = [recorded.push(packet) for packet in packets]
    assert len(answers) >= 2 * len(packets), "each packet opens a range coder and reads it"
    before = [getattr(module, name) for name in RANGE_CODER]
    bypassed = frae.codec.Decoder(model, prior)
    with coding_through(bypassed, replaying(answers)):
        replayed = [bypassed.push(packet) for packet in packets]
    assert [getattr(module, name) for name in RANGE_CODER] == before
    for got, want in zip(replayed, frames, strict=True):
        np.testing.assert_array_equal(got, want)


def test_packets_are_weighed_past_the_opening() -> None:
    """The mean bits of the packets after the first, and of their symbols' information (that
    of each packet's sequences together); none where the opening is the only packet."""
    model, prior, x = _codec()
    sender = frae.codec.Encoder(model, prior)
    packets = [sender.push(x[:, at : at + 1]) for at in range(5)]
    read = read_symbols(prior, unpack(packets), 1)
    sizes = packet_sizes(prior, packets, read)
    assert sizes is not None
    assert sizes["packet_bits"] == 8 * sum(map(len, packets[1:])) / 4
    information = [frae.codec.information_bits(prior, s[0]) for s in read[1:]]
    assert sizes["information_bits"] == pytest.approx(np.mean(information), rel=1e-12)
    assert packet_sizes(prior, packets[:1], read[:1]) is None
