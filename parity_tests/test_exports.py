"""The contract's "Exports": every format a backend lists, run by its runtime alone, equals
the reference; bad requests to ``frae.export`` are clear errors that leave nothing behind."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

import frae
from frae import runtimes
from parity_tests import exports
from parity_tests.cases import BOTH_MODELS, Case, stream_weights, tie_case, tie_weights
from parity_tests.checks import assert_same_weights
from parity_tests.conftest import MakeBackend
from parity_tests.tolerances import assert_close


@pytest.mark.slow
@pytest.mark.parametrize("case", [*BOTH_MODELS, pytest.param(tie_case(), id="quantized_ties")])
def test_every_artifact_equals_the_reference_in_its_runtime_alone(
    make_backend: MakeBackend, reference: MakeBackend, case: Case, tmp_path: Path
) -> None:
    """With a code step, every code a tie (``tie_case``): the artifact rounds half to even."""
    quantized = case.config.code_step is not None
    weights = tie_weights(case.config) if quantized else stream_weights(case)
    model, oracle = make_backend(case.config), reference(case.config, weights=weights)
    model.set_weights(weights)  # the weights it holds now, not those it was created with
    asked = exports.requests(case, oracle)
    wanted = exports.expected(oracle, asked)
    for format in exports.formats_of(model):
        artifact = frae.export(model, tmp_path / format, format=format)
        assert exports.loops(artifact) >= len(runtimes.FUNCTIONS), f"{format}: loop unrolled"
        ran = exports.run_in_own_process(artifact, asked, tmp_path)
        imported = sorted(ran["modules"] & set(exports.FORBIDDEN))
        assert not imported, f"{format}: its runtime's process imported {imported}"
        loaded = frae.load_exported(artifact)
        for key, (function, sequences, state) in asked.items():
            outputs, last = wanted[key]
            through = getattr(loaded, function)(sequences, state=state, return_state=True)
            for where, answer in (
                ("in its own process", ran["answers"][key]),
                ("through frae.load_exported", through),
            ):
                what = f"{format} {key} {where}"
                assert_close("outputs", answer[0], outputs, what)
                assert_close("outputs", answer[1], last, f"{what}: last state")


def test_the_formats_listed_are_the_contracts(make_backend: MakeBackend) -> None:
    """Each listed format is one the contract names; each refusal is for one not listed."""
    model = make_backend(frae.FRAEConfig())
    listed = exports.formats_of(model)
    assert set(listed) <= set(frae.FORMATS), listed
    refused = set(getattr(model, "export_refusals", {}))
    assert refused <= set(frae.FORMATS) - set(listed), refused


@pytest.mark.parametrize("format", ["tflite", None, "not made"])
def test_a_format_it_cannot_make_is_refused_and_nothing_written(
    make_backend: MakeBackend, format: object, tmp_path: Path
) -> None:
    """A format the backend cannot make is a ``ValueError`` naming it; nothing is written."""
    model = make_backend(frae.FRAEConfig())
    if format == "not made":
        unmade = [f for f in frae.FORMATS if f not in exports.formats_of(model)]
        if not unmade:
            pytest.skip(f"{model.name} makes every format")
        format = unmade[0]
    with pytest.raises(ValueError) as refused:
        frae.export(model, tmp_path / "artifact", format=format)  # type: ignore[arg-type]
    if callable(getattr(model, "export", None)):
        assert repr(format) in str(refused.value), refused.value
    else:
        assert "export" in str(refused.value), refused.value
    assert list(tmp_path.iterdir()) == []


def test_a_folder_that_cannot_take_the_artifact_is_refused(
    make_backend: MakeBackend, tmp_path: Path
) -> None:
    """A path that cannot take the artifact is an error naming it; nothing is changed."""
    model = make_backend(frae.FRAEConfig())
    listed = exports.formats_of(model)
    if not listed:
        pytest.skip(f"{model.name} exports no format")
    full = tmp_path / "full"
    full.mkdir()
    (full / "kept.txt").write_text("kept")
    a_file = tmp_path / "a_file"
    a_file.write_text("kept")
    before = sorted(p.name for p in tmp_path.rglob("*"))
    cases = [(full, FileExistsError), (a_file, FileExistsError), (a_file / "under", OSError)]
    for path, error in cases:
        with pytest.raises(error, match=str(path).replace("\\", "\\\\")):
            frae.export(model, path, format=listed[0])
    assert sorted(p.name for p in tmp_path.rglob("*")) == before
    assert (full / "kept.txt").read_text() == "kept"


def test_a_model_exported_is_not_changed(make_backend: MakeBackend, tmp_path: Path) -> None:
    """Exporting reads the weights and changes nothing: the same weights and outputs after."""
    case = Case(frae.FRAEConfig(), 2, 5)
    model = make_backend(case.config, weights=stream_weights(case))
    listed = exports.formats_of(model)
    if not listed:
        pytest.skip(f"{model.name} exports no format")
    before, x = model.get_weights(), case.inputs(seed=3)
    outputs = model.predict(x)
    frae.export(model, os.fspath(tmp_path / "artifact"), format=listed[0])
    assert_same_weights(model.get_weights(), before)
    np.testing.assert_array_equal(model.predict(x), outputs)
