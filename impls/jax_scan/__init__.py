"""JAX: the encoder and decoder in Flax NNX, the time loop in ``jax.lax.scan``, all jitted."""

from impls.jax_scan.backend import JaxScanBackend

__all__ = ["JaxScanBackend"]
