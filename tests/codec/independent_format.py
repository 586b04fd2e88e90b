"""A reader and writer of FRAE's bytes written from docs/format.md alone, with no part of
``frae``: the digests, the range coder in plain Python integers (no constriction), a
sequence's coding order, the whole-signal format (versions 1 and 2) and the packets. The
tests hold it and frae's codec to the same vectors and to each other's bytes."""

from __future__ import annotations

import hashlib
import json
import struct
import zlib
from typing import Any

import numpy as np
import numpy.typing as npt

Q = 2**15 - 1
PRECISION = 24
UNIFORM = 256
"""The 16-bit uniform model's frequency of each value: 2^24 / 2^16."""
WORD = 2**32
STATE = 2**64
HEADER = struct.Struct("<4sBBBHII16s16s")
OPENING = struct.Struct("<BBBHH16s16s")
MAGIC = b"FRAC"
MAX_STREAM_SYMBOLS = 2**31
MAX_CODE_EXPONENT = 14
MAX_PACKET_FRAMES = 4096
KINDS = {"frames": 0, "refresh": 1, "opening": 2}
REFRESH_STEP = 2**-10

Symbols = npt.NDArray[np.int64]


# format.md, "What both ends share": digests.


def digest(*parts: bytes) -> bytes:
    """BLAKE2b-128 of each part after its length as a u64."""
    hasher = hashlib.blake2b(digest_size=16)
    for part in parts:
        hasher.update(struct.pack("<Q", len(part)) + part)
    return hasher.digest()


def parameter_names(config: dict[str, Any]) -> list[str]:
    """The canonical weights' names in the order of the contract's "Canonical parameters"."""
    layers = [f"encoder/dense_{i}" for i in range(len(config["encoder_units"]))]
    layers.append("encoder/latent")
    names = [f"{layer}/{part}" for layer in layers for part in ("kernel", "bias")]
    if config["feedback"] == "state":
        gru = ("kernel", "recurrent_kernel", "bias", "recurrent_bias")
        names += [f"decoder/gru/{part}" for part in gru]
    layers = [f"decoder/dense_{i}" for i in range(len(config["decoder_units"]))]
    layers.append("decoder/output")
    return names + [f"{layer}/{part}" for layer in layers for part in ("kernel", "bias")]


def model_digest(config: dict[str, Any], weights: dict[str, npt.NDArray[Any]]) -> bytes:
    layout = json.dumps(config, sort_keys=True).encode()
    arrays = [
        np.ascontiguousarray(weights[name], "<f4").tobytes() for name in parameter_names(config)
    ]
    return digest(layout, *arrays)


def prior_digest(prior: dict[str, Any]) -> bytes:
    frequencies = np.asarray(prior["frequencies"], "<u4")
    return digest(
        struct.pack("<dB", prior["step"], prior["precision"]),
        struct.pack("<II", *frequencies.shape),
        np.asarray(prior["lo"], "<i4").tobytes(),
        frequencies.tobytes(),
    )


def read_safetensors(data: bytes) -> dict[str, npt.NDArray[Any]]:
    """The float32 tensors of a safetensors file: a u64 header length, a JSON header naming
    each tensor's dtype, shape and byte range after the header, then the data."""
    (size,) = struct.unpack_from("<Q", data)
    header = json.loads(data[8 : 8 + size])
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        assert entry["dtype"] == "F32", entry
        begin, end = entry["data_offsets"]
        raw = data[8 + size + begin : 8 + size + end]
        tensors[name] = np.frombuffer(raw, "<f4").reshape(entry["shape"])
    return tensors


# format.md, "The range coder".


class Table:
    """A model's frequencies and cumulatives."""

    def __init__(self, frequencies: list[int]) -> None:
        assert sum(frequencies) == 2**PRECISION and min(frequencies) >= 1
        self.frequencies = frequencies
        self.cumulative = [0]
        for frequency in frequencies[:-1]:
            self.cumulative.append(self.cumulative[-1] + frequency)

    def find(self, r: int) -> int:
        """The value whose slot holds ``r``: the last cumulative at most ``r``."""
        low, high = 0, len(self.cumulative) - 1
        while low < high:
            middle = (low + high + 1) // 2
            if self.cumulative[middle] <= r:
                low = middle
            else:
                high = middle - 1
        return low


class Encoder:
    """X = (emitted words)·2^64 + lower, kept exactly: a carry needs no other care."""

    def __init__(self) -> None:
        self.x, self.range, self.words = 0, STATE - 1, 0

    def encode(self, cumulative: int, frequency: int) -> None:
        scale = self.range >> PRECISION
        self.x += scale * cumulative
        self.range = scale * frequency
        if self.range < WORD:
            self.x, self.range, self.words = self.x * WORD, self.range * WORD, self.words + 1

    def ended(self) -> bytes:
        """The shortest bytes whose value, padded with zeros, lies in [X, X + range)."""
        size = 4 * self.words + 8
        for length in range(size + 1):
            unit = 8 * (size - length)
            value = -(-self.x >> unit)
            if value << unit < self.x + self.range:
                return value.to_bytes(length, "big")
        raise AssertionError("the interval holds its lower end")


class Decoder:
    """The decoder of format.md's "The range coder" over ``data`` followed by zeros."""

    def __init__(self, data: bytes) -> None:
        self.data, self.position = data, 8
        self.point = int.from_bytes(data[:8].ljust(8, b"\0"), "big")
        self.lower, self.range = 0, STATE - 1

    def decode(self, table: Table) -> int:
        scale = self.range >> PRECISION
        r = (self.point - self.lower) % STATE // scale
        if r >= 2**PRECISION:
            raise ValueError("the coder's bytes decode outside every slot")
        value = table.find(r)
        self.lower = (self.lower + scale * table.cumulative[value]) % STATE
        self.range = scale * table.frequencies[value]
        if self.range < WORD:
            word = self.data[self.position : self.position + 4].ljust(4, b"\0")
            self.position += 4
            self.lower, self.range = self.lower * WORD % STATE, self.range * WORD
            self.point = self.point * WORD % STATE | int.from_bytes(word, "big")
        return value

    def exhausted(self) -> bool:
        """Format 1's end: every word read, and the point close above ``lower``."""
        close = (self.point - self.lower) % STATE < 2**33 - 1
        return self.position >= len(self.data) and (self.range == STATE - 1 or close)


UNIFORM_TABLE = Table([UNIFORM] * 2**16)


# format.md, "A sequence's symbols in the coder".


class Prior:
    """The prior's tables, with its digest."""

    def __init__(self, prior: dict[str, Any]) -> None:
        self.step, self.lo = prior["step"], list(prior["lo"])
        self.tables = [Table(list(row)) for row in prior["frequencies"]]
        self.escape = len(prior["frequencies"][0]) - 1
        self.digest = prior_digest(prior)


def write_values(encoder: Encoder, values: npt.ArrayLike) -> None:
    """Integers within ±Q, each v + Q under the 16-bit uniform model."""
    for value in np.asarray(values).ravel().tolist():
        assert -Q <= value <= Q
        encoder.encode(UNIFORM * (value + Q), UNIFORM)


def read_values(decoder: Decoder, count: int) -> list[int]:
    values = [decoder.decode(UNIFORM_TABLE) - Q for _ in range(count)]
    if any(value > Q for value in values):
        raise ValueError("an escaped value decodes to Q + 1")
    return values


def write_sequence(encoder: Encoder, prior: Prior, symbols: npt.ArrayLike) -> None:
    """A sequence (T, L): dimension by dimension, its T columns, then its escaped values."""
    for lo, table, column in zip(
        prior.lo, prior.tables, np.asarray(symbols).T.tolist(), strict=True
    ):
        escaped = []
        for symbol in column:
            index = symbol - lo if 0 <= symbol - lo < prior.escape else prior.escape
            encoder.encode(table.cumulative[index], table.frequencies[index])
            if index == prior.escape:
                escaped.append(symbol)
        write_values(encoder, escaped)


def read_sequence(decoder: Decoder, prior: Prior, frames: int) -> Symbols:
    columns = []
    for lo, table in zip(prior.lo, prior.tables, strict=True):
        column = [decoder.decode(table) for _ in range(frames)]
        escaped = iter(read_values(decoder, column.count(prior.escape)))
        columns.append([next(escaped) if c == prior.escape else c + lo for c in column])
    return np.array(columns, np.int64).reshape(len(prior.lo), frames).T


def code(prior: Prior, sequence: npt.ArrayLike) -> bytes:
    encoder = Encoder()
    write_sequence(encoder, prior, sequence)
    return encoder.ended()


# Sections 5 and 6: a whole signal.


def check_header(header: dict[str, Any]) -> None:
    """The limits of format.md's "A whole signal", check 5, shared by the opening packet."""
    if header["k"] > MAX_CODE_EXPONENT or header["L"] < 1 or header["B"] < 1:
        raise ValueError(f"a malformed header: {header}")
    if header["flags"] & ~1 or (header["flags"] & 1 and header["B"] != 1):
        raise ValueError(f"a malformed header: {header}")
    if header["B"] * header.get("T", 0) * header["L"] > MAX_STREAM_SYMBOLS:
        raise ValueError(f"a header of more than {MAX_STREAM_SYMBOLS} symbols")


def write_stream(header: dict[str, Any], prior: Prior, symbols: npt.ArrayLike) -> bytes:
    """Format 2: ``header`` (k, flags, model digest) and the symbols (B, T, L)."""
    sequences = np.asarray(symbols)
    fields = (header["k"], header["flags"], sequences.shape[2], *sequences.shape[:2])
    body = HEADER.pack(MAGIC, 2, *fields, header["model"], prior.digest)
    for sequence in sequences:
        coded = code(prior, sequence)
        body += struct.pack("<I", len(coded)) + coded
    return body + struct.pack("<I", zlib.crc32(body))


def read_words(prior: Prior, data: bytes, frames: int) -> Symbols:
    """Version 1: constriction's sealed words, little-endian."""
    if len(data) % 4:
        raise ValueError("format 1 codes whole 32-bit words")
    words = b"".join(data[i : i + 4][::-1] for i in range(0, len(data), 4))
    decoder = Decoder(words)
    symbols = read_sequence(decoder, prior, frames)
    if not decoder.exhausted():
        raise ValueError("the words do not end with the frames declared")
    return symbols


def read_shortest(prior: Prior, data: bytes, frames: int) -> Symbols:
    """Version 2: the shortest ending, which must be the writer's own."""
    symbols = read_sequence(Decoder(data), prior, frames)
    if code(prior, symbols) != data:
        raise ValueError("not the shortest coding of its symbols")
    return symbols


READERS = {1: read_words, 2: read_shortest}


def read_stream(data: bytes, prior: Prior) -> tuple[dict[str, Any], Symbols]:
    """A whole signal's header and symbols (B, T, L), every check of format.md's "A whole
    signal" in its order."""
    if len(data) < HEADER.size + 4:
        raise ValueError("too short")
    if data[:4] != MAGIC:
        raise ValueError("not FRAC")
    if data[4] not in READERS:
        raise ValueError(f"version {data[4]}")
    if zlib.crc32(data[:-4]) != struct.unpack_from("<I", data, len(data) - 4)[0]:
        raise ValueError("CRC-32")
    names = ("magic", "version", "k", "flags", "L", "B", "T", "model", "prior")
    header = dict(zip(names, HEADER.unpack_from(data), strict=True))
    check_header(header)
    if header["B"] > (len(data) - HEADER.size - 4) // 4:
        raise ValueError("more sequences than the bytes hold")
    sequences, offset, end = [], HEADER.size, len(data) - 4
    for _ in range(header["B"]):
        if offset + 4 > end:
            raise ValueError("a length past the end")
        (length,) = struct.unpack_from("<I", data, offset)
        if length > end - offset - 4:
            raise ValueError("a length past the data")
        sequences.append(data[offset + 4 : offset + 4 + length])
        offset += 4 + length
    if offset != end:
        raise ValueError("bytes after the last sequence")
    if header["prior"] != prior.digest or 2.0 ** -header["k"] != prior.step:
        raise ValueError("another prior")
    if header["L"] != len(prior.lo):
        raise ValueError("another prior")
    read = READERS[header["version"]]
    symbols = [read(prior, sequence, header["T"]) for sequence in sequences]
    return header, np.array(symbols, np.int64).reshape(header["B"], header["T"], header["L"])


# format.md, "Packets".


def write_packet(
    kind: int,
    number: int,
    prior: Prior,
    symbols: npt.ArrayLike,
    state: npt.ArrayLike | None = None,
    opening: dict[str, Any] | None = None,
) -> bytes:
    """A packet of ``symbols`` (B, t, L), a refresh's ``state`` values (B, S) before them, an
    opening's fields (k, flags, model digest)."""
    sequences = np.asarray(symbols)
    frames = sequences.shape[1]
    assert 1 <= frames <= MAX_PACKET_FRAMES
    count = min(frames, 4) - 1
    head = bytes([kind << 6 | number % 16 << 2 | count])
    if count == 3:
        head += leb128(frames - 4)
    if kind == KINDS["opening"]:
        fields = (opening["k"], opening["flags"], sequences.shape[2], len(sequences))
        head += OPENING.pack(2, *fields, opening["model"], prior.digest)
    encoder = Encoder()
    if kind == KINDS["refresh"]:
        write_values(encoder, state)
    for sequence in sequences:
        write_sequence(encoder, prior, sequence)
    return head + encoder.ended()


def leb128(value: int) -> bytes:
    out = bytearray()
    while True:
        out.append(value & 0x7F | (0x80 if value >> 7 else 0))
        value >>= 7
        if not value:
            return bytes(out)


def read_head(data: bytes) -> dict[str, Any]:
    """A packet's kind, number, frame count, opening fields and where its coder bytes start."""
    if not data:
        raise ValueError("an empty packet")
    kind, number, count = data[0] >> 6, data[0] >> 2 & 15, data[0] & 3
    if kind == 3:
        raise ValueError("kind 3")
    frames, start = count + 1, 1
    if count == 3:
        value = 0
        for index in range(4):
            if index == 3 or start + index >= len(data):
                raise ValueError("a frame count past 3 bytes or the packet's end")
            value |= (data[start + index] & 0x7F) << 7 * index
            if not data[start + index] & 0x80:
                break
        frames, start = 4 + value, start + index + 1
    if frames > MAX_PACKET_FRAMES:
        raise ValueError("too many frames")
    head = {"kind": kind, "number": number, "frames": frames, "opening": None}
    if kind == KINDS["opening"]:
        if len(data) < start + OPENING.size:
            raise ValueError("an opening cut short")
        names = ("version", "k", "flags", "L", "B", "model", "prior")
        opening = dict(zip(names, OPENING.unpack_from(data, start), strict=True))
        if opening["version"] != 2:
            raise ValueError("an opening of another version")
        check_header(opening)
        head["opening"], start = opening, start + OPENING.size
    return {**head, "start": start}


class Receiver:
    """A stream of packets read to their refresh states and symbols, with the gap before each
    (frames are the model's, which this module does not run)."""

    def __init__(self, prior: Prior, model: bytes, width: int) -> None:
        self.prior, self.model, self.width = prior, model, width
        self.opening: dict[str, Any] | None = None
        self.expected = 0

    def read(self, data: bytes) -> dict[str, Any]:
        """A packet's head, gap (packets lost before it), state values (B, S) and symbols
        (B, t, L)."""
        head = read_head(data)
        opening = head["opening"] if self.opening is None else self.opening
        if opening is None or (self.opening is not None and head["opening"] is not None):
            raise ValueError("a stream opens with one opening packet")
        if (opening["prior"], opening["model"]) != (self.prior.digest, self.model):
            raise ValueError("another model or prior")
        if 2.0 ** -opening["k"] != self.prior.step or opening["L"] != len(self.prior.lo):
            raise ValueError("another prior")
        gap = (head["number"] - self.expected) % 16 if self.opening is not None else 0
        decoder, state = Decoder(data[head["start"] :]), None
        if head["kind"] == KINDS["refresh"]:
            state = read_values(decoder, opening["B"] * self.width)
        read = [read_sequence(decoder, self.prior, head["frames"]) for _ in range(opening["B"])]
        self.opening, self.expected = opening, (head["number"] + 1) % 16
        return {**head, "gap": gap, "state": state, "symbols": np.stack(read)}
