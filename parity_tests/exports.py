"""What the export tests run: the requests an artifact answers in a process of its own, the
reference's answers to them, and the count of loops in an artifact (the contract's
"Exports")."""

from __future__ import annotations

import functools
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np

import frae
from frae import runtimes
from parity_tests.cases import Case

FORBIDDEN = ("frae", "flax", "optax", "keras")
"""Modules the artifact's process must not import: only its runtime runs it."""
SHAPES = ((3, 7), (1, 12))
"""(B, T) of the whole-sequence requests: two of each from one artifact."""
CUTS = (3, 4)
"""Where the streamed request cuts its sequence of 7: chunks of 3, 1 and 3 steps."""

Request = tuple[str, np.ndarray, np.ndarray]
"""(function, sequences, state) of one call."""


def requests(case: Case, oracle: Any) -> dict[str, Request]:
    """Each call the artifact answers, by key: every function at each of ``SHAPES`` from a
    state that is not zero, and predict's chunks of one sequence batch."""
    config, found = case.config, {}
    rng = np.random.default_rng(41)
    for batch, steps in SHAPES:
        x = rng.uniform(-1, 1, (batch, steps, config.input_dim)).astype(np.float32)
        _, state = oracle.predict(x[:, ::-1], return_state=True)  # another sequence's end
        state = state.astype(np.float32)
        codes = oracle.encode(x, state=state).astype(np.float32)
        for function, sequences in (("predict", x), ("encode", x), ("decode", codes)):
            found[f"{function} B={batch} T={steps}"] = (function, sequences, state)
    x = rng.uniform(-1, 1, (3, 7, config.input_dim)).astype(np.float32)
    state = np.zeros((3, config.feedback_dim), np.float32)
    for index, chunk in enumerate(np.split(x, CUTS, axis=1)):
        found[f"chunk {index}"] = ("predict", chunk, state)
        _, state = oracle.predict(chunk, state=state, return_state=True)
        state = state.astype(np.float32)
    return found


def expected(oracle: Any, asked: dict[str, Request]) -> dict[str, tuple[np.ndarray, ...]]:
    """The reference's outputs and last state for each request."""
    return {
        key: getattr(oracle, function)(sequences, state=state, return_state=True)
        for key, (function, sequences, state) in asked.items()
    }


def run_in_own_process(artifact: Path, asked: dict[str, Request], folder: Path) -> dict:
    """Each request run on ``artifact`` by ``frae/runtimes.py`` as a script in a fresh
    process (``-P``: ``frae`` is not on its path); the answers by key, and the top-level
    modules the process imported beyond those its runtime's import alone brings."""
    request_file, results_file = folder / "requests.npz", folder / "results.npz"
    arrays = {}
    for key, (function, sequences, state) in asked.items():
        arrays[f"{key}:{function}:sequences"], arrays[f"{key}:{function}:state"] = sequences, state
    np.savez(request_file, **arrays)
    files = [runtimes.__file__, artifact, request_file, results_file]
    command = [sys.executable, "-P", *map(str, files)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, f"the artifact's process failed:\n{done.stderr[-3000:]}"
    with np.load(results_file) as found:
        answers = {key: (found[f"{key}:outputs"], found[f"{key}:last_state"]) for key in asked}
        modules = set(found["modules"].tolist())
    runtime = runtimes.RUNTIMES[runtimes.read_manifest(artifact)["format"]]
    return {"answers": answers, "modules": modules - modules_of_importing(runtime)}


@functools.cache
def modules_of_importing(runtime: str) -> frozenset[str]:
    """The top-level modules a fresh process holds after ``import runtime`` alone (TensorFlow
    imports Keras' optimizers whenever Keras is installed)."""
    probe = f"import sys, {runtime}; print(*{{m.partition('.')[0] for m in sys.modules}})"
    done = subprocess.run(
        [sys.executable, "-P", "-c", probe], capture_output=True, text=True, timeout=300, check=True
    )
    return frozenset(done.stdout.split())


def loops(artifact: Path) -> int:
    """How many time loops the artifact holds (``While``, ``Loop`` or ``Scan`` ops), read from
    its files by the format's own tools."""
    manifest = runtimes.read_manifest(artifact)
    return LOOP_COUNTERS[manifest["format"]](artifact / manifest["file"])


def _saved_model_loops(path: Path) -> int:
    from tensorflow.core.protobuf import saved_model_pb2

    saved = saved_model_pb2.SavedModel.FromString((path / "saved_model.pb").read_bytes())
    graph = saved.meta_graphs[0].graph_def
    nodes = [*graph.node, *(n for f in graph.library.function for n in f.node_def)]
    return sum(node.op in ("While", "StatelessWhile") for node in nodes)


def _litert_loops(path: Path) -> int:
    from ai_edge_litert import schema_py_generated as schema

    model = schema.ModelT.InitFromPackedBuf(path.read_bytes(), 0)
    codes = [code.builtinCode for code in model.operatorCodes]
    operators = (op for graph in model.subgraphs for op in graph.operators)
    return sum(codes[op.opcodeIndex] == schema.BuiltinOperator.WHILE for op in operators)


def _stablehlo_loops(path: Path) -> int:
    from jax import export

    programs = (export.deserialize(bytearray(f.read_bytes())) for f in path.glob("*.bin"))
    return sum(program.mlir_module().count("stablehlo.while") for program in programs)


def _onnx_loops(path: Path) -> int:
    import onnx

    graphs = (onnx.load(str(file)).graph for file in path.glob("*.onnx"))
    return sum(node.op_type in ("Loop", "Scan") for graph in graphs for node in graph.node)


LOOP_COUNTERS = {
    "saved_model": _saved_model_loops,
    "litert": _litert_loops,
    "stablehlo": _stablehlo_loops,
    "onnx": _onnx_loops,
}


def formats_of(model: frae.Backend) -> tuple[str, ...]:
    """The formats ``model`` lists (none for a backend that predates the contract's "Exports")."""
    return tuple(getattr(model, "export_formats", ()))
