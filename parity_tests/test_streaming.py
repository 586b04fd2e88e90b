"""The contract's "Streaming": a sequence sent in chunks, each call starting from the state
the previous one returned, gives what one call over the whole sequence gives."""

from __future__ import annotations

import os

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from parity_tests.cases import BOTH_MODELS, Case, stream_weights
from parity_tests.checks import streamed
from parity_tests.conftest import MakeBackend
from parity_tests.tolerances import assert_close

STEPS = 7
"""Steps of a streamed sequence: each chunk length is a shape a compiled backend compiles once."""
STREAM_EXAMPLES = max(1, int(os.environ.get("FRAE_HYPOTHESIS_EXAMPLES", "6")) // 2)
LAYOUTS = {"B=3": 3, "B=1": 1, "one sequence": None}
"""How many sequences a stream carries; ``None``: one 2-D sequence, its state ``(S,)``."""

cut_points = st.lists(st.integers(1, STEPS - 1), unique=True).map(sorted)
"""Where a sequence of ``STEPS`` steps is cut into chunks: none (one call) to every frame."""


def _pair(make_backend: MakeBackend, reference: MakeBackend, case: Case) -> tuple:
    """The backend under test and the reference, both holding ``stream_weights``."""
    weights = stream_weights(case)
    return make_backend(case.config, weights=weights), reference(case.config, weights=weights)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("case", BOTH_MODELS)
def test_chained_chunks_equal_one_call(
    make_backend: MakeBackend, reference: MakeBackend, case: Case, layout: str
) -> None:
    """Calls chained through their states equal one call of the reference over it all."""
    model, oracle = _pair(make_backend, reference, case)
    x = Case(case.config, LAYOUTS[layout] or 1, STEPS).inputs(seed=32)
    x = x if LAYOUTS[layout] is not None else x[0]
    calls = {"predict": x, "encode": x, "decode": oracle.encode(x).astype(np.float32)}
    expected = {m: getattr(oracle, m)(seq, return_state=True) for m, seq in calls.items()}

    @settings(
        max_examples=STREAM_EXAMPLES,
        deadline=None,
        derandomize=os.environ.get("CI", "").lower() == "true",
        suppress_health_check=[HealthCheck.too_slow],
    )
    @example(cuts=list(range(1, STEPS)))  # one frame per call
    @given(cuts=cut_points)
    def check(cuts: list[int]) -> None:
        for method, sequences in calls.items():
            outputs, state = streamed(getattr(model, method), sequences, cuts)
            what = f"{method} in chunks cut at {cuts}"
            assert_close("outputs", outputs, expected[method][0], what)
            assert_close("outputs", state, expected[method][1], f"{what}: last state")

    check()


@pytest.mark.parametrize("case", BOTH_MODELS)
def test_a_chunk_continues_from_the_state_it_is_given(
    make_backend: MakeBackend, reference: MakeBackend, case: Case
) -> None:
    """A call from a state that is not zero equals the reference's from that state."""
    model, oracle = _pair(make_backend, reference, case)
    _, start = oracle.predict(case.inputs(seed=33), return_state=True)
    start = start.astype(np.float32)
    x = case.inputs(seed=34)
    for method in ("predict", "encode"):
        actual = getattr(model, method)(x, state=start, return_state=True)
        expected = getattr(oracle, method)(x, state=start, return_state=True)
        assert_close("outputs", actual[0], expected[0], method)
        assert_close("outputs", actual[1], expected[1], f"{method}: last state")


@pytest.mark.parametrize("case", BOTH_MODELS)
def test_encode_ends_in_the_receivers_state(make_backend: MakeBackend, case: Case) -> None:
    """``encode``'s last state is the one ``decode`` of its codes ends in."""
    model = make_backend(case.config, weights=stream_weights(case))
    x = case.inputs(seed=35)
    sender = receiver = None
    for chunk in np.split(x, [2, 3], axis=1):
        codes, sender = model.encode(chunk, state=sender, return_state=True)
        _, receiver = model.decode(codes, state=receiver, return_state=True)
        assert_close("self", sender, receiver, "encode's state against decode's")


@pytest.mark.parametrize("case", BOTH_MODELS)
def test_initial_state_is_the_zero_state(make_backend: MakeBackend, case: Case) -> None:
    """``initial_state`` is the zero state a call without ``state`` starts from."""
    model = make_backend(case.config, weights=stream_weights(case))
    width = case.config.feedback_dim
    x = case.inputs(seed=36)
    single, batched = model.initial_state(), model.initial_state(len(x))
    assert single.shape == (width,) and batched.shape == (len(x), width)
    outputs, state = model.predict(x, return_state=True)
    assert state.dtype == outputs.dtype and np.issubdtype(batched.dtype, np.floating)
    assert not batched.any() and not single.any()
    assert state.shape == (len(x), width)
    assert model.predict(x[0], return_state=True)[1].shape == (width,)
    np.testing.assert_array_equal(model.predict(x, state=batched), outputs)
    np.testing.assert_array_equal(model.predict(x, return_state=False), outputs)
    for value in (outputs, state, single, batched):
        assert type(value) is np.ndarray and value.flags.writeable


@pytest.mark.parametrize("case", BOTH_MODELS)
def test_stream_moves_between_backends(
    make_backend: MakeBackend, partner: MakeBackend, reference: MakeBackend, case: Case
) -> None:
    """A stream handed between this backend and its partner equals the reference's."""
    here, oracle = _pair(make_backend, reference, case)
    there = partner(case.config, weights=stream_weights(case))
    x = case.inputs(seed=37)
    expected_outputs, expected_state = oracle.predict(x, return_state=True)
    halves = np.split(x, [3], axis=1)
    for sender, receiver, route in (
        (here, there, "here to partner"),
        (there, here, "partner to here"),
    ):
        outputs, states = [], [None, None]
        for chunk in halves:
            codes, states[0] = sender.encode(chunk, state=states[0], return_state=True)
            decoded, states[1] = receiver.decode(codes, state=states[1], return_state=True)
            outputs.append(decoded)
        assert_close("outputs", _float32(*outputs), expected_outputs, route)
        assert_close("outputs", _float32(states[1]), expected_state, f"{route}: last state")
    first, middle = here.predict(halves[0], return_state=True)
    rest, last = there.predict(halves[1], state=middle, return_state=True)
    assert_close("outputs", _float32(first, rest), expected_outputs, "switched")
    assert_close("outputs", _float32(last), expected_state, "switched: last state")


def _float32(*parts: np.ndarray) -> np.ndarray:
    """Parts of a stream joined over time, as float32: a stream through a float32 backend
    is held to the float32 tolerance even where its last part ran in float64."""
    return np.concatenate(parts, axis=-2 if parts[0].ndim > 2 else 0).astype(np.float32)
