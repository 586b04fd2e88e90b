"""Kernels per time step: the operations in each loop body of the XLA programs behind
``tf_while`` and ``jax_scan``, read from the optimized HLO.

XLA on CPU runs every fusion, dot and copy of a ``while`` body as a call of its own at each
iteration; at B=1 such a call does a few dozen flops, so the calls per time step, not the
arithmetic, set the cost per step. A loop XLA folds (``frae.routes``) runs as one function,
its kernels inlined; the last column counts those. ``docs/performance.md`` reads the counts.

    python -m bench.kernels [--batch B] [--steps T] [--backends tf_while jax_scan]
                            [--config JSON_OR_FILE]
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from collections.abc import Callable

import numpy as np

import frae

BOOKKEEPING = frozenset({"get-tuple-element", "constant", "parameter", "tuple", "bitcast"})
"""HLO instructions that launch no work: they name buffers or parts of tuples."""

_COMPUTATION = re.compile(r"^(?:ENTRY )?%?([\w.\-]+) \(", re.MULTILINE)
_BODY = re.compile(r"\bbody=%?([\w.\-]+)")
_OPCODE = re.compile(r"^\s*(?:ROOT )?%?[\w.\-]+ = .*?\s([a-z][\w\-]*)\(", re.MULTILINE)


def computations(hlo: str) -> dict[str, str]:
    """HLO module text -> the text of each computation by name."""
    starts = [(m.start(), m.group(1)) for m in _COMPUTATION.finditer(hlo)]
    ends = [start for start, _ in starts[1:]] + [len(hlo)]
    return {name: hlo[start:end] for (start, name), end in zip(starts, ends, strict=True)}


def loop_bodies(hlo: str) -> list[str]:
    """The text of each ``while`` loop's body computation, in the module's order."""
    by_name = computations(hlo)
    return [by_name.get(body, "") for body in _BODY.findall(hlo)]


def loop_kernels(hlo: str) -> list[Counter[str]]:
    """Per ``while`` loop of the module, in order: its body's instructions that do work, by
    opcode (``fusion``, ``dot``, ``copy``, ...)."""
    return [
        Counter(op for op in _OPCODE.findall(body) if op not in BOOKKEEPING)
        for body in loop_bodies(hlo)
    ]


FOLDED = 'xla_cpu_small_call="true"'
"""The attribute XLA:CPU's loop folding (``frae.routes.LOOP_FOLDING``) puts on the call that
replaces a hoisted ``while``."""


_PARAMETER = re.compile(r"^%?[\w.\-]+ \(([\w.\-]+):")
_ROOT_TUPLE = re.compile(r"ROOT %?[\w.\-]+ = \((.*?)\) tuple\(([^)]*)\)")
_SHAPE = re.compile(r"[a-z]+\d*\[[\d,]*\]")


def loop_carries(hlo: str) -> list[list[str]]:
    """Per ``while`` loop of the module, in order: the shapes of the parts of its state that
    its body changes, those it passes on as it got them (element i of its parameter back at
    place i of its root tuple) left out."""
    carries = []
    for body in loop_bodies(hlo):
        parameter, root = _PARAMETER.match(body), _ROOT_TUPLE.search(body)
        assert parameter is not None and root is not None, body[:2000]
        element = (
            rf"%?([\w.\-]+) = \S+ get-tuple-element\(%?{re.escape(parameter[1])}\), index=(\d+)"
        )
        passed_on = {name: int(index) for name, index in re.findall(element, body)}
        shapes = _SHAPE.findall(root[1])
        listed = re.sub(r"/\*.*?\*/", "", root[2])  # long tuples number some operands
        operands = [name.strip().lstrip("%") for name in listed.split(",")]
        assert len(shapes) == len(operands), root[0][:2000]
        pairs = enumerate(zip(shapes, operands, strict=True))
        carries.append([shape for index, (shape, name) in pairs if passed_on.get(name) != index])
    return carries


def folded_loops(hlo: str) -> int:
    """How many of the module's ``while`` loops run as one compiled function each."""
    return hlo.count(FOLDED)


def time_long_copies(hlo: str, steps: int) -> list[str]:
    """The shapes of the arrays T = ``steps`` long that a loop body copies: at every
    iteration, work proportional to T (what differentiating through a stacked sequence of
    outputs makes XLA do; pick a ``steps`` that no other axis has)."""
    copy = re.compile(rf"= (f32\[{steps},[^\]]*\])\S* copy\(")
    return [shape for body in loop_bodies(hlo) for shape in copy.findall(body)]


Programs = dict[str, tuple[str, int]]
"""operation -> (optimized HLO, time steps per loop iteration)."""


def jax_scan_programs(config: frae.FRAEConfig, x: np.ndarray) -> Programs:
    """jax_scan's predict, loss_and_grads and Adam step on ``x``; unless a gradient recomputes
    each step (``train.recomputes``: output feedback from ``REMAT_MIN_BATCH`` sequences), its
    scans run ``GRADIENT_UNROLL`` steps per iteration."""
    from impls.jax_scan import JaxScanBackend, train

    jax_backend = JaxScanBackend(config)
    compiled, weights = jax_backend.compiled, jax_backend.params
    state = compiled.optimizer_inits["adam"](weights)
    lowered = {
        "predict": compiled.predict.lower(jax_backend.packed, x, jax_backend.initial_state(len(x))),
        "loss_and_grads": compiled.loss_and_grads.lower(weights, x, x),
        "train_step": compiled.train_steps["adam"].lower(weights, state, np.float32(1e-3), x, x),
    }
    gradient = 1 if train.recomputes(config, len(x)) else train.GRADIENT_UNROLL
    programs: Programs = {}
    for name, program in lowered.items():
        hlo = program.compile().as_text()
        if hlo is None:
            raise RuntimeError(f"jax_scan's {name}: this JAX platform gives no compiled HLO text")
        programs[name] = (hlo, 1 if name == "predict" else gradient)
    return programs


def tf_while_programs(config: frae.FRAEConfig, x: np.ndarray) -> Programs:
    """tf_while's predict, loss_and_grads and Adam step on ``x``, one step per iteration."""
    from impls.tf_while import TFWhileBackend
    from impls.tf_while.model import tf

    backend = TFWhileBackend(config)
    functions, variables = backend.compiled, backend.variables
    x_tensor, rate = tf.constant(x), tf.constant(1e-3)
    arguments = {
        "predict": (x_tensor, tf.zeros([x.shape[0], config.feedback_dim])),
        "loss_and_grads": (x_tensor, x_tensor),
        "train_step": (backend.optimizer_slots, x_tensor, x_tensor, rate),
    }
    names = {"predict": "predict", "loss_and_grads": "loss_and_grads", "train_step": "adam"}
    return {
        operation: (
            functions[names[operation]].experimental_get_compiler_ir(config, variables, *args)(
                stage="optimized_hlo"
            ),
            1,
        )
        for operation, args in arguments.items()
    }


PROGRAMS: dict[str, Callable[[frae.FRAEConfig, np.ndarray], Programs]] = {
    "tf_while": tf_while_programs,
    "jax_scan": jax_scan_programs,
}


def describe(loops: list[Counter[str]], steps_per_iteration: int = 1) -> str:
    """'25 (fusion 24, copy 1) + 22 (...)': each loop's kernels per iteration, and their
    sum per time step."""
    parts = " + ".join(
        f"{sum(kinds.values())} ({', '.join(f'{op} {n}' for op, n in kinds.most_common())})"
        for kinds in loops
    )
    per_step = sum(sum(kinds.values()) for kinds in loops) / steps_per_iteration
    unrolled = f" per {steps_per_iteration} steps" if steps_per_iteration > 1 else ""
    return f"{parts}{unrolled}: {per_step:.1f} per time step"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--backends", nargs="+", choices=sorted(PROGRAMS), default=list(PROGRAMS))
    parser.add_argument("--config", metavar="JSON_OR_FILE", help="a model other than the default")
    args = parser.parse_args(argv)
    from bench.grid import model_label, read_config

    try:
        config = read_config(args.config) if args.config else frae.FRAEConfig()
    except (ValueError, TypeError) as error:
        parser.error(str(error))
    x = frae.data.multi_sine(batch=args.batch, steps=args.steps, features=config.input_dim)
    label = "default config" if args.config is None else f"model {model_label(config)}"
    print(f"{label}, B={args.batch}, T={args.steps}: kernels per loop iteration")
    for backend in args.backends:
        for operation, (hlo, steps) in PROGRAMS[backend](config, x).items():
            loops = loop_kernels(hlo)
            folded = f"; {folded_loops(hlo)} of {len(loops)} loops folded into one call"
            print(f"{backend:<9} {operation:<15} {describe(loops, steps)}{folded}")


if __name__ == "__main__":
    main()
