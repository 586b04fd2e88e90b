"""``apps.demo.crossing``: each backend's bytes decoded on every other, where they differ, in
both kinds of rate point."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import frae
from apps.demo import crossing, settings
from apps.demo.rate_distortion import CODE_STEPS, digest, snr_db
from apps.demo.rate_term import RATE_CODE_STEP, RATE_WEIGHTS
from frae import codec

pytest.importorskip("constriction")

STEPS = len(CODE_STEPS)


def _swept(names: list[str], snrs: list[float], kind: str = "after_training") -> dict[str, Any]:
    points = [{"bytes": name, "snr_db": snr} for name, snr in zip(names, snrs, strict=True)]
    return {"models": {"output": {kind: points}}, "seconds": 1.0}


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
    assert crossing.streams_to_decode(results) == {
        "a": {"output": ["other"]},
        "b": {"output": ["other"]},
        "c": {"output": [same[-1]]},
    }
    assert crossing.pair_snrs(results, "output", 0) == {
        (sender, receiver): snr for receiver, snr in (("a", 1.0), ("b", 2.0), ("c", 3.0))
        for sender in "abc"
    }  # fmt: skip
    results["a"]["models"]["output"]["decoded"] = {"other": 4.0}
    pairs = crossing.pair_snrs(results, "output", STEPS - 1)
    assert pairs["c", "a"] == 4.0 and pairs["b", "a"] == 1.0 and ("a", "c") not in pairs
    assert len(pairs) == 6  # b and c have yet to decode what they lack


def test_the_rate_terms_streams_cross_every_one_unlike_the_others() -> None:
    """Each backend's models trained with the rate term make bytes of their own: each backend
    decodes every other's, at each λ, and each pair's SNR is set against the sender's own."""
    count = len(RATE_WEIGHTS)
    results = {
        label: _swept([f"{label}{i}" for i in range(count)], [snr] * count, "rate_trained")
        for label, snr in (("a", 1.0), ("b", 2.0))
    }
    wanted = crossing.streams_to_decode(results)
    assert wanted == {
        "a": {"output": [f"b{i}" for i in range(count)]},
        "b": {"output": [f"a{i}" for i in range(count)]},
    }
    results["a"]["models"]["output"]["decoded"] = {"b0": 2.01}
    pairs = crossing.pair_snrs(results, "output", 0, "rate_trained")
    assert pairs == {("a", "a"): 1.0, ("b", "b"): 2.0, ("b", "a"): 2.01}
    assert crossing.own_snrs(results, "output", 0, "rate_trained") == {"a": 1.0, "b": 2.0}


def test_a_partial_sweep_is_not_crossed() -> None:
    """A backend that made fewer points of a kind than the kind has is left out of it."""
    count = len(RATE_WEIGHTS)
    results = {
        "a": _swept([f"a{i}" for i in range(count)], [1.0] * count, "rate_trained"),
        "b": _swept(["b0"], [2.0], "rate_trained"),
    }
    assert crossing.streams_to_decode(results) == {}


@pytest.mark.parametrize("rate_weight", [None, RATE_WEIGHTS[0]])
def test_the_decode_job_decompresses_kept_bytes_with_the_senders_model_and_prior(
    tmp_path: Path, rate_weight: float | None
) -> None:
    """Bytes kept beside their checkpoint are decoded, by their digest, with the config,
    weights and prior kept there (the sender's, not the receiver's), to the SNR of the
    sender's own decompress."""
    step = CODE_STEPS[2] if rate_weight is None else RATE_CODE_STEP
    config = dataclasses.replace(settings.MODELS["output"], code_step=step, rate_weight=rate_weight)
    sender = frae.create("reference", config, seed=1)
    rng = np.random.default_rng(0)
    train, test = (rng.normal(size=(b, 4, config.input_dim)).astype(np.float32) for b in (6, 3))
    sender.fit(train, epochs=2, learning_rate=0.02)
    prior = (
        codec.fit_prior(sender, train) if rate_weight is None else codec.prior_from_model(sender)
    )
    data = codec.compress(sender, prior, test)
    folder = tmp_path / "streams" / "output"
    crossing.keep_stream(folder, sender, data, prior)
    kept, kept_config, weights, kept_prior = crossing.kept_stream(folder, digest(data))
    assert (kept, kept_config, kept_prior) == (data, config, prior)
    assert weights.keys() == sender.get_weights().keys()
    np.savez(tmp_path / "windows.npz", train=train, test=test)
    job = {
        "label": "receiver",
        "backend": "reference",
        "data": str(tmp_path / "windows.npz"),
        "streams": str(tmp_path / "streams"),
        "decode": {"receiver": {"output": [digest(data)]}},
    }
    decoded = crossing.decode_in_this_process(job)["models"]["output"]["decoded"]
    expected = snr_db(test, codec.decompress(sender, prior, data))
    assert decoded == {digest(data): pytest.approx(expected)}
