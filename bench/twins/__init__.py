"""The hand-written-backward twins, for the benchmark's price of autodiff: each module holds
one compiled backend whose backward is written by hand, created by import path
(``frae.create("bench.twins.jax_scan:JaxScanBPTTBackend")``) and not registered."""

from frae.config import FRAEConfig


def refuse_rate_weight(config: FRAEConfig, name: str) -> None:
    """A twin's backward has no rate term (the contract's "Rate: training the codec for its
    bits"): a config with ``rate_weight`` (0 included) is a ``ValueError`` naming it."""
    if config.rate_weight is not None:
        raise ValueError(
            f"rate_weight must be None for {name}, got {config.rate_weight!r}: "
            "its hand-written backward has no rate term"
        )
