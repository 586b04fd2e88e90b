"""PyTorch: ``nn.Linear`` layers, the time loop in the scan higher-order op, compiled whole;
``compiled_hand_written`` compiles the loops of back-propagation through time written by
hand, which the benchmark's twin runs (``bench.twins.torch_scan``)."""

from impls.torch_scan.backend import TorchScanBackend

__all__ = ["TorchScanBackend"]
