"""What lost packets cost: the first held-out windows end to end as one long stream, sent a
frame a packet by ``frae.codec.Encoder`` (one sequence, B = 1), packets dropped by a seeded
Gilbert-Elliott model (``frae.codec.gilbert_elliott``), the rest decoded by
``frae.codec.Decoder``, which conceals each lost frame in its turn; the held-out SNR of what
the receiver gives out against the signal sent, at each loss rate and refresh interval.

The opening packet always arrives: it is the stream's set-up (its parameters), which a real
link delivers reliably, as a session's description is. The receiver is told of each lost
packet as its turn comes (``Decoder.lost``), as a jitter buffer plays out a concealed frame
when a packet is late, so that a burst longer than the packets' numbers tell is concealed
too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

import frae
from apps.demo.rate_distortion import end_to_end, snr_db
from frae import codec
from frae.codec import byte_format
from frae.config import FRAEConfig

LOSS_CODE_STEP = 2**-3
"""The Δ the loss is measured at: the float weights quantized after training (the same
weights in every backend), at the knee of the rate–distortion curve, where a finer grid gains
little SNR for its bits (docs/demo.md)."""
LOSS_RATES = (0.0, 0.01, 0.05, 0.10, 0.20)
"""The long-run fractions of packets lost."""
BURST = 2.0
"""The mean length of a burst of lost packets."""
LOSS_SEED = 0
"""The seed of every loss pattern: each rate's losses drawn from the same numbers, so that
rates differ in how many packets they lose more than in which draw they got."""
REFRESH_INTERVALS: tuple[int | None, ...] = (None, 100, 25)
"""Frames between refreshes of the sender's state: none, then ever more often."""
CONCEALMENT_RATES = (0.05, 0.20)
"""The loss rates each concealment is measured at, with a refresh every
``CONCEALMENT_REFRESH`` frames."""
CONCEALMENT_REFRESH = 25
"""The refresh interval the concealments are compared at: each loss's harm ends at the next
refresh, so the comparison weighs the concealment more than a lasting loss of step."""
STREAM_FRAMES = 700
"""The long stream's frames: the first 100 held-out windows end to end, a model's call a
frame on each side (the slowest backend takes milliseconds a call)."""


@dataclass(frozen=True)
class LossPoint:
    """The receiver's frames at a loss ``rate``, a ``refresh`` interval (``None``: none) and a
    ``concealment``: how many packets were lost, the held-out SNR of every frame, and of the
    lost frames alone (``None`` where none was lost)."""

    rate: float
    refresh: int | None
    concealment: str
    lost: int
    snr_db: float
    lost_snr_db: float | None


@dataclass(frozen=True)
class RefreshCost:
    """The stream's bits at a ``refresh`` interval: its refresh packets, the bits each adds to
    a plain packet (their mean less the plain packets' mean; ``None`` without refreshes), and
    every packet's bits, the opening's too, per frame."""

    refresh: int | None
    refreshes: int
    refresh_bits: float | None
    stream_bits: float


def sent(model: Any, prior: codec.Prior, x: Any, refresh: int | None) -> list[bytes]:
    """``x`` (T, F) a frame a packet, the first opening the stream."""
    sender = codec.Encoder(model, prior, refresh=refresh)
    return [sender.push(x[t : t + 1]) for t in range(len(x))]


def losses(packets: int, rate: float) -> npt.NDArray[np.bool_]:
    """Which of ``packets`` are lost at ``rate``, the opening packet never."""
    lost = codec.gilbert_elliott(packets, rate, burst=BURST, seed=LOSS_SEED)
    lost[:1] = False
    return lost


def received(
    model: Any,
    prior: codec.Prior,
    packets: list[bytes],
    lost: npt.NDArray[np.bool_],
    concealment: str = "mode",
) -> Any:
    """The receiver's frames (T, F): each packet's decoded, or concealed where it was lost."""
    receiver = codec.Decoder(model, prior, concealment=concealment)
    frames = [
        receiver.lost(1) if gone else receiver.push(packet)
        for packet, gone in zip(packets, lost, strict=True)
    ]
    return np.concatenate(frames)


def refresh_cost(packets: list[bytes], refresh: int | None) -> RefreshCost:
    """``packets``' bits: each refresh over a plain packet, and all of them per frame."""
    kinds = np.array([byte_format.unpack_packet(packet).kind for packet in packets])
    bits = 8 * np.array([len(packet) for packet in packets])
    refreshes = kinds == byte_format.REFRESH
    extra = None
    if refreshes.any():
        extra = float(bits[refreshes].mean() - bits[kinds == byte_format.FRAMES].mean())
    return RefreshCost(refresh, int(refreshes.sum()), extra, float(bits.sum() / len(bits)))


def loss_point(
    model: Any,
    prior: codec.Prior,
    x: Any,
    packets: list[bytes],
    key: tuple[float, int | None, str],
) -> LossPoint:
    """``packets`` (``x`` sent) received at the loss rate, refresh and concealment of ``key``."""
    rate, _, concealment = key
    lost = losses(len(packets), rate)
    heard = received(model, prior, packets, lost, concealment)
    lost_snr = snr_db(x[lost], heard[lost]) if lost.any() else None
    return LossPoint(*key, int(lost.sum()), snr_db(x, heard), lost_snr)


def stand_in_distances(model: Any, prior: codec.Prior, x: Any) -> dict[str, float]:
    """How far each frame's code of ``x`` lies from what each concealment puts in its place,
    the root mean square over frames and dimensions: from the frame before's code
    (``repeat``), and from each dimension's most probable symbol under the prior (``mode``)."""
    codes = np.asarray(model.encode(x), np.float64)
    return {
        "repeat": float(np.sqrt(np.mean((codes[1:] - codes[:-1]) ** 2))),
        "mode": float(np.sqrt(np.mean((codes - mode_code(prior)) ** 2))),
    }


def mode_code(prior: codec.Prior) -> npt.NDArray[np.float64]:
    """The code of each dimension's most probable symbol under ``prior``, (L,)."""
    table = prior.frequencies[:, : prior.escape]
    return np.asarray((np.argmax(table, axis=1) + prior.lo) * prior.step, np.float64)


def loss_sweep(
    model: Any,
    prior: codec.Prior,
    x: Any,
    rates: Sequence[float] = LOSS_RATES,
    intervals: Sequence[int | None] = REFRESH_INTERVALS,
) -> dict[str, Any]:
    """``x`` (T, F) sent at each refresh interval and received at each loss rate with the
    default concealment, and at ``CONCEALMENT_RATES`` (those of ``rates``) with every other
    where the interval is ``CONCEALMENT_REFRESH``; the points, each interval's cost, and how
    far the codes lie from each concealment's stand-in."""
    points, costs = [], []
    for refresh in intervals:
        packets = sent(model, prior, x, refresh)
        costs.append(refresh_cost(packets, refresh))
        for rate in rates:
            compared = refresh == CONCEALMENT_REFRESH and rate in CONCEALMENT_RATES
            for concealment in codec.CONCEALMENTS if compared else ("mode",):
                points.append(loss_point(model, prior, x, packets, (rate, refresh, concealment)))
    return {
        "step": model.config.code_step,
        "frames": len(x),
        "burst": BURST,
        "points": [dataclasses.asdict(point) for point in points],
        "costs": [dataclasses.asdict(cost) for cost in costs],
        "stand_in_distances": stand_in_distances(model, prior, x),
    }


def measured(
    backend: str,
    config: FRAEConfig,
    weights: dict[str, npt.NDArray[Any]],
    test: npt.NDArray[np.float32],
    train: npt.NDArray[np.float32],
) -> dict[str, Any]:
    """The float model's ``weights`` in ``backend``'s quantized model at ``LOSS_CODE_STEP``,
    its prior fitted on ``train``: ``loss_sweep`` of ``test``'s first ``STREAM_FRAMES`` frames
    end to end."""
    quantized = dataclasses.replace(config, code_step=LOSS_CODE_STEP)
    model = frae.create(backend, quantized, weights=weights)
    return loss_sweep(model, codec.fit_prior(model, train), end_to_end(test, STREAM_FRAMES))
