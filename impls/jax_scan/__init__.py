"""JAX: the encoder and decoder in Flax NNX (with state feedback, a GRU cell of its own),
the time loop in ``jax.lax.scan``, all jitted; ``JaxScanBPTTBackend`` differentiates the
output-feedback model by a backward pass written by hand."""

from impls.jax_scan.backend import JaxScanBackend, JaxScanBPTTBackend

__all__ = ["JaxScanBPTTBackend", "JaxScanBackend"]
