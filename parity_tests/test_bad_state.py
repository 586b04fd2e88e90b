"""The contract's "Streaming" and "Bad input": a bad streaming state raises the named error,
names the argument and changes nothing."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from parity_tests.cases import CASES
from parity_tests.checks import HUGE, assert_same_weights, masked_nan, with_entry
from parity_tests.conftest import MakeBackend

X = CASES["default"].inputs(seed=1)  # (3, 7, 2): S = F = 2
Z = CASES["default"].inputs(seed=2)[..., :1]  # (3, 7, 1)
STATE = np.full((3, 2), 0.25, np.float32)
WIDE, TALL = np.zeros((3, 3), np.float32), np.zeros((4, 2), np.float32)  # 3 features, 4 rows


def _state_with(value: float | np.floating) -> np.ndarray:
    return with_entry(STATE, (1, 0), value)


def _predict(state: object, sequences: np.ndarray = X) -> Callable[[Any], object]:
    return lambda m: m.predict(sequences, state=state)


BAD_STATES: dict[str, tuple[Any, ...]] = {
    "predict rank 1 beside a batch": (_predict(STATE[0]), ValueError, "state"),
    "predict rank 3": (_predict(STATE[:, None]), ValueError, "state"),
    "predict rank 2 beside one sequence": (_predict(STATE[:1], X[0]), ValueError, "state"),
    "predict 3 features": (_predict(WIDE), ValueError, "state", "3"),
    "predict 1 feature beside one sequence": (_predict(STATE[0, :1], X[0]), ValueError, "state"),
    "predict a batch of 2 for 3 sequences": (_predict(STATE[:2]), ValueError, "state", "2", "3"),
    "predict a batch of 4 for 3 sequences": (_predict(TALL), ValueError, "state", "4", "3"),
    "predict integers": (_predict(np.zeros((3, 2), int)), TypeError, "state"),
    "predict booleans": (_predict(np.zeros((3, 2), bool)), TypeError, "state"),
    "predict NaN": (_predict(_state_with(np.nan)), ValueError, "state"),
    "predict inf": (_predict(_state_with(-np.inf)), ValueError, "state"),
    "predict longdouble beyond float64": (_predict(_state_with(HUGE)), ValueError, "state"),
    "predict masked": (_predict(masked_nan(STATE)), TypeError, "state"),
    "predict a list": (_predict(STATE.tolist()), TypeError, "state"),
    "predict a scalar": (_predict(0.0), TypeError, "state"),
    "predict return_state a string": (
        lambda m: m.predict(X, return_state="yes"),
        TypeError,
        "return_state",
    ),
    "predict return_state 1": (lambda m: m.predict(X, return_state=1), TypeError, "return_state"),
    "encode a batch of 2": (lambda m: m.encode(X, state=STATE[:2]), ValueError, "state"),
    "encode NaN": (lambda m: m.encode(X, state=_state_with(np.nan)), ValueError, "state"),
    "encode masked": (lambda m: m.encode(X, state=masked_nan(STATE)), TypeError, "state"),
    "decode 3 features": (lambda m: m.decode(Z, state=WIDE), ValueError, "state"),
    "decode inf": (lambda m: m.decode(Z, state=_state_with(np.inf)), ValueError, "state"),
    "decode a list": (lambda m: m.decode(Z, state=STATE.tolist()), TypeError, "state"),
    "initial_state batch 0": (lambda m: m.initial_state(0), ValueError, "batch"),
    "initial_state batch a float": (lambda m: m.initial_state(2.0), TypeError, "batch"),
}


@pytest.mark.parametrize("call", list(BAD_STATES), ids=list(BAD_STATES))
def test_bad_state_raises_and_changes_nothing(make_backend: MakeBackend, call: str) -> None:
    action, error, *named = BAD_STATES[call]
    model = make_backend(seed=4)
    before, outputs, state = model.get_weights(), model.predict(X, state=STATE), STATE.copy()
    with pytest.raises(error) as raised:
        action(model)
    for word in named:
        assert word in str(raised.value), f"the message does not name {word!r}: {raised.value}"
    assert_same_weights(model.get_weights(), before, f"{call} changed")
    np.testing.assert_array_equal(model.predict(X, state=STATE), outputs, err_msg=call)
    np.testing.assert_array_equal(STATE, state, err_msg=f"{call} wrote into the state")


@pytest.mark.parametrize("big", [np.float64(1e39)], ids=str)
def test_a_state_beyond_the_compute_dtype_is_refused(
    make_backend: MakeBackend, big: np.floating
) -> None:
    """1e39 is infinite to a float32 computation: refused, unless the backend computes in
    float64, and then its results are finite."""
    model = make_backend(seed=4)
    try:
        outputs, state = model.predict(X, state=_state_with(big), return_state=True)
    except ValueError as error:
        assert "state" in str(error), str(error)
    else:
        assert model.initial_state().dtype == np.float64, "a float32 backend accepted 1e39"
        assert np.isfinite(outputs).all() and np.isfinite(state).all()


def test_a_call_writes_into_no_state_it_is_given(make_backend: MakeBackend) -> None:
    """The state given is read, never written: the caller's array, and any view of it, hold
    what they held, and the state returned is a new array."""
    model = make_backend(seed=4)
    given, kept = STATE.copy(), STATE.copy()
    for call, sequences in ((model.predict, X), (model.encode, X), (model.decode, Z)):
        _, returned = call(sequences, state=given, return_state=True)
        np.testing.assert_array_equal(given, kept, err_msg=f"{call.__name__} wrote into it")
        assert not np.shares_memory(returned, given), call.__name__
        returned += 1.0  # the caller owns what it was given back
        np.testing.assert_array_equal(given, kept)
