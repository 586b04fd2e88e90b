"""torch_scan's artifacts: each function exported by ``torch.export`` (the time loop the scan
operator, B and T dynamic) and translated to ONNX by ``torch.onnx.export(dynamo=True)``,
where the scan becomes one ONNX ``Scan``; the weights are initializers of the graph."""

from __future__ import annotations

import contextlib
import io
import logging
import warnings
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import torch
from torch import nn

from frae.config import FRAEConfig
from frae.export import FUNCTIONS
from impls.torch_scan import model

# the exporter's notice, at each export, that torchvision's operators are not installed
logging.getLogger("torch.onnx._internal.exporter._registration").setLevel(logging.ERROR)


class Function(nn.Module):
    """``(sequences, state) -> (outputs, last_state)`` of one function, on a copy of the
    weights."""

    def __init__(
        self, config: FRAEConfig, weights: Mapping[str, np.ndarray], kept: int, codes_given: bool
    ) -> None:
        super().__init__()
        self.inner = model.module_for(config)
        model.load_canonical(self.inner, weights)
        self.config, self.kept, self.codes_given = config, kept, codes_given
        self.eval()

    def forward(self, sequences: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, ...]:
        results = model.unroll(
            self.config, self.inner, sequences, codes_given=self.codes_given, state=state
        )
        return results[self.kept], results[2]


def example_inputs(config: FRAEConfig, codes_given: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Inputs to trace with: B = 2, T = 3, so that neither size is taken for a constant."""
    width = config.latent_dim if codes_given else config.input_dim
    return torch.zeros(2, 3, width), torch.zeros(2, config.feedback_dim)


def dynamic_shapes() -> dict[str, dict[int, torch.export.Dim]]:
    batch, steps = torch.export.Dim("B", min=1), torch.export.Dim("T", min=1)
    return {"sequences": {0: batch, 1: steps}, "state": {0: batch}}


def write_onnx(config: FRAEConfig, weights: Mapping[str, np.ndarray], folder: Path) -> str:
    """``{function}.onnx`` for each function in ``folder/onnx``; returns its name."""
    target = folder / "onnx"
    target.mkdir()
    for name, (kept, codes_given) in FUNCTIONS.items():
        quiet = io.StringIO()  # the exporter reports each of its passes on stdout
        with torch.no_grad(), contextlib.redirect_stdout(quiet), warnings.catch_warnings():
            # B names the batch of both inputs, which the exporter notes it merges
            warnings.filterwarnings("ignore", "# The axis name: B will not be used")
            program = torch.onnx.export(
                Function(config, weights, kept, codes_given),
                example_inputs(config, codes_given),
                dynamo=True,
                input_names=["sequences", "state"],
                output_names=["outputs", "last_state"],
                dynamic_shapes=dynamic_shapes(),
                verbose=False,
            )
        assert program is not None
        program.save(str(target / f"{name}.onnx"))
    return target.name


WRITERS = {"onnx": write_onnx}
AOTI_REFUSAL = (
    "AOTInductor cannot compile the scan over a symbolic T: torch.export makes the program, "
    "and aoti_compile_and_package fails lowering the scan to a while loop (InductorError: "
    "KeyError on T's symbol in post_grad.lower_to_while_loop); no upstream issue found"
)
"""Why torch_scan makes no ``pt2``; ``tests/test_torch_scan.py`` keeps trying."""


def aoti_package(config: FRAEConfig, weights: Mapping[str, np.ndarray], path: Path) -> str:
    """The ``pt2`` package of ``predict`` through AOTInductor, for any B and T: what the
    refusal above says fails (the test that pins the refusal calls it)."""
    function = Function(config, weights, 0, False)
    with torch.no_grad():
        program = torch.export.export(
            function, example_inputs(config, False), dynamic_shapes=dynamic_shapes()
        )
    return str(torch._inductor.aoti_compile_and_package(program, package_path=str(path)))
