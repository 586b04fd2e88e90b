"""``JaxScanBPTTBackend``: ``jax_scan`` with its backward pass written by hand."""

from __future__ import annotations

from frae.params import Weights
from impls.jax_scan.backend import JaxScanBackend, compiled


class JaxScanBPTTBackend(JaxScanBackend):
    """``JaxScanBackend`` with its backward pass written by hand, called by
    ``jax.value_and_grad`` through ``jax.custom_vjp`` (``train.loss_by_hand``): one reverse
    loop over time carrying only the feedback's gradient, then each weight's gradient as one
    product over all steps. Gradients and both optimizers' steps use it; the rest is
    inherited. It is written for output feedback: a state-feedback config trains by
    autodiff, as ``JaxScanBackend`` (``train.gradient``)."""

    name = "jax_scan_bptt"
    by_hand = True

    def _build(self, weights: Weights) -> None:
        self.compiled = compiled(self.config, by_hand=True)
        self._write_weights(weights)
