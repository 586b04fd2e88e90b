"""``TFWhileBPTTBackend``: ``tf_while`` with its backward pass written by hand."""

from __future__ import annotations

from frae.params import Weights
from impls.tf_while.backend import TFWhileBackend, hand_written_functions


class TFWhileBPTTBackend(TFWhileBackend):
    """``TFWhileBackend`` with its backward pass written by hand (``train.backward``): the
    tape's gradient, in ``loss_and_grads`` and in the SGD and Adam steps, goes through
    ``tf.custom_gradient``: one reverse ``tf.while_loop`` carrying only the feedback's
    gradient, each weight's gradient one product over all steps after it.

    The backward pass is written for output feedback; a state-feedback model (the
    contract's "State feedback") runs ``TFWhileBackend``'s functions, its gradient
    TensorFlow's autodiff. predict, encode and decode, the feedback an input and an output of
    each (the contract's "Streaming"), are ``TFWhileBackend``'s functions and traces for both
    models."""

    name = "tf_while_bptt"

    def _build(self, weights: Weights) -> None:
        super()._build(weights)
        if self.config.gru is None:
            self.compiled = hand_written_functions(self.jit_compile)
