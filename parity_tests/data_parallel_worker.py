"""One process of a data-parallel parity run (``test_data_parallel.py``).

    python -m parity_tests.data_parallel_worker --backend NAME_OR_PATH --framework jax \\
        --devices 4 --cpu-devices 4 --out run.json [--processes 2 --process-id 0 \\
        --coordinator localhost:PORT] [--models output]

For each model it trains the same weights on the same data on one device (in the first
process only) and on ``--devices``, and writes both runs, and the contract's errors, to
``--out`` as JSON.
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Mapping
from typing import Any

import numpy as np

import frae
from frae.devices import create_in, start_devices
from frae.registry import _load

SEQUENCES, STEPS = 16, 24
"""The data: 16 sequences, mini-batches of 8 (all split over 1, 2, 4 or 8 devices)."""
MODELS = {
    "output": frae.FRAEConfig(),
    "state": frae.FRAEConfig(feedback="state", state_dim=8, code_step=2**-5),
    "rate": frae.FRAEConfig(latent_dim=2, code_step=2**-6, rate_weight=0.05),
}
"""The kit's cases "default", quantized "state" and rate "output": the quantized codes'
straight-through gradient, and the rate's and the prior's, are reduced over the devices like
any other."""


def _lists(arrays: Mapping[str, Any]) -> dict[str, Any]:
    """A mapping of names to arrays as JSON: the same names to nested lists."""
    return {name: value.tolist() for name, value in arrays.items()}


def train(model: frae.Backend, x: np.ndarray) -> dict[str, Any]:
    """Two SGD steps, four Adam steps over shuffled mini-batches and two more resumed from
    their training state; the results, and Adam's moments after."""
    sgd = model.fit(x, batch_size=8, optimizer="sgd", learning_rate=0.5)["loss"]
    options = {"batch_size": 8, "shuffle": True, "seed": 3, "learning_rate": 1e-2}
    adam = model.fit(x, epochs=2, **options)
    resumed = model.fit(x, **options, training_state=adam["training_state"])
    state = resumed["training_state"]
    return {
        "loss": sgd + adam["loss"] + resumed["loss"],
        "weights": _lists(model.get_weights()),
        "predict": model.predict(x).tolist(),
        "m": _lists(state.m),
        "v": _lists(state.v),
        "counts": [state.step, state.epoch],
    }


def refusal(call: Any) -> str | None:
    """The message of the ``ValueError`` ``call()`` raises, or ``None`` if it raises none."""
    try:
        call()
    except ValueError as error:
        return str(error)
    return None


def runs(
    context: Any, backend: str, model: frae.Backend, devices: int, x: Any, *, with_one: bool
) -> dict[str, Any]:
    """``model`` (on ``devices``) trained, and with ``with_one`` its twin on one device
    trained alike; the errors."""
    start_weights = model.get_weights()
    result: dict[str, Any] = {"many": train(model, x)}
    if with_one:
        result["one"] = train(frae.create(backend, model.config, weights=start_weights), x)
    model.set_weights(start_weights)
    result["uneven"] = refusal(lambda: model.fit(x, batch_size=devices + 1))
    after = model.get_weights()
    result["uneven_kept_weights"] = all(
        np.array_equal(after[name], start_weights[name]) for name in after
    )
    result["too_many"] = refusal(
        lambda: create_in(context, backend, config=model.config, devices=devices * 64)
    )
    return result


PROCESS_SETUP = "FRAE_KIT_PROCESS_SETUP"
"""An environment variable naming a function (``package.module:function``) that each worker
calls once its framework has started (``parity_tests/README.md``)."""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--backend", required=True)
    parser.add_argument("--framework", required=True)
    parser.add_argument("--devices", type=int, required=True)
    parser.add_argument("--cpu-devices", type=int)
    parser.add_argument("--processes", type=int, default=1)
    parser.add_argument("--process-id", type=int, default=0)
    parser.add_argument("--coordinator")
    parser.add_argument("--out", required=True)
    parser.add_argument("--models", nargs="+", choices=MODELS, default=list(MODELS))
    args = parser.parse_args()
    context = start_devices(
        args.framework,
        cpu_devices=args.cpu_devices,
        processes=args.processes,
        process_id=args.process_id,
        coordinator=args.coordinator,
    )
    if setup := os.environ.get(PROCESS_SETUP):
        _load(setup)()
    x = frae.data.multi_sine(SEQUENCES, STEPS, seed=7)
    result: dict[str, Any] = {}
    for label in args.models:
        config = MODELS[label]
        try:
            model = create_in(context, args.backend, config=config, devices=args.devices)
        except ValueError as error:
            result = {"refused": str(error)}
            break
        # the one-device run is the same in every process: the first one makes it
        with_one = args.process_id == 0
        result[label] = runs(context, args.backend, model, args.devices, x, with_one=with_one)
    with open(args.out, "w") as file:
        json.dump(result, file)


if __name__ == "__main__":
    main()
