"""Benchmarks of the FRAE backends."""
