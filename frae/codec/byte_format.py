"""The bytes of a compressed signal, format 1 (the contract's "Coding: the model as a codec").

    header      magic "FRAC", version, k (Δ = 2^−k), flags (bit 0: one sequence, no batch
                axis), L, B, T, the model's digest, the prior's digest   (HEADER_BYTES)
    B times     the sequence's length in bytes, then its words           (SEQUENCE_BYTES + words)
    trailer     CRC-32 of every byte before it                          (TRAILER_BYTES)

A stream sent as packets, a chunk of frames each (``frae.codec.Encoder``): the first packet
opens with the header (T = 0), every packet then holds its index and its frame count
(``PACKET_BYTES``), each sequence's length and words, and a CRC-32 of its own bytes.

Little-endian throughout. A stream holds at most ``MAX_STREAM_SYMBOLS`` symbols (B·T·L): a
header that declares more, or more sequences than the bytes can hold, is refused before
anything is allocated; every other fault is a ``ValueError`` that says what it is.
"""

from __future__ import annotations

import hashlib
import json
import struct
import zlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from frae.codec.prior import Prior

MAGIC = b"FRAC"
VERSION = 1
_HEADER = struct.Struct("<4sBBBHII16s16s")
_LENGTH = struct.Struct("<I")
_CRC = struct.Struct("<I")
_PACKET = struct.Struct("<II")
HEADER_BYTES = _HEADER.size
"""The fixed bytes of a stream before its first sequence."""
SEQUENCE_BYTES = _LENGTH.size
"""The fixed bytes of each sequence beside its words (its length)."""
TRAILER_BYTES = _CRC.size
"""The CRC-32 that ends a stream."""
PACKET_BYTES = _PACKET.size
"""The fixed bytes of each packet beside its sequences and CRC (its index and frame count)."""
MAX_STREAM_SYMBOLS = 2**31
"""The most symbols (B·T·L) one stream holds."""
ONE_SEQUENCE = 1
"""The flag of a stream made from one sequence (T, F), which decompresses to that layout."""


@dataclass(frozen=True)
class Header:
    """What a stream says about itself, before its sequences."""

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


def model_digest(config: Any, weights: dict[str, Any]) -> bytes:
    """The digest of a config and its canonical weights, as float32 in canonical order."""
    layout = json.dumps(config.to_dict(), sort_keys=True).encode()
    arrays = [
        np.ascontiguousarray(weights[name], "<f4").tobytes() for name in config.parameter_shapes()
    ]
    return digest(layout, *arrays)


def prior_digest(prior: Prior) -> bytes:
    """The digest of a prior's step, precision and tables."""
    scalars = struct.pack("<dB", prior.step, prior.precision)
    shape = struct.pack("<II", *prior.frequencies.shape)
    lo, tables = prior.lo.astype("<i4").tobytes(), prior.frequencies.astype("<u4").tobytes()
    return digest(scalars, shape, lo, tables)


def _header_bytes(header: Header) -> bytes:
    fields = (header.code_exponent, header.flags, header.latent_dim, header.sequences)
    return _HEADER.pack(
        MAGIC, VERSION, *fields, header.frames, header.model_digest, header.prior_digest
    )


def _sealed(body: bytes, sequences: list[bytes]) -> bytes:
    body += b"".join(_LENGTH.pack(len(words)) + words for words in sequences)
    return body + _CRC.pack(zlib.crc32(body))


def pack(header: Header, sequences: list[bytes]) -> bytes:
    """A stream of ``sequences`` (each its words) under ``header``."""
    return _sealed(_header_bytes(header), sequences)


def pack_packet(header: Header | None, index: int, frames: int, sequences: list[bytes]) -> bytes:
    """Packet ``index`` of ``frames`` frames; the first (``header`` given) opens the stream."""
    opening = b"" if header is None else _header_bytes(header)
    return _sealed(opening + _PACKET.pack(index, frames), sequences)


def _opened(data: bytes, least: int) -> None:
    """The checks every stream and packet passes first: its size, magic, version and CRC."""
    if len(data) < least:
        raise ValueError(f"an FRAE stream is at least {least} bytes, got {len(data)}")
    magic, version = struct.unpack_from("<4sB", data)
    if least >= HEADER_BYTES and magic != MAGIC:
        raise ValueError(f"not an FRAE stream: magic {magic!r}, expected {MAGIC!r}")
    if least >= HEADER_BYTES and version != VERSION:
        raise ValueError(f"FRAE stream format {version}: this version reads format {VERSION}")
    (stored,) = _CRC.unpack_from(data, len(data) - TRAILER_BYTES)
    if zlib.crc32(data[:-TRAILER_BYTES]) != stored:
        raise ValueError("the CRC-32 does not match: the bytes are damaged or cut")


def unpack(data: bytes) -> tuple[Header, list[bytes]]:
    """A stream's header and each sequence's words, every check passed."""
    _opened(data, HEADER_BYTES + TRAILER_BYTES)
    header = Header(*_HEADER.unpack_from(data)[2:])
    _check_sizes(header, len(data))
    return header, _sequences(data, header, HEADER_BYTES)


def unpack_packet(data: bytes, header: Header | None) -> tuple[Header, int, int, list[bytes]]:
    """A packet's stream header (read from the packet when ``header`` is ``None``: the first
    packet), its index, frame count and each sequence's words, every check passed."""
    opening = HEADER_BYTES if header is None else 0
    _opened(data, opening + PACKET_BYTES + TRAILER_BYTES)
    if header is None:
        header = Header(*_HEADER.unpack_from(data)[2:])
        _check_sizes(header, len(data) - PACKET_BYTES)
    index, frames = _PACKET.unpack_from(data, opening)
    if header.sequences * frames * header.latent_dim > MAX_STREAM_SYMBOLS:
        raise ValueError(f"the packet declares {frames} frames, beyond the stream's limit")
    return header, index, frames, _sequences(data, header, opening + PACKET_BYTES)


def _check_sizes(header: Header, size: int) -> None:
    if header.code_exponent > 14 or header.latent_dim < 1 or header.flags & ~ONE_SEQUENCE:
        raise ValueError(f"the stream's header is malformed: {header}")
    symbols = header.sequences * header.frames * header.latent_dim
    if symbols > MAX_STREAM_SYMBOLS:
        raise ValueError(f"the stream declares {symbols} symbols, beyond {MAX_STREAM_SYMBOLS}")
    room = (size - HEADER_BYTES - TRAILER_BYTES) // SEQUENCE_BYTES
    if header.sequences > room or header.sequences < 1:
        raise ValueError(f"the stream declares {header.sequences} sequences in {size} bytes")
    if header.flags & ONE_SEQUENCE and header.sequences != 1:
        raise ValueError(f"a one-sequence stream declares {header.sequences} sequences")


def _sequences(data: bytes, header: Header, offset: int) -> list[bytes]:
    sequences, end = [], len(data) - TRAILER_BYTES
    for index in range(header.sequences):
        if offset + SEQUENCE_BYTES > end:
            raise ValueError(f"sequence {index}'s length lies past the end of the stream")
        (length,) = _LENGTH.unpack_from(data, offset)
        offset += SEQUENCE_BYTES
        if length > end - offset or length % 4:
            raise ValueError(f"sequence {index}'s length {length} runs past the data")
        sequences.append(data[offset : offset + length])
        offset += length
    if offset != end:
        raise ValueError(f"{end - offset} bytes follow the last sequence")
    return sequences
