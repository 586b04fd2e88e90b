"""Every backend's bytes decoded on every backend: the sweeps keep each stream they make, named
by the bytes' digest, beside a checkpoint of what a receiver needs (the config, the weights
and the prior's integer tables); a backend whose own bytes differ from another's at a rate
point then decodes that one's (``decode_in_this_process``), and each ordered pair of backends
gets the SNR of the receiver's decode of the sender's bytes (``pair_snrs``). Where two
backends made the same bytes, each one's decode of its own is its decode of the other's: the
bytes name the model and the prior (their digests), so both are the same.

The streams cross in both kinds of rate point (``KINDS``): the float weights quantized after
training, the same weights on every backend, whose bytes differ only where a backend's
symbols do; and the models each backend trained with the rate term, whose weights are its
own, so that every other backend decodes them with the sender's weights.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

import frae
from apps.demo.rate_distortion import CODE_STEPS, digest, snr_db
from apps.demo.rate_term import RATE_WEIGHTS
from frae import codec
from frae.checkpoints import load_config

KINDS = {"after_training": len(CODE_STEPS), "rate_trained": len(RATE_WEIGHTS)}
"""The rate points whose bytes cross, by their key in a model's results, and how many a
backend makes of each: a backend's sweep is crossed where it is whole."""


def keep_stream(folder: Path, model: frae.Backend, data: bytes, prior: codec.Prior) -> None:
    """``data`` in ``folder``, named by the bytes' digest, beside a checkpoint of ``model``'s
    config and weights and of ``prior``."""
    folder.mkdir(parents=True, exist_ok=True)
    name = digest(data)
    (folder / f"{name}.frae").write_bytes(data)
    frae.save_checkpoint(
        folder / f"{name}.safetensors", model.get_weights(), config=model.config, prior=prior
    )


def kept_stream(folder: Path, name: str) -> tuple[bytes, frae.FRAEConfig, Any, codec.Prior]:
    """The bytes ``keep_stream`` kept as ``name``, and the config, weights and prior that
    decode them."""
    checkpoint = folder / f"{name}.safetensors"
    weights, _ = frae.load_checkpoint(checkpoint)
    prior = codec.load_prior(checkpoint)
    assert prior is not None, f"{checkpoint} holds the stream's prior"
    return (folder / f"{name}.frae").read_bytes(), load_config(checkpoint), weights, prior


def decode_in_this_process(job: dict[str, Any]) -> dict[str, Any]:
    """The worker's decoding: for each model, the bytes ``job["decode"]`` names for this
    backend (``streams_to_decode``: other backends'), decompressed by its own model of the
    kept config and weights under the kept prior; their SNR on the held-out windows by the
    bytes' digest. One model a config, its weights set for each stream."""
    with np.load(job["data"]) as data:
        test = data["test"]
    results: dict[str, Any] = {}
    for model, names in job["decode"][job["label"]].items():
        receivers: dict[str, frae.Backend] = {}
        decoded: dict[str, float] = {}
        for name in names:
            data, config, weights, prior = kept_stream(Path(job["streams"]) / model, name)
            key = json.dumps(config.to_dict(), sort_keys=True)
            if key not in receivers:
                receivers[key] = frae.create(job["backend"], config, weights=weights)
            receiver = receivers[key]
            receiver.set_weights(weights)
            decoded[name] = snr_db(test, codec.decompress(receiver, prior, data))
        results[model] = {"decoded": decoded}
    return {"models": results, "cpu_seconds": None}


def streams_to_decode(results: dict[str, Any]) -> dict[str, dict[str, list[str]]]:
    """label -> model -> the digests of the other backends' bytes, at any rate point of either
    kind, which differ from its own at that point: what it has yet to decode."""
    wanted: dict[str, dict[str, set[str]]] = {}
    for kind, count in KINDS.items():
        for model, by_label in _digests(results, kind).items():
            for index in range(count):
                made = {label: names[index] for label, names in by_label.items()}
                for label, own in made.items():
                    others = {name for name in made.values() if name != own}
                    wanted.setdefault(label, {}).setdefault(model, set()).update(others)
    return {
        label: {model: sorted(names) for model, names in by_model.items() if names}
        for label, by_model in wanted.items()
        if any(by_model.values())
    }


def _digests(results: dict[str, Any], kind: str) -> dict[str, dict[str, list[str]]]:
    """model -> label -> the digest of its bytes at each rate point of ``kind``, where it made
    every one."""
    found: dict[str, dict[str, list[str]]] = {}
    for label, result in results.items():
        for model, outcome in result["models"].items():
            if len(points := outcome.get(kind, [])) == KINDS[kind]:
                found.setdefault(model, {})[label] = [point["bytes"] for point in points]
    return found


def pair_snrs(
    results: dict[str, Any], model: str, index: int, kind: str = "after_training"
) -> dict[tuple[str, str], float]:
    """(sender, receiver) -> the SNR of the receiver's decode of the sender's bytes at the rate
    point ``index`` of ``kind``, for every ordered pair whose decode is known."""
    by_label = _digests(results, kind).get(model, {})
    pairs = {}
    for receiver, own in by_label.items():
        outcome = results[receiver]["models"][model]
        decoded = outcome.get("decoded", {})
        for sender, theirs in by_label.items():
            if theirs[index] == own[index]:
                pairs[sender, receiver] = outcome[kind][index]["snr_db"]
            elif theirs[index] in decoded:
                pairs[sender, receiver] = decoded[theirs[index]]
    return pairs


def own_snrs(results: dict[str, Any], model: str, index: int, kind: str) -> dict[str, float]:
    """sender -> the SNR of its own decode of its bytes at the rate point ``index`` of
    ``kind``: what every receiver's decode of them is measured against."""
    return {
        label: results[label]["models"][model][kind][index]["snr_db"]
        for label in _digests(results, kind).get(model, {})
    }
