"""keras_rnn as one party of a byte exchange between processes
(``tests/codec/test_keras_backends.py``), in a process whose Keras runs on ``KERAS_BACKEND``.

    KERAS_BACKEND=jax python -m parity_tests.coding_worker --folder DIR [--cases swish state]

For each quantized case it compresses the case's margin-checked inputs and writes the bytes to
``DIR/<case>/keras_rnn[<Keras backend>].frae``; then it waits for a line ``go`` on stdin (every
party's bytes written by then), decompresses every other party's bytes in that folder, and
prints, as one line of JSON, ``{case: {sender: verdict}}``: ``None`` where the bytes decode to
the reference's symbols and signal, or what differs.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

import frae
from frae.codec import Prior
from parity_tests.cases import QUANTIZED
from parity_tests.test_quantized import margin_checked
from parity_tests.tolerances import assert_close

CASES = ("swish", "state")
"""The kit's coded cases (``test_coding.CODED``): output feedback and state feedback."""
SUFFIX = ".frae"


@dataclass(frozen=True)
class Party:
    """Who makes and reads bytes: ``backend`` in the test's own process, or, with
    ``keras_backend``, keras_rnn in a process of its own whose Keras runs on it."""

    backend: str
    keras_backend: str | None = None

    def __str__(self) -> str:
        return f"{self.backend}[{self.keras_backend}]" if self.keras_backend else self.backend


@dataclass(frozen=True)
class Coded:
    """A quantized case's weights and inputs (``margin_checked``), the prior of the reference's
    symbols on them (as ``test_coding.coded`` makes it), and what every decode must give: the
    reference's symbols and its decode of them."""

    config: frae.FRAEConfig
    weights: dict[str, np.ndarray]
    x: np.ndarray
    prior: Prior
    symbols: np.ndarray
    decoded: np.ndarray


def coded(case: str) -> Coded:
    """The quantized case ``case`` made ready to code; the same in every process."""
    config = QUANTIZED[case].config
    assert config.code_step is not None
    weights, x = margin_checked(QUANTIZED[case])
    oracle = frae.create("reference", config, weights=weights)
    codes = oracle.encode(x)
    symbols = frae.codec.symbols(codes, config.code_step)
    prior = frae.codec.fit_prior(oracle, x)
    return Coded(config, weights, x, prior, symbols, oracle.decode(codes))


def bytes_path(folder: Path, case: str, party: Party) -> Path:
    return folder / case / f"{party}{SUFFIX}"


def write_bytes(path: Path, data: bytes) -> None:
    """``data`` at ``path``, which appears whole or not at all (a reader polls for it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(path.name + ".part")
    partial.write_bytes(data)
    os.replace(partial, path)


def verdict(receiver: frae.Backend, coded: Coded, data: bytes) -> str | None:
    """``None`` if ``read`` gives the reference's symbols exactly and ``decompress`` on
    ``receiver`` its decode of them within the float32 tolerances; else what differs."""
    try:
        np.testing.assert_array_equal(frae.codec.read(coded.prior, data), coded.symbols, "symbols")
        rebuilt = frae.codec.decompress(receiver, coded.prior, data)
        assert_close("outputs", rebuilt, coded.decoded, "decompress")
    except (AssertionError, ValueError) as error:  # a ValueError: the bytes refused
        return f"{type(error).__name__}: {error}"
    return None


def read_others(
    folder: Path, case: str, me: Party, model: frae.Backend, ready: Coded
) -> dict[str, str | None]:
    """The verdict on each other party's bytes of ``case`` in ``folder``, decompressed on
    ``model``, by sender."""
    others = sorted(set((folder / case).glob(f"*{SUFFIX}")) - {bytes_path(folder, case, me)})
    return {path.stem: verdict(model, ready, path.read_bytes()) for path in others}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--folder", type=Path, required=True)
    parser.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES))
    args = parser.parse_args()
    import keras  # here: the test imports this module's helpers on its own Keras

    me = Party("keras_rnn", keras.backend.backend())
    asked = os.environ.get("KERAS_BACKEND", me.keras_backend)
    assert me.keras_backend == asked, f"KERAS_BACKEND={asked}, yet Keras runs on {me.keras_backend}"
    ready = {case: coded(case) for case in args.cases}
    models = {
        case: frae.create(me.backend, c.config, weights=c.weights) for case, c in ready.items()
    }
    for case, model in models.items():
        data = frae.codec.compress(model, ready[case].prior, ready[case].x)
        write_bytes(bytes_path(args.folder, case, me), data)
    if (line := sys.stdin.readline().strip()) != "go":
        sys.exit(f"coding_worker: expected 'go' on stdin once every party wrote, got {line!r}")
    report = {case: read_others(args.folder, case, me, models[case], ready[case]) for case in ready}
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
