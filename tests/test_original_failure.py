"""The two mistakes of the original Keras model, reproduced on the TensorFlow we pin.

1. ``TensorArray.write`` returns a new ``TensorArray``; discarding it inside a traced
   function leaves the stacked result without the writes, so the loss does not depend on
   any weight and every gradient is ``None``.
2. Feedback kept on ``self`` inside a traced call becomes a symbolic tensor of that trace;
   the next trace, or eager code, that touches it fails with "out of scope".

``tf_while`` avoids both: the feedback is a ``tf.while_loop`` variable and every write's
result is reassigned (the kit's ``test_gradients_equal_the_reference`` shows every parameter
connected on it).
"""

from __future__ import annotations

import numpy as np
import pytest

import frae
from parity_tests.checks import parameters_without_gradient

pytestmark = pytest.mark.backend_specific("tf_while")

tf = pytest.importorskip("tensorflow")
model = pytest.importorskip("impls.tf_while.model")

CONFIG = frae.FRAEConfig()
X = np.random.default_rng(0).uniform(size=(10, 2)).astype(np.float32)  # the question's data


@pytest.fixture
def variables():
    variables = model.create_variables(CONFIG)
    for name, value in frae.initial_weights(CONFIG, seed=0).items():
        variables[name].assign(value)
    return variables


def _step(variables, fresh, feedback):
    """One step of the default model, written out as in the question."""

    def dense(h, name):
        return tf.nn.silu(h @ variables[f"{name}/kernel"] + variables[f"{name}/bias"])

    h = tf.concat([fresh, feedback], axis=1)
    code = dense(dense(dense(h, "encoder/dense_0"), "encoder/dense_1"), "encoder/latent")
    return dense(dense(tf.concat([code, feedback], axis=1), "decoder/dense_0"), "decoder/output")


def _loss_gradients(variables, reassign_writes: bool):
    @tf.function
    def loss(x):
        decoded = tf.zeros((1, 2))
        outputs = tf.TensorArray(tf.float32, size=x.shape[0], clear_after_read=False)
        for i in range(x.shape[0]):
            decoded = _step(variables, x[i : i + 1], decoded)
            written = outputs.write(i, decoded)
            if reassign_writes:
                outputs = written
        return tf.reduce_mean(tf.square(tf.squeeze(outputs.stack(), 1) - x))

    with tf.GradientTape() as tape:
        value = loss(X)
    return value, tape.gradient(value, variables)


def test_discarded_write_leaves_every_parameter_without_gradient(variables) -> None:
    loss, grads = _loss_gradients(variables, reassign_writes=False)
    assert parameters_without_gradient(grads) == list(CONFIG.parameter_shapes())
    assert all(grad is None for grad in grads.values())
    assert np.isclose(float(loss), np.mean(X**2))  # the stacked outputs are all zero


def test_reassigned_write_connects_every_parameter(variables) -> None:
    _, grads = _loss_gradients(variables, reassign_writes=True)
    assert parameters_without_gradient(grads) == []


def test_state_on_self_across_traced_calls_is_out_of_scope(variables) -> None:
    class FeedbackOnSelf(tf.Module):
        def __init__(self) -> None:
            super().__init__()
            self.decoded = tf.zeros((1, 2))

        @tf.function
        def __call__(self, x):
            outputs = []
            for i in range(x.shape[0]):
                self.decoded = _step(variables, x[i : i + 1], self.decoded)
                outputs.append(self.decoded)
            return tf.concat(outputs, axis=0)

    broken = FeedbackOnSelf()
    assert broken(X).shape == (10, 2)  # the first trace runs
    with pytest.raises(TypeError, match="out of scope"):
        broken(X[:5])  # a second trace reads the first trace's symbolic tensor
    with pytest.raises(TypeError, match="out of scope"):
        broken.decoded + 1.0  # so does eager code
