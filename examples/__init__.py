"""Ports of the contract that live outside ``impls/``: how to bring your own."""
