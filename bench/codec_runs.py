"""What the codec's measurements time (``bench.worker``): a quantized model's sequence sent
as packets of bytes, a chunk of frames a packet (``frae.codec.Encoder``), and received
(``frae.codec.Decoder``); and the entropy coder's part of each alone, the same symbols coded
to the same words and back (``frae.codec.coder.SymbolCoder``), with no model and no packet.
Each run sends or receives the whole sequence from the zero state, its coder built anew, as
a fresh stream's would be."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from bench.records import CODEC, CODER, RECEIVER, SENDER
from frae.config import FRAEConfig

WEIGHTS_SEED, WEIGHTS_STDDEV = 1, 1.0
"""The codec's model holds weights N(0, 1) drawn from seed 1 (``codec_weights``)."""
PRIOR_SEED = 1
"""The prior is fitted on another sequence of the same shape, drawn from this seed."""


class CodecRun(NamedTuple):
    """One measurement of the codec, ready to run: the packets (``CODEC``) or the coder alone
    (``CODER``), at one side and chunk length."""

    operation: str
    side: str
    chunk: int
    run: Callable[[], object]


def codec_weights(config: FRAEConfig) -> dict[str, npt.NDArray[np.float32]]:
    """Weights whose codes spread over several symbols a frame, as a trained model's do: the
    initial weights' N(0, 0.05) keep every code of the default model on one symbol, which
    would time an entropy coder that has nothing to code."""
    rng = np.random.default_rng(WEIGHTS_SEED)
    return {
        name: rng.normal(0.0, WEIGHTS_STDDEV, shape).astype(np.float32)
        for name, shape in config.parameter_shapes().items()
    }


def along_time(sequence: npt.NDArray[Any], chunk: int) -> list[npt.NDArray[Any]]:
    """``sequence`` (B, T, ·) cut along T into chunks of ``chunk`` frames, the last shorter."""
    steps = sequence.shape[1]
    return [np.ascontiguousarray(sequence[:, at : at + chunk]) for at in range(0, steps, chunk)]


def codec_runs(
    model: Any, x: npt.NDArray[np.float32], chunks: tuple[int, ...]
) -> Iterator[CodecRun]:
    """Each side at each chunk length, through packets and through the coder alone, on
    ``model``'s symbols of ``x`` (B, T, F) under a prior of another sequence's."""
    from frae import codec
    from frae.data import multi_sine

    batch, steps, features = x.shape
    fitted_on = multi_sine(batch=batch, steps=steps, features=features, seed=PRIOR_SEED)
    prior = codec.fit_prior(model, fitted_on)
    values = codec.symbols(model.encode(x), prior.step)
    for chunk in chunks:
        send = _sending(model, prior, along_time(x, chunk))
        packets = send()
        yield CodecRun(CODEC, SENDER, chunk, send)
        yield CodecRun(CODEC, RECEIVER, chunk, _receiving(model, prior, packets))
        yield CodecRun(CODER, SENDER, chunk, _coding(prior, along_time(values, chunk)))
        yield CodecRun(CODER, RECEIVER, chunk, _reading(prior, packets))


def _sending(model: Any, prior: Any, pieces: list[npt.NDArray[Any]]) -> Callable[[], list[bytes]]:
    from frae.codec import Encoder

    def send() -> list[bytes]:
        sender = Encoder(model, prior)
        return [sender.push(piece) for piece in pieces]

    return send


def _receiving(model: Any, prior: Any, packets: list[bytes]) -> Callable[[], None]:
    from frae.codec import Decoder

    def receive() -> None:
        receiver = Decoder(model, prior)
        for packet in packets:
            receiver.push(packet)

    return receive


def _coding(prior: Any, pieces: list[npt.NDArray[Any]]) -> Callable[[], None]:
    """Each piece's symbols (B, t, L) to words, a sequence at a time, as ``Encoder.push``."""
    from frae.codec.coder import SymbolCoder

    def code() -> None:
        coder = SymbolCoder(prior)
        for piece in pieces:
            for sequence in piece:
                coder.encode(sequence)

    return code


def _reading(prior: Any, packets: list[bytes]) -> Callable[[], None]:
    """Each packet's words to symbols, as ``Decoder.push``: the packets unpacked first."""
    from frae.codec.byte_format import unpack_packet
    from frae.codec.coder import SymbolCoder

    header, sealed = None, []
    for packet in packets:
        header, _, frames, words = unpack_packet(packet, header)
        sealed.append((frames, words))

    def read() -> None:
        coder = SymbolCoder(prior)
        for frames, words in sealed:
            for sequence in words:
                coder.decode(sequence, frames)

    return read
