"""The contract's "Public interface": ``fit`` never leaves non-finite weights, and calls
from several threads on one backend object take turns, none failing and no ``set_weights``
lost."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import frae
from parity_tests.cases import BOTH_MODELS, CASES, Case
from parity_tests.checks import assert_same_weights
from parity_tests.conftest import MakeBackend

X = CASES["default"].inputs(seed=3) * 3.0  # (3, 7, 2)
# Full-batch SGD at this rate: two finite losses (2.73, 46.1), then NaN at step 3 in float32
# (a float64 backend diverges one step later); after two finite steps, the weights before
# step k - 1 differ from those before step k, so a rollback off by one step shows.
DIVERGES_MID_RUN = {"epochs": 8, "optimizer": "sgd", "learning_rate": 100.0}
# State feedback: the GRU's state is bounded and a swish output saturates, so the state model
# diverges through the linear output of its deep case: 2.77, 465, 9.6e11, then beyond float32 at
# step 4 (float64 reaches step 5).
DIVERGING = {
    name: (CASES[name].config, CASES[name].inputs(seed=3) * 3.0)
    for name in ("default", "state_deep")
}


@pytest.mark.parametrize("case_name", list(DIVERGING))
def test_diverged_fit_holds_the_weights_before_the_previous_step(
    make_backend: MakeBackend, case_name: str
) -> None:
    (config, x), diverges = DIVERGING[case_name], DIVERGES_MID_RUN
    model = make_backend(config, seed=4)
    start = model.get_weights()
    with pytest.raises(frae.TrainingDiverged) as raised:
        model.fit(x, **diverges)
    error = raised.value
    k = error.step
    assert isinstance(error, FloatingPointError)
    assert k >= 3, f"diverged at step {k}: the case needs two finite steps first"
    assert not math.isfinite(error.loss)
    rate = diverges["learning_rate"]
    assert f"step {k}" in str(error) and f"{rate:g}" in str(error), str(error)
    assert error.learning_rate == rate and error.restored_step == k - 1
    # the same fit stopped after k - 2 and k - 1 steps: W_{k-1} and [ℓ₁ … ℓ_{k-1}]
    options = {**diverges, "epochs": k - 2}
    replay = make_backend(config, weights=start)
    replay.fit(x, **options)
    assert_same_weights(model.get_weights(), replay.get_weights(), "not W_{k-1}")
    try:
        history = make_backend(config, weights=start).fit(x, **{**options, "epochs": k - 1})["loss"]
    except frae.TrainingDiverged as last_update_overflowed:  # W_k itself may not be finite
        history = last_update_overflowed.history
    assert error.history == history


@pytest.mark.parametrize("case", BOTH_MODELS)
def test_overflowing_last_update_holds_the_weights_before_it(
    make_backend: MakeBackend, case: Case
) -> None:
    """Every loss finite, but the one update overflows: W₂'s output bias is -inf."""
    model = make_backend(case.config, seed=4)
    start = model.get_weights()
    target = X + 100.0  # gradients of ~200, times a rate near float32's largest
    with pytest.raises(frae.TrainingDiverged) as raised:
        model.fit(X, target, epochs=1, optimizer="sgd", learning_rate=3e38)
    error = raised.value
    assert (error.step, error.restored_step) == (2, 1)
    assert len(error.history) == 1 and math.isfinite(error.history[0])
    assert "after the last step" in str(error), str(error)
    assert_same_weights(model.get_weights(), start, "not W₁")
    # the model is usable: it predicts, saves and trains again
    assert np.isfinite(model.predict(X)).all()
    assert math.isfinite(model.fit(X, epochs=1)["loss"][0])


def _run_together(calls: list[Callable[[], None]]) -> list[BaseException]:
    """Start every call at once, one thread each; the exceptions they raised."""
    barrier = threading.Barrier(len(calls))

    def run(call: Callable[[], None]) -> BaseException | None:
        barrier.wait()
        try:
            call()
        except BaseException as error:
            return error
        return None

    with ThreadPoolExecutor(len(calls)) as pool:
        return [error for error in pool.map(run, calls) if error is not None]


@pytest.mark.parametrize("case", BOTH_MODELS)
def test_calls_from_threads_take_turns(make_backend: MakeBackend, case: Case) -> None:
    """Three threads predict, encode and take gradients while a fourth swaps the weights: no
    call fails, each output is that of one whole set of weights, no swap is undone."""
    model = make_backend(case.config, seed=1)
    x = CASES["default"].inputs(seed=2)
    versions = [frae.initial_weights(model.config, seed=seed) for seed in range(3)]
    outputs = []
    for weights in versions:
        model.set_weights(weights)
        outputs.append(model.predict(x))
    lost: list[int] = []
    seen: list[np.ndarray] = []

    def swap_weights() -> None:
        for index in range(24):
            model.set_weights(versions[index % 3])
            time.sleep(0.002)  # the other threads' calls run; none may undo the swap
            if not all(
                np.array_equal(value, versions[index % 3][name])
                for name, value in model.get_weights().items()
            ):
                lost.append(index)

    def predict() -> None:
        for _ in range(16):
            seen.append(model.predict(x))

    def other_calls() -> None:
        for _ in range(8):
            model.encode(x)
            model.loss_and_grads(x)

    errors = _run_together([swap_weights, predict, predict, other_calls])
    assert not errors, [f"{type(error).__name__}: {error}" for error in errors]
    assert not lost, f"set_weights undone by another thread's call at swaps {lost}"
    assert_same_weights(model.get_weights(), versions[23 % 3], "the last swap")
    torn = [i for i, out in enumerate(seen) if not any(np.array_equal(out, o) for o in outputs)]
    assert not torn, f"predict calls {torn} match no whole set of weights"
