"""A signal sent as it comes, a chunk at a time (the contract's "Coding: the model as a codec"
and "Streaming"): each chunk's symbols a packet, the feedback carried from packet to packet on
both sides, so that any split decodes to what one call would."""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import numpy.typing as npt

from frae.codec import byte_format
from frae.codec.coder import SymbolCoder
from frae.codec.compression import check_model_digest, check_pair, check_prior_digest, header_of
from frae.codec.prior import Prior
from frae.quantization import symbols


class _End:
    """One end of a stream: the model, the prior and its coder (built once), the feedback the
    last packet left, the stream's header once the first packet has passed, and the packets
    so far."""

    def __init__(self, model: Any, prior: Prior) -> None:
        check_pair(model, prior)
        self.model, self.prior, self.coder = model, prior, SymbolCoder(prior)
        self.state: npt.NDArray[Any] | None = None
        self.header: byte_format.Header | None = None
        self.packets = 0


class Encoder(_End):
    """The sender: ``push(chunk)`` encodes frames (t, F), or (B, t, F) for B sequences, from
    the feedback the previous chunk left, and returns their packet; the first opens the
    stream, and every later chunk keeps its layout and B."""

    def push(self, chunk: npt.ArrayLike) -> bytes:
        frames = np.asarray(chunk)
        one = frames.ndim == 2
        layout = (one, 1 if one else len(frames))
        if self.header is not None and layout != (bool(self.header.flags), self.header.sequences):
            raise ValueError(
                f"a chunk of shape {frames.shape} in a stream of {self.header.sequences} "
                f"sequences{' without a batch axis' if self.header.flags else ''}"
            )
        codes, state = self.model.encode(frames, state=self.state, return_state=True)
        values = symbols(codes[None] if one else codes, self.prior.step)
        opening = None
        if self.header is None:
            header = header_of(self.model, self.prior, values, one=one)
            self.header = opening = dataclasses.replace(header, frames=0)
        words = [self.coder.encode(sequence) for sequence in values]
        packet = byte_format.pack_packet(opening, self.packets, values.shape[1], words)
        self.state, self.packets = state, self.packets + 1
        return packet


class Decoder(_End):
    """The receiver: ``push(packet)`` returns the packet's frames in the layout they were
    sent, decoded from the feedback the previous packet left; packets must come in order."""

    def push(self, packet: bytes) -> npt.NDArray[Any]:
        header, index, frames, words = byte_format.unpack_packet(bytes(packet), self.header)
        if index != self.packets:
            raise ValueError(f"packet {index} arrived where packet {self.packets} was due")
        if self.header is None:
            check_prior_digest(header, self.prior)
            check_model_digest(header, self.model)
        values = np.stack([self.coder.decode(sequence, frames) for sequence in words])
        one = header.flags & byte_format.ONE_SEQUENCE
        codes = (values * self.prior.step).astype(np.float32)
        outputs, state = self.model.decode(
            codes[0] if one else codes, state=self.state, return_state=True
        )
        self.header, self.state, self.packets = header, state, self.packets + 1
        return np.asarray(outputs)
