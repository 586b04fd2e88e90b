"""JAX: the encoder and decoder in Flax NNX (with state feedback, a GRU cell of its own),
the time loop in ``jax.lax.scan``, all jitted; the output-feedback model's gradient by
autodiff or, through ``compiled(config, by_hand=True)``, by a backward pass written by hand
(the benchmark's twin, ``bench.twins.jax_scan``)."""

from impls.jax_scan.backend import JaxScanBackend

__all__ = ["JaxScanBackend"]
