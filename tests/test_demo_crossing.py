"""``apps.demo.crossing``: each backend's bytes decoded on every other, where they differ."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import frae
from apps.demo import crossing, settings
from apps.demo.rate_distortion import CODE_STEPS, digest, snr_db
from frae import codec

pytest.importorskip("constriction")

STEPS = len(CODE_STEPS)


def _swept(names: list[str], snrs: list[float]) -> dict[str, Any]:
    points = [{"bytes": name, "snr_db": snr} for name, snr in zip(names, snrs, strict=True)]
    return {"models": {"output": {crossing.KIND: points}}, "seconds": 1.0}


def test_a_backend_decodes_the_bytes_unlike_its_own_and_every_pair_gets_its_snr() -> None:
    """Three backends agree at every Δ but the last, where c's bytes differ: a and b decode
    c's, c decodes theirs; each pair whose bytes agree takes the receiver's own SNR."""
    same = [f"same{index}" for index in range(STEPS)]
    results = {
        "a": _swept(same, [1.0] * STEPS),
        "b": _swept(same, [2.0] * STEPS),
        "c": _swept([*same[:-1], "other"], [3.0] * STEPS),
        "d": {"models": {"output": {"error": "failed"}}},
    }
    last = str(STEPS - 1)
    assert crossing.streams_to_decode(results) == {
        "a": {"output": {last: ["other"]}},
        "b": {"output": {last: ["other"]}},
        "c": {"output": {last: [same[-1]]}},
    }
    assert crossing.pair_snrs(results, "output", 0) == {
        (sender, receiver): snr for receiver, snr in (("a", 1.0), ("b", 2.0), ("c", 3.0))
        for sender in "abc"
    }  # fmt: skip
    results["a"]["models"]["output"]["decoded"] = {last: {"other": 4.0}}
    pairs = crossing.pair_snrs(results, "output", STEPS - 1)
    assert pairs["c", "a"] == 4.0 and pairs["b", "a"] == 1.0 and ("a", "c") not in pairs
    assert len(pairs) == 6  # b and c have yet to decode what they lack


def test_the_decode_job_decompresses_the_kept_bytes_of_another_prior(tmp_path: Path) -> None:
    """Bytes kept with their prior are decoded, by their digest, to the SNR of the sender's
    own decompress."""
    config = dataclasses.replace(settings.MODELS["output"], code_step=CODE_STEPS[2])
    sender = frae.create("reference", config, seed=1)
    rng = np.random.default_rng(0)
    train, test = (rng.normal(size=(b, 4, config.input_dim)).astype(np.float32) for b in (6, 3))
    prior = codec.fit_prior(sender, train)
    data = codec.compress(sender, prior, test)
    crossing.keep_stream(tmp_path / "streams" / "output", data, prior)
    assert crossing.kept_stream(tmp_path / "streams" / "output", digest(data)) == (data, prior)
    frae.save_weights(tmp_path / "output.npz", sender.get_weights())
    np.savez(tmp_path / "windows.npz", train=train, test=test)
    job = {
        "label": "receiver",
        "backend": "reference",
        "data": str(tmp_path / "windows.npz"),
        "streams": str(tmp_path / "streams"),
        "trained": {"output": str(tmp_path / "output.npz")},
        "models": {"output": settings.MODELS["output"].to_dict()},
        "decode": {"receiver": {"output": {"2": [digest(data)]}}},
    }
    decoded = crossing.decode_in_this_process(job)["models"]["output"]["decoded"]
    expected = snr_db(test, codec.decompress(sender, prior, data))
    assert decoded == {"2": {digest(data): pytest.approx(expected)}}
