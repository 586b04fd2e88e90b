"""Codec mutants (the contract's "Coding: the model as a codec"): the float32 reference with a
codec of its own (``codec``, which the kit takes in place of ``frae.codec``), one realistic
mistake each (see ``parity_tests.mutants``)."""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any
from unittest import mock

import numpy as np

from frae import codec
from frae.codec import byte_format, coder, compression, packets
from parity_tests.mutants import Float32Reference

Patch = tuple[Any, str, Any]
"""(module, attribute, replacement) while a call of the mutant codec lasts."""
READING = ("decompress", "read")
"""The calls of the receiving side."""


def codec_with(
    *patches: Patch,
    calls: tuple[str, ...] = ("compress", *READING),
    encoder: type = codec.Encoder,
    decoder: type = codec.Decoder,
) -> SimpleNamespace:
    """``frae.codec``'s calls, ``calls`` among them each made with ``patches`` in place."""

    @contextlib.contextmanager
    def patched() -> Iterator[None]:
        with contextlib.ExitStack() as stack:
            for module, name, value in patches:
                stack.enter_context(mock.patch.object(module, name, value))
            yield

    def wrap(function: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(function)
        def call(*args: Any, **kwargs: Any) -> Any:
            with patched():
                return function(*args, **kwargs)

        return call

    made = {name: getattr(codec, name) for name in ("compress", *READING)}
    made |= {name: wrap(made[name]) for name in calls}
    return SimpleNamespace(**made, Encoder=encoder, Decoder=decoder)


class _FloatModels(coder.SymbolCoder):
    """Each table's model from its probabilities f / 2^P, as floats: constriction quantizes
    them again, to slots that are not the table's."""

    def __init__(self, prior: codec.Prior) -> None:
        super().__init__(prior)
        import constriction

        probabilities = prior.frequencies / float(2**prior.precision)
        model = constriction.stream.model
        self.tables = [model.Categorical(row, perfect=False) for row in probabilities]


class PriorRebuiltFromFloats(Float32Reference):
    """The receiver rebuilds each table's model from the prior's probabilities as floats,
    the sender from its integers: the two coders part at the first symbol."""

    breaks = "coding"
    codec = codec_with((compression, "SymbolCoder", _FloatModels), calls=READING)


def _crc_unchecked(data: bytes) -> None:
    """The CRC-32 read and never compared."""


class CrcUnchecked(Float32Reference):
    """The CRC-32 is written but never read: a flipped bit in the coded bytes decodes
    silently to other symbols."""

    breaks = "hostile_bytes"
    codec = codec_with((byte_format, "check_crc", _crc_unchecked))


class ModelDigestUnchecked(Float32Reference):
    """decompress never compares the stream's model digest with the model's: another
    model's bytes decode to a signal no sender sent."""

    breaks = "hostile_bytes"
    codec = codec_with((compression, "check_model_digest", lambda header, model: None))


class _LittleEndian(coder.SymbolCoder):
    """The coder's number written and read lowest byte first."""

    def encode(self, values: Any) -> bytes:
        return super().encode(values)[::-1]

    def decode(self, data: bytes, frames: int) -> Any:
        return super().decode(bytes(data)[::-1], frames)


class EndingWrittenLittleEndian(Float32Reference):
    """The coder's bytes, a big-endian number, written lowest byte first (and read so): its
    own bytes round-trip, and no other implementation reads them."""

    breaks = "coding_matrix"
    codec = codec_with((compression, "SymbolCoder", _LittleEndian))


class _Forgetful(codec.Decoder):
    def push(self, packet: bytes) -> np.ndarray:
        frames = super().push(packet)
        self.state = None
        return frames


class PacketStateDropped(Float32Reference):
    """The receiver starts every packet from the zero state: a split stream drifts from the
    sender's from the second packet on."""

    breaks = "packets"
    codec = codec_with(decoder=_Forgetful)


def _whole_words(encoder: Any) -> bytes:
    """constriction's own seal: whole 32-bit words, big-endian, open for more words."""
    return encoder.get_compressed().astype(">u4").tobytes()


class _WholeWordsEncoder(codec.Encoder):
    def push(self, chunk: Any) -> bytes:
        with mock.patch.object(packets, "ended", _whole_words):
            return super().push(chunk)


class SealedInWholeWords(Float32Reference):
    """Packets end with the coder's seal of one or two whole words, which decodes just as
    well: some 17 bits of ending a packet where the shortest takes about 3."""

    breaks = "packet_overhead"
    codec = codec_with(encoder=_WholeWordsEncoder)


class _GapRefused(codec.Decoder):
    def push(self, packet: bytes) -> np.ndarray:
        number = byte_format.unpack_packet(bytes(packet)).number
        if self.header is not None and number != self.packets:
            raise ValueError(f"packet {number} arrived where packet {self.packets} was due")
        return super().push(packet)


class GapRefused(Float32Reference):
    """The receiver refuses a packet out of order: after one lost packet, no packet is ever
    decoded again."""

    breaks = "concealment"
    codec = codec_with(decoder=_GapRefused)


class _RefreshIgnored(codec.Decoder):
    def _state_of(self, values: Any, one: bool) -> Any:
        return self.state


class RefreshIgnored(Float32Reference):
    """The receiver reads a refresh's state and keeps its own: after a loss it never comes
    back in step with the sender."""

    breaks = "refresh"
    codec = codec_with(decoder=_RefreshIgnored)


MUTANTS = [
    PriorRebuiltFromFloats,
    CrcUnchecked,
    ModelDigestUnchecked,
    EndingWrittenLittleEndian,
    PacketStateDropped,
    SealedInWholeWords,
    GapRefused,
    RefreshIgnored,
]
