"""Baselines that exist only to be timed, each behind the contract so that the harness times
it as it times every backend (``bench.catalogue`` lists them)."""
