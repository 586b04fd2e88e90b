"""What the codec's measurements time (``bench.worker``): a quantized model's sequence sent
as packets of bytes, a chunk of frames a packet (``frae.codec.Encoder``), and received
(``frae.codec.Decoder``); the entropy coder alone, the same symbols coded to the same words
and back (``frae.codec.coder.SymbolCoder``), with no model and no packet; and the codec with
its coder bypassed, each call of the coder answered with what it made (``Replay``): the codec
less the bypassed run is what the coder costs within it, where the model's work has taken the
caches the coder alone keeps warm. Each run sends or receives the whole sequence from the zero
state, its coder built anew, as a fresh stream's would be."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from bench.records import BYPASSED, CODEC, CODER, RECEIVER, SENDER
from frae.config import FRAEConfig

WEIGHTS_SEED, WEIGHTS_STDDEV = 1, 1.0
"""The codec's model holds weights N(0, 1) drawn from seed 1 (``codec_weights``)."""
PRIOR_SEED = 1
"""The prior is fitted on another sequence of the same shape, drawn from this seed."""


class CodecRun(NamedTuple):
    """One measurement of the codec, ready to run: the packets (``CODEC``), the coder alone
    (``CODER``) or the packets with the coder bypassed (``BYPASSED``), at one side and chunk
    length."""

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
        pieces = along_time(x, chunk)
        packets = _sending(model, prior, pieces)()
        words, decoded = _coded(prior, packets)
        yield CodecRun(CODEC, SENDER, chunk, _sending(model, prior, pieces))
        yield CodecRun(CODEC, RECEIVER, chunk, _receiving(model, prior, packets))
        yield CodecRun(CODER, SENDER, chunk, _coding(prior, along_time(values, chunk)))
        yield CodecRun(CODER, RECEIVER, chunk, _reading(prior, packets))
        yield CodecRun(BYPASSED, SENDER, chunk, _sending(model, prior, pieces, words))
        yield CodecRun(BYPASSED, RECEIVER, chunk, _receiving(model, prior, packets, decoded))


class Replay:
    """A coder that answers each call with the next of what the real one made, in order."""

    def __init__(self, made: list[Any]) -> None:
        self.next = iter(made).__next__

    def encode(self, values: Any) -> Any:
        return self.next()

    def decode(self, data: bytes, frames: int) -> Any:
        return self.next()


def _unpacked(packets: list[bytes]) -> list[tuple[int, list[bytes]]]:
    """Each packet's frame count and the words of each of its sequences."""
    from frae.codec.byte_format import unpack_packet

    header, sealed = None, []
    for packet in packets:
        header, _, frames, words = unpack_packet(packet, header)
        sealed.append((frames, words))
    return sealed


def _coded(prior: Any, packets: list[bytes]) -> tuple[list[bytes], list[npt.NDArray[Any]]]:
    """The words of every sequence of ``packets``, in order, and the symbols they decode to."""
    from frae.codec.coder import SymbolCoder

    coder, sealed = SymbolCoder(prior), _unpacked(packets)
    words = [sequence for _, sequences in sealed for sequence in sequences]
    decoded = [coder.decode(one, frames) for frames, sequences in sealed for one in sequences]
    return words, decoded


def _sending(
    model: Any, prior: Any, pieces: list[npt.NDArray[Any]], replayed: list[bytes] | None = None
) -> Callable[[], list[bytes]]:
    """An Encoder's run over ``pieces``; its coder bypassed where ``replayed`` gives the words."""
    from frae.codec import Encoder

    def send() -> list[bytes]:
        sender = Encoder(model, prior)
        if replayed is not None:
            sender.coder = Replay(replayed)  # type: ignore[assignment]
        return [sender.push(piece) for piece in pieces]

    return send


def _receiving(
    model: Any, prior: Any, packets: list[bytes], replayed: list[npt.NDArray[Any]] | None = None
) -> Callable[[], None]:
    """A Decoder's run over ``packets``; its coder bypassed where ``replayed`` gives the
    symbols."""
    from frae.codec import Decoder

    def receive() -> None:
        receiver = Decoder(model, prior)
        if replayed is not None:
            receiver.coder = Replay(replayed)  # type: ignore[assignment]
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
    from frae.codec.coder import SymbolCoder

    sealed = _unpacked(packets)

    def read() -> None:
        coder = SymbolCoder(prior)
        for frames, words in sealed:
            for sequence in words:
                coder.decode(sequence, frames)

    return read
