"""PyTorch: ``nn.Linear`` layers, the time loop in the scan higher-order op, compiled whole;
``TorchScanBPTTBackend`` the same with back-propagation through time written by hand."""

from impls.torch_scan.backend import TorchScanBackend, TorchScanBPTTBackend

__all__ = ["TorchScanBPTTBackend", "TorchScanBackend"]
