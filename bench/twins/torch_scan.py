"""``TorchScanBPTTBackend``: ``torch_scan`` with back-propagation through time written by
hand."""

from __future__ import annotations

import torch

from impls.torch_scan import model, train
from impls.torch_scan.backend import TorchScanBackend, compiled_hand_written


class TorchScanBPTTBackend(TorchScanBackend):
    """``torch_scan`` with back-propagation through time written by hand.

    ``loss_and_grads`` (``torch.autograd.grad``) and ``fit`` (``loss.backward()`` and the
    same ``torch.optim`` update) differentiate ``train.hand_written_loss``, whose
    ``torch.autograd.Function`` runs one reverse loop carrying only the feedback's gradient
    and forms each weight's gradient as one product over all steps. Inference, weights and
    the rollback are ``torch_scan``'s. The hand-written backward is the output-feedback
    model's: with ``feedback="state"`` the gradient is ``torch_scan``'s, by autograd
    through the compiled scan.
    """

    name = "torch_scan_bptt"

    def _tensor_loss(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """The loss, with autograd's record of it: one ``HandWrittenBPTT`` node (output
        feedback, its module an ``FRAE``), or ``torch_scan``'s (state feedback)."""
        if not isinstance(self.module, model.FRAE):
            return super()._tensor_loss(x, y)
        functions = compiled_hand_written(self.config)
        return train.hand_written_loss(
            functions.recorded_unroll, functions.reverse_loop, self.module, x, y
        )
