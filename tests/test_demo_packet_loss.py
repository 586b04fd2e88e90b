"""``apps.demo.packet_loss``: a long stream through lost packets, its refreshes' bits, and the
tables of it."""

from __future__ import annotations

import copy
import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import frae
from apps.demo import packet_loss, settings
from frae import codec

pytest.importorskip("constriction")

STEP = packet_loss.LOSS_CODE_STEP
RATES = (0.0, *packet_loss.CONCEALMENT_RATES)
INTERVALS = (None, packet_loss.CONCEALMENT_REFRESH)


def _smooth(frames: int, seed: int) -> Any:
    """A signal of slow sinusoids, (frames, 12), one phase and frequency a channel."""
    rng = np.random.default_rng(seed)
    t = np.arange(frames)[:, None]
    signal = np.sin(0.2 * t * rng.uniform(0.5, 1.5, 12) + rng.uniform(0, 6, 12))
    return signal.astype(np.float32)


@pytest.fixture(scope="module")
def coded() -> tuple[Any, codec.Prior, Any]:
    """A quantized output model trained a little on the smooth signal, its prior, and a stream
    of 150 frames it never saw."""
    config = settings.MODELS["output"]
    trained = frae.create("reference", config, seed=1)
    train = _smooth(8 * 20, 0).reshape(8, 20, 12)
    trained.fit(train, epochs=60, learning_rate=0.02)
    model = frae.create(
        "reference", dataclasses.replace(config, code_step=STEP), weights=trained.get_weights()
    )
    return model, codec.fit_prior(model, train), _smooth(150, 1)


@pytest.fixture(scope="module")
def sweep(coded: tuple[Any, codec.Prior, Any]) -> dict[str, Any]:
    return packet_loss.loss_sweep(*coded, rates=RATES, intervals=INTERVALS)


def test_without_loss_the_receiver_gives_the_models_own_reconstruction(
    coded: tuple[Any, codec.Prior, Any],
) -> None:
    model, prior, x = coded
    packets = packet_loss.sent(model, prior, x, refresh=None)
    heard = packet_loss.received(model, prior, packets, np.zeros(len(x), bool))
    np.testing.assert_allclose(heard, model.predict(x), rtol=1e-5, atol=1e-6)


def test_a_lost_packet_is_concealed_in_its_turn_as_the_packets_numbers_would_tell(
    coded: tuple[Any, codec.Prior, Any],
) -> None:
    """Told of each loss in its turn, the receiver gives what it gives when it finds the gap in
    the numbers of the packets that arrive (bursts shorter than 16, the last packet kept)."""
    model, prior, x = coded
    packets = packet_loss.sent(model, prior, x, refresh=packet_loss.CONCEALMENT_REFRESH)
    lost = np.zeros(len(packets), bool)
    lost[[3, 4, 30, 60, 61, 62, 100]] = True  # a refresh (frame 100) among them
    heard = packet_loss.received(model, prior, packets, lost)
    receiver = codec.Decoder(model, prior)
    by_gaps = [receiver.push(p) for p, gone in zip(packets, lost, strict=True) if not gone]
    np.testing.assert_array_equal(heard, np.concatenate(by_gaps))
    clean = packet_loss.received(model, prior, packets, np.zeros(len(packets), bool))
    np.testing.assert_array_equal(heard[:3], clean[:3])
    assert not np.allclose(heard[3:5], clean[3:5])


def test_the_mode_stand_in_is_the_code_the_receiver_conceals_with(
    coded: tuple[Any, codec.Prior, Any],
) -> None:
    model, prior, x = coded
    receiver = codec.Decoder(model, prior, concealment="mode")
    receiver.push(packet_loss.sent(model, prior, x[:1], refresh=None)[0])
    state = receiver.state
    stand_in = packet_loss.mode_code(prior).astype(np.float32)[None]
    expected = model.decode(stand_in, state=state)
    np.testing.assert_array_equal(receiver.lost(1), expected)
    distances = packet_loss.stand_in_distances(model, prior, x)
    assert set(distances) == set(codec.CONCEALMENTS) and min(distances.values()) > 0


def test_the_opening_packet_is_never_lost(monkeypatch: pytest.MonkeyPatch) -> None:
    """With a seed whose first draw loses the first packet, the stream keeps it, and loses
    every other packet the draw loses."""
    seed = next(s for s in range(100) if codec.gilbert_elliott(1, 0.5, seed=s)[0])
    monkeypatch.setattr(packet_loss, "LOSS_SEED", seed)
    drawn = codec.gilbert_elliott(400, 0.5, burst=packet_loss.BURST, seed=seed)
    lost = packet_loss.losses(400, 0.5)
    assert drawn[0] and not lost[0]
    np.testing.assert_array_equal(lost[1:], drawn[1:])


def test_a_refresh_adds_its_state_in_16_bits_a_value(coded: tuple[Any, codec.Prior, Any]) -> None:
    """A refresh every 5 frames of 21: at frames 5, 10, 15 and 20; each adds the S = 12 values of
    the output model's state, 16 bits each, give or take the coder's ending (at most a byte)."""
    model, prior, x = coded
    packets = packet_loss.sent(model, prior, x[:21], refresh=5)
    cost = packet_loss.refresh_cost(packets, 5)
    assert cost.refreshes == 4
    assert cost.refresh_bits == pytest.approx(16 * 12, abs=8)
    assert cost.stream_bits == 8 * sum(map(len, packets)) / 21
    plain = packet_loss.refresh_cost(packets[:5], None)
    assert plain.refreshes == 0 and plain.refresh_bits is None


def test_the_sweep_has_every_cell_and_loss_never_beats_no_loss(sweep: dict[str, Any]) -> None:
    """Every (rate, refresh) with the default concealment, and both concealments at the
    compared rates and refresh; a refresh costs at most a few hundredths of a dB without loss
    (its state's grid of 2^−10), and no loss rate gives a better SNR than none."""
    points = {(p["rate"], p["refresh"], p["concealment"]): p for p in sweep["points"]}
    expected = {(rate, refresh, "mode") for rate in RATES for refresh in INTERVALS}
    expected |= {(rate, packet_loss.CONCEALMENT_REFRESH, "repeat") for rate in RATES[1:]}
    assert set(points) == expected
    assert [cost["refresh"] for cost in sweep["costs"]] == list(INTERVALS)
    for refresh in INTERVALS:
        clean = points[0.0, refresh, "mode"]
        assert clean["lost"] == 0 and clean["lost_snr_db"] is None
        assert clean["snr_db"] == pytest.approx(points[0.0, None, "mode"]["snr_db"], abs=0.05)
        for rate in RATES[1:]:
            lossy = points[rate, refresh, "mode"]
            assert lossy["lost"] == points[rate, None, "mode"]["lost"] > 0
            assert lossy["snr_db"] < clean["snr_db"]


def _two_backends(sweep: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Two variants' results with ``sweep``, the second's SNR at 5 % without refresh 1 dB lower."""
    other = copy.deepcopy(sweep)
    for point in other["points"]:
        if (point["rate"], point["refresh"]) == (0.05, None):
            point["snr_db"] -= 1.0
    return {
        label: {"models": {"output": {"packet_loss": found}}}
        for label, found in (("a", sweep), ("b", other))
    }


def test_the_loss_table_has_a_row_per_refresh_and_a_column_per_rate(
    sweep: dict[str, Any],
) -> None:
    from apps.demo import tables  # tabulate: the demo extra's

    rows, headers = tables.loss_rows(_two_backends(sweep), "output")
    points = {(p["rate"], p["refresh"], p["concealment"]): p for p in sweep["points"]}
    lost = [points[rate, None, "mode"]["lost"] for rate in RATES]
    assert headers[3:-1] == [
        f"{100 * r:g} % lost ({n} packets)" for r, n in zip(RATES, lost, strict=True)
    ]
    assert [row[0] for row in rows] == ["none", f"every {packet_loss.CONCEALMENT_REFRESH} frames"]
    none, refreshed = rows
    snr = points[0.05, None, "mode"]["snr_db"]
    assert none[4] == f"{snr - 1:.2f} to {snr:.2f}" and none[-1] == "1/2"
    assert refreshed[3] == f"{points[0.0, 25, 'mode']['snr_db']:.2f}" and refreshed[-1] == "2/2"
    assert none[2] == "" and refreshed[2] == sweep["costs"][1]["refresh_bits"]
    concealed = tables.concealment_rows(_two_backends(sweep), "output")
    assert [row[:2] for row in concealed] == [
        ["5 %", "every 25 frames"],
        ["20 %", "every 25 frames"],
    ]
    repeat = points[0.2, 25, "repeat"]
    assert concealed[1][3] == f"{repeat['snr_db']:.2f}"
    assert concealed[1][5] == f"{repeat['lost_snr_db']:.2f}"


def test_the_plot_draws_every_backend(sweep: dict[str, Any], tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from apps.demo import plots

    path = plots.plot_packet_loss(tmp_path / "packet_loss.png", _two_backends(sweep))
    assert path.stat().st_size > 0
