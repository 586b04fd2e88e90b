"""``apps.demo.rate_term``: the models trained with the rate term, their bytes under their
learned prior, and the table that sets their curve beside the counted prior's."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import frae
from apps.demo import rate_distortion, rate_term, settings
from frae import codec

pytest.importorskip("constriction")

Trained = tuple[list[rate_distortion.RatePoint], list[frae.Backend], Any]
"""The rate points, their models, and the held-out and training windows."""
CURVE = [(3.0, 4.0), (6.0, 6.0), (7.0, 10.0)]
"""A counted curve, (SNR dB, bits a frame) over Δ."""


@pytest.mark.parametrize(
    ("snr", "bits"), [(3.0, 4.0), (4.5, 5.0), (6.0, 6.0), (6.25, 7.0), (7.0, 10.0)]
)
def test_the_counted_curves_bits_at_an_snr_are_linear_between_its_points(
    snr: float, bits: float
) -> None:
    assert rate_term.counted_bits_at(CURVE[::-1], snr) == pytest.approx(bits)


@pytest.mark.parametrize("snr", [2.99, 7.01])
def test_beyond_the_counted_curve_there_is_no_figure(snr: float) -> None:
    assert rate_term.counted_bits_at(CURVE, snr) is None


@pytest.fixture(scope="module")
def trained() -> Trained:
    """The rate points of a small output model trained two Adam steps on the reference at
    each λ, the models, and the held-out and training windows."""
    config = settings.MODELS["output"]
    rng = np.random.default_rng(5)
    x, train = (rng.normal(size=(b, 4, config.input_dim)).astype(np.float32) for b in (3, 6))
    models: list[frae.Backend] = []

    def fitted(rated: frae.FRAEConfig) -> frae.Backend:
        model = frae.create("reference", rated, seed=3)
        model.fit(train, epochs=2, learning_rate=0.02)
        models.append(model)
        return model

    return rate_term.rate_trained(config, x, train, fitted), models, (x, train)


def test_each_rate_weight_trains_a_model_of_its_own_at_the_rate_terms_step(
    trained: Trained,
) -> None:
    points, models, _ = trained
    assert [p.rate_weight for p in points] == list(rate_term.RATE_WEIGHTS)
    assert {p.step for p in points} == {rate_term.RATE_CODE_STEP}
    configs = [(m.config.code_step, m.config.rate_weight) for m in models]
    assert configs == [(rate_term.RATE_CODE_STEP, w) for w in rate_term.RATE_WEIGHTS]


def test_a_rate_models_bytes_are_coded_under_its_learned_prior(
    trained: Trained,
) -> None:
    """The point's bytes are those of ``compress`` under ``prior_from_model``; its payload is
    every byte but the header and the CRC; its SNR, the bytes'; beside it, the payload under
    the prior its training symbols count."""
    points, models, (x, train) = trained
    fixed = codec.HEADER_BYTES + codec.TRAILER_BYTES
    for point, model in zip(points, models, strict=True):
        prior = codec.prior_from_model(model)
        data = codec.compress(model, prior, x)
        assert point.bytes == rate_distortion.digest(data)
        assert point.payload_bits == 8 * (len(data) - fixed) / 12
        decoded = codec.decompress(model, prior, data)
        assert point.snr_db == pytest.approx(rate_distortion.snr_db(x, decoded))
        counted = codec.compress(model, codec.fit_prior(model, train), x)
        assert point.counted_payload_bits == 8 * (len(counted) - fixed) / 12


def _point(step: float, bits: float, snr: float, name: str, weight: float | None = None) -> Any:
    return {
        "step": step,
        "payload_bits": bits,
        "prior_bits": bits - 1.0,
        "snr_db": snr,
        "bytes": name,
        "rate_weight": weight,
        "counted_payload_bits": None if weight is None else bits - 0.25,
    }


def _results(label: str, trained_bits: float) -> dict[str, Any]:
    """A variant with a counted curve over every Δ, 2 to 14 bits a frame at 3 to 9 dB, alike
    on every backend; a model trained with Δ = 1/16 alone at 6.5 dB; and a trained point at
    each λ, 3.5 dB up by 1 dB a λ, its bytes its own."""
    steps = rate_distortion.CODE_STEPS
    counted = [_point(s, 2.0 * (i + 1), 3.0 + i, f"c{i}") for i, s in enumerate(steps)]
    alone = [_point(rate_term.RATE_CODE_STEP, 11.0, 6.5, f"{label}-alone")]
    learned = [
        _point(rate_term.RATE_CODE_STEP, trained_bits + i, 3.5 + i, f"{label}{i}", weight)
        for i, weight in enumerate(rate_term.RATE_WEIGHTS)
    ]
    model = {"after_training": counted, "trained_quantized": alone, "rate_trained": learned}
    return {"models": {"output": model}, "seconds": 1.0, "cpu_seconds": 1.0}


def test_the_rate_term_table_sets_each_trained_point_against_the_counted_curve() -> None:
    """Two backends alike in the counted curve, their trained points half a bit apart: each
    trained point's counted bits at its SNR and how far below them it lies, every backend's
    span; the decodes of the other's bytes measured from the sender's own."""
    from apps.demo import tables  # tabulate: the demo extra's

    results = {"a": _results("a", 3.0), "b": _results("b", 3.5)}
    results["a"]["models"]["output"]["decoded"] = {"b0": 3.52}
    results["b"]["models"]["output"]["decoded"] = {"a0": 3.5}
    rows = tables.rate_term_rows(results, "output")
    steps = len(rate_distortion.CODE_STEPS)
    assert len(rows) == steps + 1 + len(rate_term.RATE_WEIGHTS)
    assert rows[0][1:7] == ["counted", "1", "", "2.00", "1.00", "3.00"]
    assert rows[0][7:] == ["", "", "", "4/4 within 0.00 dB"]  # the same bytes: one's own decode
    alone = rows[steps]  # 6.5 dB lies halfway between 8 and 10 bits
    assert alone[1:4] == ["counted", "1/16", ""] and alone[7:9] == ["9.00", "2.00"]
    first = rows[steps + 1]
    assert first[1:7] == ["learned", "1/16", "0.001", "3.00 to 3.50", "2.00 to 2.50", "3.50"]
    assert first[7:10] == ["3.00", "0.00 to 0.50", "2.75 to 3.25"]  # 3.5 dB costs 3 bits
    assert first[-1] == "4/4 within 0.02 dB"
    assert rows[-1][7:9] == ["9.00", "-3.00 to -2.50"]  # 6.5 dB: 9 bits, the λ point 6 and 6.5


def test_beyond_the_counted_curves_snr_the_comparison_is_blank() -> None:
    """Blank where no backend's point lies within the curve's SNR; where some do, theirs,
    and how many."""
    from apps.demo import tables  # tabulate: the demo extra's

    results = {"a": _results("a", 3.0), "b": _results("b", 3.0)}
    results["a"]["models"]["output"]["rate_trained"][-1]["snr_db"] = 9.5
    assert tables.rate_term_rows(results, "output")[-1][7:9] == ["9.00 (1 of 2)", "-3.00 (1 of 2)"]
    results["b"]["models"]["output"]["rate_trained"][-1]["snr_db"] = 2.5
    assert tables.rate_term_rows(results, "output")[-1][7:9] == ["", ""]


def test_the_rate_terms_jobs_train_a_model_each_beside_the_training() -> None:
    """The first jobs: training, then one rate job a model; their results merge by model."""
    pytest.importorskip("tabulate")  # the demo extra's, which the command imports
    from apps.demo.cli import first_jobs, merge

    models = {name: config.to_dict() for name, config in settings.MODELS.items()}
    jobs = first_jobs({"models": models, "seed": 0})
    assert [(job["kind"], list(job["models"])) for job in jobs] == [
        ("train", list(models)),
        *(("rate", [name]) for name in models),
    ]
    assert all(job["seed"] == 0 for job in jobs)
    results: dict[str, Any] = {}
    merge(results, {"a": {"models": {"output": {"snr_db": 7.0}}, "seconds": 2.0}})
    merge(results, {"a": {"models": {"output": {"rate_trained": []}}, "seconds": 9.0}})
    assert results == {
        "a": {"models": {"output": {"snr_db": 7.0, "rate_trained": []}}, "seconds": 2.0}
    }


def test_a_backend_without_the_rate_term_says_so_in_its_progress_line() -> None:
    from apps.demo import tables  # tabulate: the demo extra's

    result: dict[str, Any] = {
        "models": {"output": {"rate_error": "ValueError: no rate term"}},
        "seconds": 3.0,
        "cpu_seconds": None,
    }
    line = tables.progress(result)
    assert "output with the rate term: ValueError: no rate term" in line
