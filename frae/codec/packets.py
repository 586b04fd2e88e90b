"""A signal sent as it comes, a chunk at a time (the contract's "Coding: the model as a codec"
and "Streaming"): each chunk's symbols a packet, the feedback carried from packet to packet on
both sides, so that any split decodes to what one call would.

Loss: a receiver told of a lost packet (a gap in the packets' numbers, or ``Decoder.lost``)
conceals its frames by decoding a stand-in code in their place (``CONCEALMENTS``), and goes
on from the state that leaves, no longer the sender's. A sender made with ``refresh=N`` sends,
at the first packet N frames or more after the last refresh (or the opening), its feedback
state on the grid of ``REFRESH_STEP``, and adopts that state itself, as the receiver does: from
a refresh on the two hold the same state again, whatever was lost before it."""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from frae import validation
from frae.codec import byte_format
from frae.codec.byte_format import FRAMES, OPENING, REFRESH, REFRESH_STEP
from frae.codec.checks import (
    check_codes,
    check_model_digest,
    check_pair,
    check_prior_digest,
    checked_signal,
    header_of,
)
from frae.codec.coder import FEW_SYMBOLS, SymbolCoder, ended, opened, start
from frae.codec.prior import Prior
from frae.quantization import SYMBOL_LIMIT, symbol_rows, symbols

CONCEALMENTS = ("mode", "repeat")
"""What a receiver decodes in place of a lost frame: each dimension's most probable symbol under
the prior (``mode``: the code the prior expects, which needs nothing received), or the last
code it received (``repeat``). docs/demo.md measures both: ``mode`` is the better for output
feedback with refreshes, ``repeat`` for state feedback, whose codes change slowly from frame to
frame."""


class _End:
    """One end of a stream: the model, the prior and its coder (built once), the feedback the
    last packet left, the stream's opening once it has passed, and the next packet's number."""

    def __init__(self, model: Any, prior: Prior) -> None:
        check_pair(model, prior)
        self.model, self.prior, self.coder = model, prior, SymbolCoder(prior)
        self.state: npt.NDArray[Any] | None = None
        self.header: byte_format.Header | None = None
        self.packets = 0

    def _state_of(self, values: npt.NDArray[np.int32], one: bool) -> npt.NDArray[Any]:
        """A refresh's state values on the grid, in the model's state dtype and the layout."""
        template = self.model.initial_state(batch=None if one else len(values))
        return (values * REFRESH_STEP).reshape(template.shape).astype(template.dtype)


class Encoder(_End):
    """The sender: ``push(chunk)`` encodes frames (t, F), or (B, t, F) for B sequences, from
    the feedback the previous chunk left, and returns their packet; the first opens the
    stream, and every later chunk keeps its layout and B. With ``refresh=N``, a refresh
    every N frames or more."""

    def __init__(self, model: Any, prior: Prior, *, refresh: int | None = None) -> None:
        super().__init__(model, prior)
        self.refresh = None if refresh is None else validation.check_int(refresh, "refresh")
        self.since = 0
        self.frames = 0

    def push(self, chunk: npt.ArrayLike) -> bytes:
        frames = chunk if isinstance(chunk, np.ndarray) else np.asarray(chunk)
        if frames.ndim not in (2, 3):
            raise ValueError(f"a chunk is (t, F) or (B, t, F), got shape {frames.shape}")
        one = frames.ndim == 2
        opening = self.header
        if opening is None:
            sequences = len(checked_signal(self.model, frames)[0])
            opening = header_of(self.model, self.prior, sequences, 0, one=one)
        elif (one, 1 if one else len(frames)) != (bool(opening.flags), opening.sequences):
            raise ValueError(
                f"a chunk of shape {frames.shape} in a stream of {opening.sequences} "
                f"sequences{' without a batch axis' if opening.flags else ''}"
            )
        byte_format.check_packet_symbols(opening, frames.shape[-2])
        kind, state, encoder = self._kind(), self.state, start()
        if kind == REFRESH:
            assert state is not None
            values = np.clip(np.rint(state / REFRESH_STEP), -SYMBOL_LIMIT, SYMBOL_LIMIT)
            self.coder.write_values(encoder, values.astype(np.int32))
            state = self._state_of(values.astype(np.int32), one)
        codes, state = self.model.encode(frames, state=state, return_state=True)
        codes = np.asarray(codes)[None] if one else np.asarray(codes)
        self._write(encoder, codes)
        count = codes.shape[1]
        packet = byte_format.pack_packet(kind, self.packets, count, ended(encoder), opening)
        self.header, self.state, self.packets = opening, state, self.packets + 1
        self.frames += count
        self.since = count if kind != FRAMES else self.since + count
        return packet

    def _write(self, encoder: Any, codes: npt.NDArray[Any]) -> None:
        """The symbols of codes (B, t, L) into ``encoder``, a sequence after another; codes
        that are not finite a ``ValueError`` naming the first such frame of the stream."""
        step = self.prior.step
        if codes.size <= FEW_SYMBOLS:
            try:
                rows = [symbol_rows(sequence, step) for sequence in codes.tolist()]
            except ValueError:
                check_codes(codes, self.frames)
                raise
            for sequence_rows in rows:
                self.coder.write_rows(encoder, sequence_rows)
            return
        check_codes(codes, self.frames)
        for sequence in symbols(codes, step):
            self.coder.write(encoder, sequence)

    def _kind(self) -> int:
        if self.header is None:
            return OPENING
        due = self.refresh is not None and self.since >= self.refresh
        return REFRESH if due else FRAMES


class Decoder(_End):
    """The receiver: ``push(packet)`` returns the packet's frames in the layout they were
    sent, decoded from the feedback the previous packet left; after a gap in the packets'
    numbers, the frames of the packets missed (as many a packet as this one carries),
    concealed, come first. ``lost(frames)`` conceals frames the caller knows were lost."""

    def __init__(self, model: Any, prior: Prior, *, concealment: str = "mode") -> None:
        super().__init__(model, prior)
        self.concealment = validation.check_choice(concealment, "concealment", CONCEALMENTS)
        self.last: npt.NDArray[np.float32] | None = None
        """The codes (B, t, L) of the last packet decoded."""

    def push(self, packet: bytes) -> npt.NDArray[Any]:
        data = packet if type(packet) is bytes else bytes(packet)
        head = byte_format.unpack_packet(data)
        header = self.header
        if header is None or head.kind == OPENING:
            header = self._opened(head)
        byte_format.check_packet_symbols(header, head.frames)
        state, hidden = self.state, None
        if self.header is not None and head.number != self.packets:
            gap = (head.number - self.packets) % byte_format.NUMBERS
            hidden, state = self._concealed(gap * head.frames, state, header)
        decoder = opened(data[head.start :])
        one = bool(header.flags)
        if head.kind == REFRESH:
            width = self.model.config.feedback_dim
            values = self.coder.read_values(decoder, header.sequences * width)
            state = self._state_of(values.reshape(header.sequences, width), one)
        codes = self._read(decoder, head.frames, header.sequences)
        outputs, state = self.model.decode(
            codes[0] if one else codes, state=state, return_state=True
        )
        self.header, self.state, self.last = header, state, codes
        self.packets = (head.number + 1) % byte_format.NUMBERS
        return outputs if hidden is None else np.concatenate([hidden, outputs], -2)

    def _read(self, decoder: Any, frames: int, sequences: int) -> npt.NDArray[np.float32]:
        """The codes (B, t, L) of the packet's symbols."""
        latent, step = self.prior.latent_dim, self.prior.step
        if frames * latent <= FEW_SYMBOLS:
            read = [self.coder.read_rows(decoder, frames) for _ in range(sequences)]
            frames_of = [zip(*rows, strict=True) for rows in read]
            return np.array([[[q * step for q in f] for f in one] for one in frames_of], np.float32)
        values = np.stack([self.coder.read(decoder, frames) for _ in range(sequences)])
        return (values * np.float32(step)).astype(np.float32, copy=False)

    def lost(self, frames: int, packets: int = 1) -> npt.NDArray[Any]:
        """``frames`` frames of ``packets`` packets lost, concealed: a stand-in code decoded in
        their place (``concealment``), the state carried on."""
        frames = validation.check_int(frames, "frames")
        packets = validation.check_int(packets, "packets")
        if self.header is None:
            raise ValueError("no stream is open: its opening packet must arrive first")
        hidden, self.state = self._concealed(frames, self.state, self.header)
        self.packets = (self.packets + packets) % byte_format.NUMBERS
        assert hidden is not None
        return hidden

    def _opened(self, head: byte_format.PacketHead) -> byte_format.Header:
        """The stream's opening, from its first packet: a second one is refused."""
        if self.header is not None:
            if head.kind == OPENING:
                raise ValueError("a second opening packet in one stream")
            return self.header
        if head.opening is None:
            kind = byte_format.KINDS[head.kind]
            raise ValueError(f"a stream opens with its opening packet, got a {kind} packet")
        check_prior_digest(head.opening, self.prior)
        check_model_digest(head.opening, self.model)
        return head.opening

    def _concealed(
        self, frames: int, state: npt.NDArray[Any] | None, header: byte_format.Header
    ) -> tuple[npt.NDArray[Any] | None, npt.NDArray[Any] | None]:
        """``frames`` frames decoded from stand-in codes, and the state they leave."""
        if not frames:
            return None, state
        one, batch = bool(header.flags), header.sequences
        stand_in = self._stand_in(batch)
        codes = np.broadcast_to(stand_in[:, None], (batch, frames, stand_in.shape[-1]))
        codes = np.ascontiguousarray(codes[0] if one else codes)
        outputs, state = self.model.decode(codes, state=state, return_state=True)
        return np.asarray(outputs), state

    def _stand_in(self, batch: int) -> npt.NDArray[np.float32]:
        """Each sequence's stand-in code (B, L)."""
        if self.concealment == "repeat":
            if self.last is not None:
                return self.last[:, -1]
            return np.zeros((batch, self.prior.latent_dim), np.float32)
        table = self.prior.frequencies[:, : self.prior.escape]
        mode = (np.argmax(table, axis=1) + self.prior.lo) * self.prior.step
        return np.tile(mode.astype(np.float32), (batch, 1))
