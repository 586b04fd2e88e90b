"""jax_scan's artifacts: each function serialized by ``jax.export`` as a StableHLO program
with symbolic B and T, the weights baked in as constants, the time loop one ``while``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax import export

from frae.config import FRAEConfig
from frae.export import FUNCTIONS
from impls.jax_scan import model

REFUSALS = {
    "onnx": "JAX's ONNX exporter, jax2onnx (0.17.1, the latest), fails on JAX 0.12 "
    "(AttributeError: module 'jax._src.core' has no attribute 'ClosedJaxpr'), and pins "
    "orbax-checkpoint below flax's: it is not in the export extra"
}
"""Why jax_scan makes no ``onnx`` (tried in an environment of its own)."""


def exported_function(
    config: FRAEConfig, weights: Mapping[str, np.ndarray], kept: int, codes_given: bool
) -> export.Exported:
    """``unroll`` from a state, ``(sequences, state) -> (outputs, last_state)``, exported for
    any B and T; ``weights`` closed over, so they are constants of the program."""
    constants = {name: jnp.asarray(value) for name, value in weights.items()}

    def run(sequences: jax.Array, state: jax.Array) -> tuple[jax.Array, jax.Array]:
        results = model.unroll(config, constants, sequences, codes_given=codes_given, state=state)
        return results[kept], results[2]

    batch, steps = export.symbolic_shape("B, T")
    width = config.latent_dim if codes_given else config.input_dim
    return export.export(jax.jit(run))(
        jax.ShapeDtypeStruct((batch, steps, width), jnp.float32),
        jax.ShapeDtypeStruct((batch, config.feedback_dim), jnp.float32),
    )


def write_stablehlo(config: FRAEConfig, weights: Mapping[str, np.ndarray], folder: Path) -> str:
    """``{function}.bin`` for each function in ``folder/stablehlo``; returns its name."""
    target = folder / "stablehlo"
    target.mkdir()
    for name, (kept, codes_given) in FUNCTIONS.items():
        program = exported_function(config, weights, kept, codes_given)
        (target / f"{name}.bin").write_bytes(program.serialize())
    return target.name
