"""JAX: the encoder and decoder in Flax NNX, the time loop in ``jax.lax.scan``, all jitted;
``JaxScanBPTTBackend`` differentiates it by a backward pass written by hand."""

from impls.jax_scan.backend import JaxScanBackend, JaxScanBPTTBackend

__all__ = ["JaxScanBPTTBackend", "JaxScanBackend"]
