"""The float64 NumPy reference: slow, exact, the oracle for every other backend."""

from impls.reference.backend import ReferenceBackend

__all__ = ["ReferenceBackend"]
