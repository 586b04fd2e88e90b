"""``frae demo`` (``apps.demo``): its windows, its quantized models' rate and SNR."""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

import frae
from apps.demo import data, packet_loss, rate_distortion, rate_term, settings, worker
from frae import codec

needs_sktime = pytest.mark.skipif(
    importlib.util.find_spec("sktime") is None, reason="sktime (the demo extra) is not installed"
)


def test_windows_are_consecutive_frames_of_one_utterance() -> None:
    """Lengths 7, 15 and 20 in windows of 7: 1 + 2 + 2 windows, each a run of real frames,
    the leftover 1 and 6 frames dropped (no padding, so nothing to mask)."""
    utterances = [
        np.arange(n * 3, dtype=float).reshape(n, 3) + 1000 * i for i, n in enumerate((7, 15, 20))
    ]
    windows = data.cut_windows(utterances, 7)
    assert windows.shape == (5, 7, 3)
    expected = [utterances[0][0:7], utterances[1][0:7], utterances[1][7:14]]
    expected += [utterances[2][0:7], utterances[2][7:14]]
    np.testing.assert_array_equal(windows, np.stack(expected))


def test_channels_are_standardised_by_the_training_frames_alone() -> None:
    rng = np.random.default_rng(0)
    train = [rng.normal(3.0, 2.0, size=(n, 4)) for n in (9, 14, 21, 7)]
    test = [rng.normal(-5.0, 9.0, size=(n, 4)) for n in (8, 16)]
    signal = data.prepare(train, test, window=3, batch_size=4)
    frames = np.concatenate(train)
    np.testing.assert_allclose(signal.mean, frames.mean(axis=0))
    np.testing.assert_allclose(signal.scale, frames.std(axis=0))
    assert signal.train.shape == (16 - 16 % 4, 3, 4)  # 3 + 4 + 7 + 2 windows, whole batches
    assert signal.test.shape == (2 + 5, 3, 4)
    expected = ((test[1][:3] - frames.mean(axis=0)) / frames.std(axis=0)).astype(np.float32)
    np.testing.assert_array_equal(signal.test[2], expected)


@needs_sktime
def test_japanese_vowels_in_windows_of_both_splits() -> None:
    signal = data.load_signal()
    assert signal.train.shape == (500, settings.WINDOW, settings.CHANNELS)  # 501 windows
    assert signal.test.shape == (655, settings.WINDOW, settings.CHANNELS)
    assert signal.train.dtype == signal.test.dtype == np.float32
    assert len(signal.test_utterances) == 370
    assert {len(u) for u in signal.test_utterances} >= {settings.WINDOW, 29}
    assert np.isfinite(signal.train).all() and np.isfinite(signal.test).all()


@pytest.mark.parametrize("model", list(settings.MODELS))
def test_a_rate_point_is_the_quantized_models_own(model: str) -> None:
    """Its symbols are encode's, its SNR that of decode(encode(x)) = predict(x) through the
    bytes, its rates those of the bytes under the prior of the training symbols."""
    config = dataclasses.replace(settings.MODELS[model], code_step=2**-3)
    backend = frae.create("reference", config, seed=3)
    rng = np.random.default_rng(1)
    x, train = (rng.normal(size=(b, 5, config.input_dim)).astype(np.float32) for b in (3, 6))
    point = rate_distortion.rate_point(backend, x, train)
    symbols = codec.symbols(backend.encode(x), 2**-3)
    assert point.step == 2**-3 and point.bits == rate_distortion.bits_per_frame(symbols)
    assert point.symbols == hashlib.sha256(symbols.tobytes()).hexdigest()[:12]
    assert point.snr_db == pytest.approx(rate_distortion.snr_db(x, backend.predict(x)))
    prior = codec.fit_prior(backend, train)
    data = codec.compress(backend, prior, x)
    assert point.bytes == hashlib.sha256(data).hexdigest()[:12]
    assert point.stream_bits == 8 * len(data) / 15
    assert point.payload_bits == 8 * (len(data) - codec.HEADER_BYTES - codec.TRAILER_BYTES) / 15
    assert point.rate_weight is None and point.counted_payload_bits is None
    information = sum(codec.information_bits(prior, sequence) for sequence in symbols)
    assert point.prior_bits == pytest.approx(information / 15)


def test_a_rate_points_packets_are_of_one_frame_past_the_opening() -> None:
    """The windows end to end sent a frame a packet: the mean bits of the 14 packets after the
    opening, and of their frames' information; each packet's first byte and the coder's
    ending and rounding (the contract's bound) are all it adds."""
    config = dataclasses.replace(settings.MODELS["state"], code_step=2**-4)
    backend = frae.create("reference", config, seed=3)
    rng = np.random.default_rng(1)
    x, train = (rng.normal(size=(b, 5, config.input_dim)).astype(np.float32) for b in (3, 6))
    point = rate_distortion.rate_point(backend, x, train)
    prior = codec.fit_prior(backend, train)
    sequence = x.reshape(15, config.input_dim)
    sender = codec.Encoder(backend, prior)
    packets = [sender.push(sequence[t : t + 1]) for t in range(15)]
    assert point.packet_bits == 8 * sum(map(len, packets[1:])) / 14
    symbols = codec.symbols(backend.encode(sequence), 2**-4)
    information = codec.information_bits(prior, symbols[1:]) / 14
    assert point.packet_overhead == pytest.approx(point.packet_bits - information)
    values = 2 * config.latent_dim  # each symbol, and an escape's value where it escaped
    most = 8 * codec.PACKET_BYTES + codec.ENDING_BITS + values * codec.ROUNDING_BITS
    assert 0 < point.packet_overhead <= most


def test_quantized_after_training_runs_each_step_in_the_backends_model() -> None:
    """One point per Δ, each the backend's quantized model with the float weights; the finest
    grid is within 0.05 dB of the float model, the coarsest well below it."""
    config = settings.MODELS["output"]
    trained = frae.create("reference", config, seed=3)
    x = np.random.default_rng(2).normal(size=(4, 7, config.input_dim)).astype(np.float32)
    trained.fit(x, epochs=20, learning_rate=0.02)
    weights = trained.get_weights()
    points = rate_distortion.quantized_after_training("reference", config, weights, x, x)
    assert [point.step for point in points] == list(rate_distortion.CODE_STEPS)
    float_snr = rate_distortion.snr_db(x, trained.predict(x))
    assert abs(points[-1].snr_db - float_snr) < 0.05 < float_snr - points[0].snr_db
    coarsest = frae.create("reference", dataclasses.replace(config, code_step=1.0), weights=weights)
    assert points[0].snr_db == pytest.approx(rate_distortion.snr_db(x, coarsest.predict(x)))


def test_bits_per_frame_sums_each_dimensions_entropy() -> None:
    uniform_over_four = np.tile(np.arange(4), 25)
    constant = np.zeros(100, dtype=np.int64)
    halves = np.repeat([-1, 1], 50)
    assert rate_distortion.bits_per_frame(uniform_over_four[:, None]) == pytest.approx(2.0)
    assert rate_distortion.bits_per_frame(constant[:, None]) == 0.0
    codes = np.stack([uniform_over_four, constant, halves], axis=-1).reshape(4, 25, 3)
    assert rate_distortion.bits_per_frame(codes) == pytest.approx(3.0)


def test_keras_runs_once_per_installed_keras_backend() -> None:
    labels = [variant.label for variant in worker.variants(["reference", "keras_rnn"])]
    keras_backends = [
        name for name in worker.KERAS_BACKENDS if importlib.util.find_spec(name) is not None
    ]
    assert labels == ["reference", *(f"keras_rnn[{name}]" for name in keras_backends)]
    assert worker.variants(["keras_rnn"])[0].env == {"KERAS_BACKEND": keras_backends[0]}


@needs_sktime
def test_demo_runs_end_to_end_on_the_reference(tmp_path: Path) -> None:
    """One epoch, the reference alone: two Adam steps a model (float, with each trained Δ,
    and with the rate term at each λ), the sweep of Δ after training, the long stream through
    lost packets, the tables and plots, and the records."""
    pytest.importorskip("matplotlib")
    from apps.demo import tables  # its tables need tabulate, the demo extra's
    from apps.demo.cli import run_demo

    results = run_demo(tmp_path, ["reference"], epochs=1)
    for model in settings.MODELS:
        outcome = results["reference"]["models"][model]
        assert len(outcome["loss"]) == 500 // settings.BATCH_SIZE  # the 500 training windows
        assert np.isfinite(outcome["snr_db"])
        assert (tmp_path / "weights" / f"reference-{model}.npz").is_file()
        after, trained = outcome["after_training"], outcome["trained_quantized"]
        assert [p["step"] for p in after] == list(rate_distortion.CODE_STEPS)
        assert [p["step"] for p in trained] == list(rate_distortion.TRAINED_CODE_STEPS)
        rows = tables.rate_rows(results, model)
        assert len(rows) == len(rate_distortion.CODE_STEPS) and rows[0][3] == "1/1"
        rated = outcome["rate_trained"]
        assert [p["rate_weight"] for p in rated] == list(rate_term.RATE_WEIGHTS)
        for point in rated:
            assert (tmp_path / "streams" / model / f"{point['bytes']}.frae").is_file()
        rows = tables.rate_term_rows(results, model)
        assert [row[0] for row in rows].count("trained with Δ and λ") == len(rated)
        sweep = outcome["packet_loss"]
        assert sweep["frames"] == packet_loss.STREAM_FRAMES
        loss_rows, _ = tables.loss_rows(results, model)
        assert len(loss_rows) == len(packet_loss.REFRESH_INTERVALS)
    assert {p.name for p in tmp_path.glob("*.png")} == {
        "loss.png",
        "reconstruction.png",
        "rate_distortion.png",
        "rate_term.png",
        "packet_loss.png",
    }
    assert json.loads((tmp_path / "results.json").read_text()) == results
    text = (tmp_path / "tables.txt").read_text()
    assert "through lost packets" in text and "the rate term's" in text
