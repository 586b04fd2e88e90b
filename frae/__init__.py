"""FRAE: one feedback recurrent autoencoder, many frameworks, one contract (docs/contract.md).

Importing this package imports NumPy and nothing else; each backend's framework is imported
only when that backend is created.
"""

from frae import codec, data
from frae.backend import BaseBackend, TrainingDiverged
from frae.checkpoints import load_checkpoint, save_checkpoint
from frae.config import ACTIVATIONS, FRAEConfig, Layer
from frae.export import FORMATS, export
from frae.exported import ExportedModel, load_exported
from frae.optimizers import ADAM, OPTIMIZERS, AdamSpec
from frae.params import initial_weights, load_weights, save_weights
from frae.protocol import Backend
from frae.registry import available_backends, create, installed_backends, unavailable_reason
from frae.training_state import TrainingState

__all__ = [
    "ACTIVATIONS",
    "ADAM",
    "FORMATS",
    "OPTIMIZERS",
    "AdamSpec",
    "Backend",
    "BaseBackend",
    "ExportedModel",
    "FRAEConfig",
    "Layer",
    "TrainingDiverged",
    "TrainingState",
    "available_backends",
    "codec",
    "create",
    "data",
    "export",
    "initial_weights",
    "installed_backends",
    "load_checkpoint",
    "load_exported",
    "load_weights",
    "save_checkpoint",
    "save_weights",
    "unavailable_reason",
]
