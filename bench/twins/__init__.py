"""The hand-written-backward twins, for the benchmark's price of autodiff: each module holds
one compiled backend whose backward is written by hand, created by import path
(``frae.create("bench.twins.jax_scan:JaxScanBPTTBackend")``) and not registered."""
