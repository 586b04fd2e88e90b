"""The held-out SNR, and the rate–distortion view of each backend's quantized models.

The SNR, 10·log10(Σ x² / Σ (x − x̂)²) over the held-out windows, is in standardised units:
predicting the training mean scores 0 dB.

A rate point is a model with ``code_step`` Δ (the contract's "Quantized codes": the code
rounded inside the recurrence, so the decoder and the feedback see only ẑ_t, as at a
receiver) run by a backend on the held-out windows: its symbols from ``encode``, x̂ from
``decode`` of its codes. The rate is the symbols' empirical entropy, summed over the L code
dimensions, in bits per frame (``bits_per_frame``); in real bytes, those of the stream that
codes its symbols under a prior, counted from its symbols of the training windows (by default)
or its own learned one. Three ways to a quantized model: the float model's trained weights
quantized after training (``quantized_after_training``), a model trained with Δ set, straight
through (the worker's), and one trained with the rate term too (``apps.demo.rate_term``).

A live signal is one long sequence: the held-out windows end to end (``end_to_end``) stand
for it where the bytes of packets, one frame each, are counted.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

import frae
from frae import codec
from frae.config import FRAEConfig

CODE_STEPS = (1.0, 2**-1, 2**-2, 2**-3, 2**-4, 2**-6, 2**-8)
"""The grid steps Δ the float models are quantized at after training, 1 down to 1/256: the
codes are tanh outputs in (−1, 1), so Δ = 1 leaves three symbols and 1/256 about 9 bits a
dimension."""
TRAINED_CODE_STEPS = (2**-2, 2**-4)
"""The grid steps each backend also trains both models with, straight through."""
PACKET_FRAMES = 350
"""The frames sent a packet each for a rate point's packet bits: the first 50 held-out
windows end to end (a packet a frame costs each backend a call of its model)."""


def snr_db(signal: npt.NDArray[Any], reconstruction: npt.NDArray[Any]) -> float:
    """10·log10(Σ x² / Σ (x − x̂)²), in float64."""
    x = np.asarray(signal, dtype=np.float64)
    error = x - np.asarray(reconstruction, dtype=np.float64)
    return float(10.0 * np.log10(np.sum(x**2) / np.sum(error**2)))


def bits_per_frame(symbols: npt.NDArray[np.integer[Any]]) -> float:
    """Σ over the last axis's L dimensions of each one's empirical entropy, in bits:
    H_l = −Σ_s p_l(s)·log2 p_l(s) over the symbols s that dimension l takes."""
    columns = np.asarray(symbols).reshape(-1, symbols.shape[-1]).T
    total = 0.0
    for column in columns:
        _, counts = np.unique(column, return_counts=True)
        p = counts / counts.sum()
        total -= float(np.sum(p * np.log2(p)))
    return total


Keep = Callable[[frae.Backend, bytes, codec.Prior], None]
"""What a rate point hands its stream to: the model, its bytes and their prior."""


def end_to_end(windows: npt.NDArray[Any], frames: int | None = None) -> npt.NDArray[Any]:
    """The first ``frames`` frames (default: all) of ``windows`` (N, T, F) end to end as one
    sequence, (frames, F)."""
    return windows.reshape(-1, windows.shape[-1])[:frames]


@dataclass(frozen=True)
class RatePoint:
    """A quantized model on the held-out windows: its Δ, rate in bits per frame (the symbols'
    entropy; their information under the prior; the bytes of one stream, everything counted;
    its payload, the stream's bytes less its header and trailer, which a stream has once
    whatever its length), SNR of the stream decompressed, the mean bits of a packet of one
    frame, past the stream's opening, and how far they exceed the information of the frame
    they carry (of the first ``PACKET_FRAMES`` frames end to end, sent a frame a packet), how
    far the words of the windows end to end as one sequence exceed their information (a
    fraction), and digests of its symbols and bytes (equal digests: the same, to the last
    one); where it was trained with the rate term, its ``rate_weight`` λ; where its prior is
    not the one its symbols of the training windows count (a learned one), its payload under
    that counted one too (``counted_payload_bits``).
    """

    step: float
    bits: float
    snr_db: float
    symbols: str
    prior_bits: float
    stream_bits: float
    payload_bits: float
    packet_bits: float
    packet_overhead: float
    payload_excess: float
    bytes: str
    rate_weight: float | None = None
    counted_payload_bits: float | None = None


def digest(data: bytes) -> str:
    """The first 12 hexadecimal digits of ``data``'s SHA-256: equal digests, equal bytes."""
    return hashlib.sha256(data).hexdigest()[:12]


def rate_point(
    model: frae.Backend,
    x: npt.NDArray[np.float32],
    train: npt.NDArray[np.float32],
    keep: Keep | None = None,
    prior: codec.Prior | None = None,
) -> RatePoint:
    """``model``'s (a config with ``code_step``) symbols, bytes and reconstruction of ``x``,
    under ``prior`` (default: the prior of its symbols of ``train``; where another is given,
    the payload under that one too); the model, the bytes and the prior handed to ``keep``."""
    step = model.config.code_step
    assert step is not None, "a quantized model"
    symbols = codec.symbols(model.encode(x), step)
    counted = codec.fit_prior(model, train)
    own = counted if prior is None else prior
    data = codec.compress(model, own, x)
    if keep is not None:
        keep(model, data, own)
    frames = symbols.shape[0] * symbols.shape[1]
    information = sum(codec.information_bits(own, sequence) for sequence in symbols)
    packet_bits, packet_information = one_frame_packets(model, own, end_to_end(x, PACKET_FRAMES))
    return RatePoint(
        step,
        bits_per_frame(symbols),
        snr_db(x, codec.decompress(model, own, data)),
        digest(symbols.tobytes()),
        prior_bits=information / frames,
        stream_bits=8 * len(data) / frames,
        payload_bits=payload_bits(data, frames),
        packet_bits=packet_bits,
        packet_overhead=packet_bits - packet_information,
        payload_excess=payload_excess(model, own, x),
        bytes=digest(data),
        rate_weight=model.config.rate_weight,
        counted_payload_bits=None
        if prior is None
        else payload_bits(codec.compress(model, counted, x), frames),
    )


def payload_bits(data: bytes, frames: int) -> float:
    """A stream's bits a frame, its header and trailer (a stream's once) left out."""
    return 8 * (len(data) - codec.HEADER_BYTES - codec.TRAILER_BYTES) / frames


def one_frame_packets(
    model: frae.Backend, prior: codec.Prior, sequence: npt.NDArray[Any]
) -> tuple[float, float]:
    """``sequence`` (T, F) sent a frame a packet: the mean bits of the packets past the
    opening, and the mean information of the frames they carry under ``prior``."""
    sender = codec.Encoder(model, prior)
    later = [sender.push(sequence[t : t + 1]) for t in range(len(sequence))][1:]
    assert later, "a frame past the opening"
    assert model.config.code_step is not None, "a quantized model"
    symbols = codec.symbols(model.encode(sequence), model.config.code_step)
    information = codec.information_bits(prior, symbols[1:])
    return 8 * sum(map(len, later)) / len(later), information / len(later)


def payload_excess(model: frae.Backend, prior: codec.Prior, x: npt.NDArray[Any]) -> float:
    """The windows end to end as one sequence, compressed: its words over their information
    under ``prior``, less 1 (the header, length and CRC apart)."""
    data = codec.compress(model, prior, end_to_end(x))
    fixed = codec.HEADER_BYTES + codec.SEQUENCE_BYTES + codec.TRAILER_BYTES
    information = codec.information_bits(prior, codec.read(prior, data)[0])
    return 8 * (len(data) - fixed) / information - 1 if information else float("nan")


def quantized_after_training(
    backend: str,
    config: FRAEConfig,
    weights: dict[str, npt.NDArray[Any]],
    x: npt.NDArray[Any],
    train: npt.NDArray[Any],
    keep: Keep | None = None,
) -> list[RatePoint]:
    """The float model's ``weights`` in ``backend``'s quantized model at each of
    ``CODE_STEPS``, on ``x``, its prior fitted on ``train`` (each stream handed to ``keep``)."""
    return [
        rate_point(
            frae.create(backend, dataclasses.replace(config, code_step=step), weights=weights),
            x,
            train,
            keep,
        )
        for step in CODE_STEPS
    ]


def step_label(step: float) -> str:
    """A power of two as ``1`` or ``1/256``."""
    return f"{step:g}" if step >= 1 else f"1/{round(1 / step)}"
