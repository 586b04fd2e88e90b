"""JAX: the encoder and decoder in Flax NNX (with state feedback, a GRU cell of its own),
the time loop in ``jax.lax.scan``, all jitted; the gradient by autodiff."""

from impls.jax_scan.backend import JaxScanBackend

__all__ = ["JaxScanBackend"]
