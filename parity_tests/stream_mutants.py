"""Streaming mutants (the contract's "Streaming"), one realistic mistake each (see
``parity_tests.mutants``): a chunk that restarts, a state one step late, a sender that hands
back its encoder's feedback, two sequences' states exchanged, a state in a layout of its own,
a state taken without its checks."""

from __future__ import annotations

from typing import Any

import numpy as np

from frae.backend import Array, Infer
from parity_tests.mutants import Float32Reference


class ChunkRestartsFromZero(Float32Reference):
    """Every call starts from the zero state whatever state it is given (the state argument
    accepted and dropped on the way to the loop)."""

    breaks = "streaming"

    def _predict(self, x: Array, state: Array) -> tuple[Array, Array]:
        return super()._predict(x, np.zeros_like(state))

    def _encode(self, x: Array, state: Array) -> tuple[Array, Array]:
        return super()._encode(x, np.zeros_like(state))

    def _decode(self, z: Array, state: Array) -> tuple[Array, Array]:
        return super()._decode(z, np.zeros_like(state))


def _one_step_late(infer: Infer, sequences: Array, state: Array) -> tuple[Array, Array]:
    """``infer``'s outputs, with the state from before its last step (the loop's carry read
    before the last iteration's update): the state given for a chunk of one step."""
    outputs, _ = infer(sequences, state)
    before = infer(sequences[:, :-1], state)[1] if sequences.shape[1] > 1 else state
    return outputs, before.astype(outputs.dtype)


class StateFromOneStepBeforeTheLast(Float32Reference):
    """The state returned is the feedback entering the last step, not the one after it."""

    breaks = "streaming"

    def _predict(self, x: Array, state: Array) -> tuple[Array, Array]:
        return _one_step_late(super()._predict, x, state)

    def _encode(self, x: Array, state: Array) -> tuple[Array, Array]:
        return _one_step_late(super()._encode, x, state)

    def _decode(self, z: Array, state: Array) -> tuple[Array, Array]:
        return _one_step_late(super()._decode, z, state)


class EncodeReturnsTheEncodersFeedback(Float32Reference):
    """``encode`` returns the feedback its encoder read at the last step (x̂_{T-1} or s_{T-1}),
    not the decoder's after it: the sender's replica of the receiver falls a step behind."""

    breaks = "sender_state"

    def _encode(self, x: Array, state: Array) -> tuple[Array, Array]:
        return _one_step_late(super()._encode, x, state)


class StatesOfTwoSequencesSwapped(Float32Reference):
    """The states returned for the first two sequences of a batch are exchanged (a batch
    axis mixed up with the features when the state is packed)."""

    breaks = "streaming"

    @staticmethod
    def _swapped(streamed: tuple[Array, Array]) -> tuple[Array, Array]:
        outputs, last = streamed
        if len(last) > 1:
            last = last[[1, 0, *range(2, len(last))]]
        return outputs, last

    def _predict(self, x: Array, state: Array) -> tuple[Array, Array]:
        return self._swapped(super()._predict(x, state))

    def _encode(self, x: Array, state: Array) -> tuple[Array, Array]:
        return self._swapped(super()._encode(x, state))

    def _decode(self, z: Array, state: Array) -> tuple[Array, Array]:
        return self._swapped(super()._decode(z, state))


class StateInALayoutOfItsOwn(Float32Reference):
    """The state is handed out with its features reversed and read back reversed: a stream
    continues on the same backend, but not on another (a framework's layout, not the
    contract's)."""

    breaks = "handoff"

    def _predict(self, x: Array, state: Array) -> tuple[Array, Array]:
        outputs, last = super()._predict(x, state[:, ::-1])
        return outputs, last[:, ::-1].copy()

    def _encode(self, x: Array, state: Array) -> tuple[Array, Array]:
        codes, last = super()._encode(x, state[:, ::-1])
        return codes, last[:, ::-1].copy()

    def _decode(self, z: Array, state: Array) -> tuple[Array, Array]:
        outputs, last = super()._decode(z, state[:, ::-1])
        return outputs, last[:, ::-1].copy()


class StateTakenAsItComes(Float32Reference):
    """A state is converted, not checked: NaN replaced by numbers, masks and lists taken as
    arrays, one row broadcast over the batch."""

    breaks = "bad_state"

    def _run(
        self, infer: Infer, value: Array, name: str, width: int, state: Any, return_state: Any
    ) -> Any:
        if state is not None:
            state = np.nan_to_num(np.asarray(np.ma.getdata(state), np.float64))
            rows = len(value) if np.ndim(value) == 3 else None
            if rows is not None and np.ndim(state) == 1:
                state = np.broadcast_to(state, (rows, *state.shape)).copy()
        return super()._run(infer, value, name, width, state, bool(return_state))


MUTANTS = [
    ChunkRestartsFromZero,
    StateFromOneStepBeforeTheLast,
    EncodeReturnsTheEncodersFeedback,
    StatesOfTwoSequencesSwapped,
    StateInALayoutOfItsOwn,
    StateTakenAsItComes,
]
