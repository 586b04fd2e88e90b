"""The codec's bytes (docs/format.md specifies them field by field): a whole signal
(``pack``, ``unpack``) and real-time packets (``pack_packet``, ``unpack_packet``).

A whole signal, format 2:

    header      magic "FRAC", version, k (Δ = 2^−k), flags (bit 0: one sequence, no batch
                axis), L, B, T, the model's digest, the prior's digest   (HEADER_BYTES)
    B times     the sequence's coded length in bytes, then its bytes    (SEQUENCE_BYTES + bytes)
    trailer     CRC-32 of every byte before it                          (TRAILER_BYTES)

A packet: one byte (its kind, its number modulo ``NUMBERS``, its frame count), a count that
follows where the byte cannot hold it, the stream's parameters in an opening packet
(``OPENING_BYTES``), then the coder's bytes for what it carries: no length, number or
checksum of its own; boundaries and integrity are the transport's.

Fields are little-endian; the coder's bytes are a big-endian number. Each version read is one
entry of ``READERS``; a stream holds at most ``MAX_STREAM_SYMBOLS`` symbols (B·T·L), and a
header that declares more, or more sequences than the bytes hold, is refused before anything
is allocated; every other fault is a ``ValueError`` that says what it is.
"""

from __future__ import annotations

import hashlib
import json
import struct
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np
import numpy.typing as npt

from frae.codec.coder import SymbolCoder, decode_words
from frae.codec.prior import Prior

MAGIC = b"FRAC"
VERSION = 2
_HEADER = struct.Struct("<4sBBBHII16s16s")
_LENGTH = struct.Struct("<I")
_CRC = struct.Struct("<I")
_OPENING = struct.Struct("<BBBHH16s16s")
HEADER_BYTES = _HEADER.size
"""The fixed bytes of a stream before its first sequence."""
SEQUENCE_BYTES = _LENGTH.size
"""The fixed bytes of each sequence beside its coded bytes (its length)."""
TRAILER_BYTES = _CRC.size
"""The CRC-32 that ends a stream."""
MAX_STREAM_SYMBOLS = 2**31
"""The most symbols (B·T·L) one stream holds."""
ONE_SEQUENCE = 1
"""The flag of a stream made from one sequence (T, F), which decompresses to that layout."""
MAX_CODE_EXPONENT = 14
"""The largest k of Δ = 2^−k a header may declare."""

FRAMES, REFRESH, OPENING = 0, 1, 2
"""A packet's kinds: frames; a refresh (the sender's feedback state, then frames); the
stream's opening (its parameters, then frames). Kind 3 is refused."""
KINDS = {FRAMES: "frames", REFRESH: "refresh", OPENING: "opening"}
NUMBERS = 16
"""A packet's number is counted modulo this: a gap of up to 15 packets is seen."""
PACKET_BYTES = 1
"""The fixed bytes of a packet beside its coder's bytes (its first byte)."""
OPENING_BYTES = _OPENING.size
"""The stream's parameters an opening packet carries after its first byte."""
MAX_PACKET_FRAMES = 2**12
"""The most frames one packet carries."""
MAX_PACKET_SYMBOLS = 2**16
"""The most symbols (B·t·L) one packet carries: a packet's work, and a gap's (at most 15 such
packets concealed), stays bounded whatever the opening declared."""
REFRESH_STEP = 2**-10
"""The grid of a refresh's state: each value ``clip(rint(s / step), −Q, Q)``, coded in 16 bits
as an escaped symbol's value is (states within ±32 are kept to 2^−11)."""
_FRAMES_IN_BYTE = 3
"""Frame counts 1 to 3 are held in the first byte; a code of 3 means a count follows."""


@dataclass(frozen=True)
class Header:
    """What a stream says about itself, before its sequences (T = 0 in an opening packet)."""

    code_exponent: int
    flags: int
    latent_dim: int
    sequences: int
    frames: int
    model_digest: bytes
    prior_digest: bytes


def digest(*parts: bytes) -> bytes:
    """A 16-byte BLAKE2b digest of ``parts`` (each length-prefixed, so no two splits agree)."""
    hasher = hashlib.blake2b(digest_size=16)
    for part in parts:
        hasher.update(len(part).to_bytes(8, "little") + part)
    return hasher.digest()


TRAINING_ONLY_FIELDS = ("rate_weight",)
"""Config fields that decoding never reads, left out of the model digest with the learned
prior's parameters: a model trained for its bits and the same weights without the rate term
make and read the same bytes."""


def config_json(config: Any) -> str:
    """The config as the model digest's first part: its fields but ``TRAINING_ONLY_FIELDS``,
    as JSON with sorted keys."""
    fields = {k: v for k, v in config.to_dict().items() if k not in TRAINING_ONLY_FIELDS}
    return json.dumps(fields, sort_keys=True)


def model_digest(config: Any, weights: dict[str, Any]) -> bytes:
    """The digest of a config and its canonical weights, as float32 in canonical order, both
    without what only training reads (``TRAINING_ONLY_FIELDS``, the prior's parameters)."""
    layout = config_json(config).encode()
    arrays = [
        np.ascontiguousarray(weights[name], "<f4").tobytes()
        for name in config.parameter_shapes()
        if name not in config.prior_parameters
    ]
    return digest(layout, *arrays)


def prior_digest(prior: Prior) -> bytes:
    """The digest of a prior's step, precision and tables."""
    scalars = struct.pack("<dB", prior.step, prior.precision)
    shape = struct.pack("<II", *prior.frequencies.shape)
    lo, tables = prior.lo.astype("<i4").tobytes(), prior.frequencies.astype("<u4").tobytes()
    return digest(scalars, shape, lo, tables)


def _check_header(header: Header) -> None:
    """The limits every header keeps, whichever form carries it."""
    if header.code_exponent > MAX_CODE_EXPONENT or header.latent_dim < 1:
        raise ValueError(f"the stream's header is malformed: {header}")
    if header.flags & ~ONE_SEQUENCE or header.sequences < 1:
        raise ValueError(f"the stream's header is malformed: {header}")
    if header.flags & ONE_SEQUENCE and header.sequences != 1:
        raise ValueError(f"a one-sequence stream declares {header.sequences} sequences")
    symbols = header.sequences * header.frames * header.latent_dim
    if symbols > MAX_STREAM_SYMBOLS:
        raise ValueError(f"the stream declares {symbols} symbols, beyond {MAX_STREAM_SYMBOLS}")


# The whole signal.


def pack(header: Header, sequences: list[bytes]) -> bytes:
    """A stream of ``sequences`` (each its coded bytes) under ``header``, format 2."""
    fields = (header.code_exponent, header.flags, header.latent_dim, header.sequences)
    body = _HEADER.pack(
        MAGIC, VERSION, *fields, header.frames, header.model_digest, header.prior_digest
    )
    body += b"".join(_LENGTH.pack(len(coded)) + coded for coded in sequences)
    return body + _CRC.pack(zlib.crc32(body))


Decode = Callable[[SymbolCoder, bytes, int], npt.NDArray[np.int32]]
"""How a version's sequence of coded bytes becomes its ``frames`` × L symbols."""


def _decode_shortest(coder: SymbolCoder, data: bytes, frames: int) -> npt.NDArray[np.int32]:
    """Format 2: the symbols, whose coding must be exactly ``data``: the shortest ending, so
    that no two byte strings stand for one sequence."""
    symbols = coder.decode(data, frames)
    if coder.encode(symbols) != data:
        raise ValueError(f"the coded bytes are not the shortest coding of {frames} frames")
    return symbols


READERS: dict[int, Decode] = {1: decode_words, 2: _decode_shortest}
"""Each version this code reads: how its sequences decode (format 1: whole 32-bit words,
little-endian; format 2: bytes ended at the shortest length). The header, lengths and CRC
are the same in both."""


@dataclass(frozen=True)
class Stream:
    """A whole signal's bytes, read: its header, each sequence's coded bytes, and how its
    version decodes them."""

    header: Header
    sequences: list[bytes]
    decode: Decode


def unpack(data: bytes) -> Stream:
    """A stream's header, its sequences' coded bytes and its version's decoder, every check
    passed."""
    least = HEADER_BYTES + TRAILER_BYTES
    if len(data) < least:
        raise ValueError(f"an FRAE stream is at least {least} bytes, got {len(data)}")
    magic, version = struct.unpack_from("<4sB", data)
    if magic != MAGIC:
        raise ValueError(f"not an FRAE stream: magic {magic!r}, expected {MAGIC!r}")
    if version not in READERS:
        raise ValueError(f"FRAE stream format {version}: this version reads {sorted(READERS)}")
    check_crc(data)
    header = Header(*_HEADER.unpack_from(data)[2:])
    _check_header(header)
    if header.frames < 1:
        raise ValueError("the stream declares no frames (T = 0)")
    room = (len(data) - HEADER_BYTES - TRAILER_BYTES) // SEQUENCE_BYTES
    if header.sequences > room:
        raise ValueError(f"the stream declares {header.sequences} sequences in {len(data)} bytes")
    return Stream(header, _sequences(data, header.sequences), READERS[version])


def check_crc(data: bytes) -> None:
    """A ``ValueError`` unless the stream's last 4 bytes are the CRC-32 of the others."""
    (stored,) = _CRC.unpack_from(data, len(data) - TRAILER_BYTES)
    if zlib.crc32(data[:-TRAILER_BYTES]) != stored:
        raise ValueError("the CRC-32 does not match: the bytes are damaged or cut")


def _sequences(data: bytes, count: int) -> list[bytes]:
    sequences, offset, end = [], HEADER_BYTES, len(data) - TRAILER_BYTES
    for index in range(count):
        if offset + SEQUENCE_BYTES > end:
            raise ValueError(f"sequence {index}'s length lies past the end of the stream")
        (length,) = _LENGTH.unpack_from(data, offset)
        offset += SEQUENCE_BYTES
        if length > end - offset:
            raise ValueError(f"sequence {index}'s length {length} runs past the data")
        sequences.append(data[offset : offset + length])
        offset += length
    if offset != end:
        raise ValueError(f"{end - offset} bytes follow the last sequence")
    return sequences


# Packets.


class PacketHead(NamedTuple):
    """What a packet's first bytes say: its kind, number (modulo ``NUMBERS``) and frame
    count, the stream's parameters in an opening packet, and where its coder's bytes begin."""

    kind: int
    number: int
    frames: int
    opening: Header | None
    start: int


def pack_packet(
    kind: int, number: int, frames: int, coded: bytes, opening: Header | None = None
) -> bytes:
    """A packet of ``kind``, number ``number`` (taken modulo ``NUMBERS``), ``frames`` frames
    and the coder's bytes ``coded``; an opening packet carries the stream's ``opening``."""
    if not 1 <= frames <= MAX_PACKET_FRAMES:
        raise ValueError(f"a packet carries 1 to {MAX_PACKET_FRAMES} frames, got {frames}")
    code = min(frames, _FRAMES_IN_BYTE + 1) - 1
    head = bytes([kind << 6 | number % NUMBERS << 2 | code])
    if code == _FRAMES_IN_BYTE:
        head += _leb128(frames - _FRAMES_IN_BYTE - 1)
    if kind == OPENING:
        assert opening is not None
        if opening.sequences > 0xFFFF:
            raise ValueError(f"packets carry at most 65535 sequences, got {opening.sequences}")
        fields = (opening.code_exponent, opening.flags, opening.latent_dim, opening.sequences)
        head += _OPENING.pack(VERSION, *fields, opening.model_digest, opening.prior_digest)
    return head + coded


def unpack_packet(data: bytes) -> PacketHead:
    """A packet's head, every check of its own passed (the stream's, by the receiver)."""
    if not data:
        raise ValueError("an empty packet")
    kind, number, code = data[0] >> 6, data[0] >> 2 & (NUMBERS - 1), data[0] & 3
    if kind not in KINDS:
        raise ValueError(f"a packet of kind {kind}: kinds are {KINDS}")
    frames, start = code + 1, 1
    if code == _FRAMES_IN_BYTE:
        extra, start = _read_leb128(data, start)
        frames += extra
    if frames > MAX_PACKET_FRAMES:
        raise ValueError(f"a packet declares {frames} frames, beyond {MAX_PACKET_FRAMES}")
    opening = None
    if kind == OPENING:
        if len(data) < start + OPENING_BYTES:
            raise ValueError(f"an opening packet of {len(data)} bytes is cut short")
        version, *fields, model, prior = _OPENING.unpack_from(data, start)
        if version != VERSION:
            raise ValueError(f"FRAE packets of format {version}: this version sends {VERSION}")
        opening = Header(*fields, 0, model, prior)  # type: ignore[call-arg]
        _check_header(opening)
        start += OPENING_BYTES
    return PacketHead(kind, number, frames, opening, start)


def check_packet_symbols(opening: Header, frames: int) -> None:
    """A ``ValueError`` where ``frames`` frames of the stream's B sequences of L symbols pass
    ``MAX_PACKET_SYMBOLS``."""
    symbols = opening.sequences * frames * opening.latent_dim
    if symbols > MAX_PACKET_SYMBOLS:
        raise ValueError(
            f"a packet of {frames} frames of {opening.sequences} sequences holds {symbols} "
            f"symbols, beyond {MAX_PACKET_SYMBOLS}"
        )


def _leb128(value: int) -> bytes:
    """``value`` as unsigned LEB128: 7 bits a byte, the lowest first, the high bit set on
    every byte but the last."""
    out = bytearray()
    while True:
        low, value = value & 0x7F, value >> 7
        out.append(low | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _read_leb128(data: bytes, offset: int) -> tuple[int, int]:
    """The unsigned LEB128 at ``offset`` (at most 3 bytes) and the offset after it."""
    value = 0
    for index in range(3):
        if offset + index >= len(data):
            raise ValueError("a packet's frame count runs past its end")
        byte = data[offset + index]
        value |= (byte & 0x7F) << 7 * index
        if not byte & 0x80:
            return value, offset + index + 1
    raise ValueError("a packet's frame count is longer than 3 bytes")
