"""PyTorch: ``nn.Linear`` layers, the time loop in the scan higher-order op, compiled whole;
the gradient by autograd."""

from impls.torch_scan.backend import TorchScanBackend

__all__ = ["TorchScanBackend"]
