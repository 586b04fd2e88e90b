"""``bench.twins.torch_scan``: autograd's gradient calls run the backward written by hand."""

from __future__ import annotations

import numpy as np
import pytest

import frae
from parity_tests.cases import CASES
from parity_tests.tolerances import assert_close

TWIN = "bench.twins.torch_scan:TorchScanBPTTBackend"
"""The twin, by import path: also the name of the worker group its tests share."""
pytestmark = pytest.mark.backend_specific(TWIN)
pytest.importorskip("torch")
twin = pytest.importorskip("bench.twins.torch_scan")

# every size different, no square kernel; the kit's configs, whose compiled graphs the run's
# graph caches hold once either compiled them
CONFIG = CASES["wide"].config
STATE_CONFIG = CASES["state"].config


def _inputs(seed: int, config: frae.FRAEConfig = CONFIG) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.uniform(-1.0, 1.0, size=(4, 7, config.input_dim)).astype(np.float32)


@pytest.mark.slow
def test_autograd_runs_the_hand_written_backward(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loss's autograd node is ``HandWrittenBPTT``'s, its gradient equals the reference's, and
    doubling what it returns doubles ``loss_and_grads`` and what ``fit`` hands to SGD."""
    weights = frae.initial_weights(CONFIG, seed=8)
    x, y = _inputs(seed=9), _inputs(seed=10)
    hand = frae.create(TWIN, CONFIG, weights=weights)
    assert isinstance(hand._loss(x, y).grad_fn, twin.HandWrittenBPTT._backward_cls)
    loss, grads = hand.loss_and_grads(x, y)
    expected_loss, expected = frae.create("reference", CONFIG, weights=weights).loss_and_grads(x, y)
    assert_close("loss", np.float32(loss), np.float64(expected_loss))
    for name, grad in expected.items():
        assert_close("gradients", grads[name], grad, name)

    weight_gradients = twin.weight_gradients
    monkeypatch.setattr(twin, "weight_gradients", lambda *a: [2 * g for g in weight_gradients(*a)])
    _, doubled = hand.loss_and_grads(x, y)
    for name, grad in grads.items():
        assert_close("self", doubled[name], 2 * grad, name)
    learning_rate = 0.5
    hand.fit(x, y, optimizer="sgd", learning_rate=learning_rate)
    for name, value in hand.get_weights().items():
        stepped = weights[name] - learning_rate * 2 * grads[name]
        assert_close("sgd weights", value, stepped, name)


def test_state_feedback_is_differentiated_by_autograd() -> None:
    """The hand-written backward is the output model's: with state feedback,
    the twin's loss is autograd's through the scan, its gradients the reference's."""
    config = STATE_CONFIG
    weights = frae.initial_weights(config, seed=8)
    x, y = _inputs(9, config), _inputs(10, config)
    model = frae.create(TWIN, config, weights=weights)
    assert not isinstance(model._loss(x, y).grad_fn, twin.HandWrittenBPTT._backward_cls)
    loss, grads = model.loss_and_grads(x, y)
    expected_loss, expected = frae.create("reference", config, weights=weights).loss_and_grads(x, y)
    assert_close("loss", np.float32(loss), np.float64(expected_loss))
    for name, grad in expected.items():
        assert_close("gradients", grads[name], grad, name)
