"""The hand-written-backward twins: a compiled backend with its backward pass written by hand
for output feedback, beside the framework's own differentiation, for the benchmark's price of
autodiff. Each module holds one twin and imports only its own backend; they follow the
contract and are created by import path, ``frae.create("bench.twins.jax_scan:JaxScanBPTTBackend")``,
and are not registered: no user picks them."""
