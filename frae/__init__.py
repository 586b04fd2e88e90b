"""FRAE: one feedback recurrent autoencoder, many frameworks, one contract (SPEC.md).

Importing this package imports NumPy and nothing else; each backend's framework is imported
only when that backend is created.
"""

from frae import data
from frae.backend import Backend, BaseBackend
from frae.config import ACTIVATIONS, FRAEConfig
from frae.params import initial_weights, load_weights, save_weights
from frae.registry import available_backends, create, installed_backends, unavailable_reason

__all__ = [
    "ACTIVATIONS",
    "Backend",
    "BaseBackend",
    "FRAEConfig",
    "available_backends",
    "create",
    "data",
    "initial_weights",
    "installed_backends",
    "load_weights",
    "save_weights",
    "unavailable_reason",
]
