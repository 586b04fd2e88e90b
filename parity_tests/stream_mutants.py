"""Streaming mutants (the contract's "Streaming"), one realistic mistake each (see
``parity_tests.mutants``)."""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from frae.backend import Array, Infer
from parity_tests.mutants import Float32Reference


class _EveryCall(Float32Reference):
    """A mutant that breaks predict, encode and decode alike, in ``_call``."""

    def _call(self, infer: Infer, sequences: Array, state: Array) -> tuple[Array, Array]:
        raise NotImplementedError

    def _run(self, infer: Infer, *checked: Any) -> Any:
        return super()._run(functools.partial(self._call, infer), *checked)


class ChunkRestartsFromZero(_EveryCall):
    """Every call starts from the zero state whatever state it is given (the state argument
    accepted and dropped on the way to the loop)."""

    breaks = "streaming"

    def _call(self, infer: Infer, sequences: Array, state: Array) -> tuple[Array, Array]:
        return infer(sequences, np.zeros_like(state))


def _one_step_late(infer: Infer, sequences: Array, state: Array) -> tuple[Array, Array]:
    """``infer``'s outputs, with the state from before its last step (the loop's carry read
    before the last iteration's update): the state given for a chunk of one step."""
    outputs, _ = infer(sequences, state)
    before = infer(sequences[:, :-1], state)[1] if sequences.shape[1] > 1 else state
    return outputs, before.astype(outputs.dtype)


class StateFromOneStepBeforeTheLast(_EveryCall):
    """The state returned is the feedback entering the last step, not the one after it."""

    breaks = "streaming"
    _call = staticmethod(_one_step_late)


class EncodeReturnsTheEncodersFeedback(Float32Reference):
    """``encode`` returns the feedback its encoder read at the last step (x̂_{T-1} or s_{T-1}),
    not the decoder's after it: the sender's replica of the receiver falls a step behind."""

    breaks = "sender_state"

    def _encode(self, x: Array, state: Array) -> tuple[Array, Array]:
        return _one_step_late(super()._encode, x, state)


class StatesOfTwoSequencesSwapped(_EveryCall):
    """The states returned for the first two sequences of a batch are exchanged (a batch
    axis mixed up with the features when the state is packed)."""

    breaks = "streaming"

    def _call(self, infer: Infer, sequences: Array, state: Array) -> tuple[Array, Array]:
        outputs, last = infer(sequences, state)
        return outputs, last[[1, 0, *range(2, len(last))]] if len(last) > 1 else last


class StateInALayoutOfItsOwn(_EveryCall):
    """The state is handed out with its features reversed and read back reversed: a stream
    continues on the same backend, but not on another (a framework's layout, not the
    contract's)."""

    breaks = "handoff"

    def _call(self, infer: Infer, sequences: Array, state: Array) -> tuple[Array, Array]:
        outputs, last = infer(sequences, state[:, ::-1])
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
