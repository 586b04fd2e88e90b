"""Every backend's bytes decoded on every backend: the sweep keeps each stream it makes, with
its prior, named by the bytes' digest; a backend whose own bytes differ from another's at a
Δ then decodes that one's (``decode_in_this_process``), and each ordered pair of backends gets
the SNR of the receiver's decode of the sender's bytes (``pair_snrs``). Where two backends made
the same bytes, each one's decode of its own is its decode of the other's: the bytes, the prior
they name and the model are the same."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np

import frae
from apps.demo.rate_distortion import CODE_STEPS, digest, snr_db
from frae import codec
from frae.config import FRAEConfig

KIND = "after_training"
"""The rate points whose bytes cross: the float weights quantized after training, the same
weights on every backend."""


def keep_stream(folder: Path, data: bytes, prior: codec.Prior) -> None:
    """``data`` and its ``prior`` in ``folder``, named by the bytes' digest."""
    folder.mkdir(parents=True, exist_ok=True)
    name = digest(data)
    (folder / f"{name}.frae").write_bytes(data)
    np.savez(
        folder / f"{name}.npz",
        step=prior.step,
        lo=prior.lo,
        frequencies=prior.frequencies,
        precision=prior.precision,
    )


def kept_stream(folder: Path, name: str) -> tuple[bytes, codec.Prior]:
    """The bytes ``keep_stream`` kept as ``name``, and their prior."""
    with np.load(folder / f"{name}.npz") as fields:
        prior = codec.Prior(
            float(fields["step"]), fields["lo"], fields["frequencies"], int(fields["precision"])
        )
    return (folder / f"{name}.frae").read_bytes(), prior


def decode_in_this_process(job: dict[str, Any]) -> dict[str, Any]:
    """The worker's decoding: for each model and Δ, the bytes ``job["decode"]`` names for this
    backend (``streams_to_decode``: other backends'), decompressed by its quantized model with
    the same float weights; their SNR on the held-out windows by the bytes' digest."""
    with np.load(job["data"]) as data:
        test = data["test"]
    results: dict[str, Any] = {}
    for model, by_step in job["decode"][job["label"]].items():
        weights = frae.load_weights(job["trained"][model])
        config = FRAEConfig.from_dict(job["models"][model])
        decoded: dict[str, dict[str, float]] = {}
        for index, names in by_step.items():
            quantized = dataclasses.replace(config, code_step=CODE_STEPS[int(index)])
            receiver = frae.create(job["backend"], quantized, weights=weights)
            decoded[index] = {}
            for name in names:
                data, prior = kept_stream(Path(job["streams"]) / model, name)
                decoded[index][name] = snr_db(test, codec.decompress(receiver, prior, data))
        results[model] = {"decoded": decoded}
    return {"models": results, "cpu_seconds": None}


def streams_to_decode(results: dict[str, Any]) -> dict[str, dict[str, dict[str, list[str]]]]:
    """label -> model -> Δ's index -> the digests of the other backends' bytes at that Δ
    which differ from its own: what it has yet to decode."""
    wanted: dict[str, dict[str, dict[str, list[str]]]] = {}
    for model, by_label in _digests(results).items():
        for index in range(len(CODE_STEPS)):
            made = {label: names[index] for label, names in by_label.items()}
            for label, own in made.items():
                others = sorted({name for name in made.values() if name != own})
                if others:
                    wanted.setdefault(label, {}).setdefault(model, {})[str(index)] = others
    return wanted


def _digests(results: dict[str, Any]) -> dict[str, dict[str, list[str]]]:
    """model -> label -> the digest of its bytes at each Δ, where it swept every Δ."""
    found: dict[str, dict[str, list[str]]] = {}
    for label, result in results.items():
        for model, outcome in result["models"].items():
            if len(points := outcome.get(KIND, [])) == len(CODE_STEPS):
                found.setdefault(model, {})[label] = [point["bytes"] for point in points]
    return found


def pair_snrs(results: dict[str, Any], model: str, index: int) -> dict[tuple[str, str], float]:
    """(sender, receiver) -> the SNR of the receiver's decode of the sender's bytes at the Δ
    of ``index``, for every ordered pair whose decode is known."""
    by_label = _digests(results).get(model, {})
    pairs = {}
    for receiver, own in by_label.items():
        outcome = results[receiver]["models"][model]
        decoded = outcome.get("decoded", {}).get(str(index), {})
        for sender, theirs in by_label.items():
            if theirs[index] == own[index]:
                pairs[sender, receiver] = outcome[KIND][index]["snr_db"]
            elif theirs[index] in decoded:
                pairs[sender, receiver] = decoded[theirs[index]]
    return pairs
