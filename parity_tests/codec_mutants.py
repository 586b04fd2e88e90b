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
from frae.codec import byte_format, coder, compression
from parity_tests.mutants import Float32Reference

Patch = tuple[Any, str, Any]
"""(module, attribute, replacement) while a call of the mutant codec lasts."""


def codec_with(*patches: Patch, decoder: type = codec.Decoder) -> SimpleNamespace:
    """``frae.codec``'s calls, each made with ``patches`` in place."""

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

    calls = {name: wrap(getattr(codec, name)) for name in ("compress", "decompress", "read")}
    return SimpleNamespace(**calls, Encoder=codec.Encoder, Decoder=decoder)


def _float_models(prior: codec.Prior) -> tuple[list[Any], Any]:
    """Each table's model from its probabilities f / 2^P, as floats: constriction quantizes
    them again, to slots that are not the table's."""
    import constriction

    model = constriction.stream.model
    probabilities = prior.frequencies / float(2**prior.precision)
    tables = [model.Categorical(row, perfect=False) for row in probabilities]
    return tables, model.Uniform(2**codec.ESCAPE_BITS)


def _decode_from_floats(prior: codec.Prior, data: bytes, frames: int) -> np.ndarray:
    with mock.patch.object(coder, "_models", _float_models):
        return coder.decode_symbols(prior, data, frames)


class PriorRebuiltFromFloats(Float32Reference):
    """The receiver rebuilds each table's model from the prior's probabilities as floats,
    the sender from its integers: the two coders part at the first symbol."""

    breaks = "coding"
    codec = codec_with((compression, "decode_symbols", _decode_from_floats))


def _opened_without_crc(data: bytes, least: int) -> None:
    if len(data) < least:
        raise ValueError(f"an FRAE stream is at least {least} bytes, got {len(data)}")


class CrcUnchecked(Float32Reference):
    """The CRC-32 is written but never read: a flipped bit in the words decodes silently to
    other symbols."""

    breaks = "hostile_bytes"
    codec = codec_with((byte_format, "_opened", _opened_without_crc))


class ModelDigestUnchecked(Float32Reference):
    """decompress never compares the stream's model digest with the model's: another
    model's bytes decode to a signal no sender sent."""

    breaks = "hostile_bytes"
    codec = codec_with((compression, "check_model_digest", lambda header, model: None))


def _swapped(data: bytes) -> bytes:
    return np.frombuffer(data, "<u4").byteswap().tobytes()


class BigEndianWords(Float32Reference):
    """The coder's 32-bit words written and read big-endian: its own bytes round-trip, and
    no other implementation reads them."""

    breaks = "coding_matrix"
    codec = codec_with(
        (compression, "encode_symbols", lambda *args: _swapped(coder.encode_symbols(*args))),
        (
            compression,
            "decode_symbols",
            lambda p, data, t: coder.decode_symbols(p, _swapped(data), t),
        ),
    )


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


MUTANTS = [
    PriorRebuiltFromFloats,
    CrcUnchecked,
    ModelDigestUnchecked,
    BigEndianWords,
    PacketStateDropped,
]
