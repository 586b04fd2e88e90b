"""``jax_scan`` with its StableHLO exporter broken on purpose (the contract's "Exports"), one
realistic mistake each; ``CorrectlyExported``, the exporter unchanged, is their control."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np
from jax import export

from frae.config import FRAEConfig
from frae.params import Weights
from impls.jax_scan import export as jax_export
from impls.jax_scan import model
from impls.jax_scan.backend import JaxScanBackend

Run = Callable[[jax.Array, jax.Array], tuple[jax.Array, jax.Array]]


class CorrectlyExported(JaxScanBackend):
    """The control: jax_scan's exporter as it is."""

    breaks: ClassVar[str] = "exports"


class WeightsFromCreation(CorrectlyExported):
    """Exports the weights the model was created with, not those it holds now (an exporter
    that rebuilds the model from its constructor's arguments)."""

    def _build(self, weights: Weights) -> None:
        super()._build(weights)
        self.created_with = {name: np.array(value) for name, value in weights.items()}

    def _export(self, format: str, folder: Path) -> str:
        return jax_export.write_stablehlo(self.config, self.created_with, folder)


def _write(
    folder: Path, config: FRAEConfig, runs: Mapping[str, Run], batch: Any, steps: Any
) -> str:
    """Each of ``runs`` exported for sequences of ``(batch, steps, ·)`` into ``folder``."""
    target = folder / "stablehlo"
    target.mkdir()
    for name, run in runs.items():
        program = export.export(jax.jit(run))(*_specs(config, name, batch, steps))
        (target / f"{name}.bin").write_bytes(program.serialize())
    return target.name


def _runs(config: FRAEConfig, weights: Mapping[str, Any], **unroll: Any) -> dict[str, Run]:
    """Each function as ``(sequences, state) -> (outputs, last)`` with ``unroll``'s options;
    ``state=None`` among them drops the state given."""
    constants = {name: jnp.asarray(value) for name, value in weights.items()}

    def run_of(kept: int, codes_given: bool) -> Run:
        def run(sequences: jax.Array, state: jax.Array) -> tuple[jax.Array, jax.Array]:
            options = {"state": state, **unroll}
            results = model.unroll(config, constants, sequences, codes_given=codes_given, **options)
            return results[kept], results[2]

        return run

    return {name: run_of(*how) for name, how in jax_export.FUNCTIONS.items()}


class StateInputIgnored(CorrectlyExported):
    """Every exported function starts from zeros: the state is an input of the program's
    signature that its loop never reads."""

    def _export(self, format: str, folder: Path) -> str:
        runs = _runs(self.config, self._read_weights(), state=None)
        return _write(folder, self.config, runs, *export.symbolic_shape("B, T"))


class UnrolledForOneT(CorrectlyExported):
    """Exported at the T of one example, the scan unrolled into T copies of the cell: the
    program runs no other T, and grows with the T it was made for."""

    steps: ClassVar[int] = 7

    def _export(self, format: str, folder: Path) -> str:
        runs = _runs(self.config, self._read_weights(), steps_per_iteration=self.steps)
        (batch,) = export.symbolic_shape("B")
        return _write(folder, self.config, runs, batch, self.steps)


def _specs(config: FRAEConfig, function: str, batch: Any, steps: Any) -> list[Any]:
    width = config.latent_dim if function == "decode" else config.input_dim
    return [
        jax.ShapeDtypeStruct((batch, steps, width), jnp.float32),
        jax.ShapeDtypeStruct((batch, config.feedback_dim), jnp.float32),
    ]


MUTANTS = [WeightsFromCreation, StateInputIgnored, UnrolledForOneT]
