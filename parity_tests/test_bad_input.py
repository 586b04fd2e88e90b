"""The contract's "Bad input": each bad input raises the named error, names the argument,
changes nothing."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import frae
from frae.registry import REGISTRY, BackendEntry
from parity_tests.cases import CASES
from parity_tests.checks import HUGE, assert_same_weights, masked_nan, with_entry
from parity_tests.conftest import MakeBackend

X = CASES["default"].inputs(seed=1)  # (3, 7, 2)
Z = np.zeros((3, 7, 1), np.float32)
BIAS = "decoder/output/bias"


def _with(value: float | np.floating, at: tuple[int, ...] = (1, 2, 0)) -> np.ndarray:
    return with_entry(X, at, value)


def _fit(x: object = X, y: object = None, **options: Any) -> Callable[[Any], object]:
    return lambda m: m.fit(x, y, **options)


def _weights(change: Callable[[dict[str, np.ndarray]], None]) -> dict[str, np.ndarray]:
    weights = frae.initial_weights(frae.FRAEConfig(), seed=11)
    change(weights)
    return weights


def _set(change: Callable[[dict[str, np.ndarray]], None]) -> Callable[[Any], object]:
    return lambda m: m.set_weights(_weights(change))


def _set_entry(name: str, value: Callable[[np.ndarray], object]) -> Callable[[Any], object]:
    """The call ``set_weights`` of initial weights whose entry ``name`` is ``value`` of it."""
    return _set(lambda w: w.update({name: value(w[name])}))


BAD_CALLS: dict[str, tuple[Callable[[Any], object], type[Exception], str]] = {
    "predict rank 1": (lambda m: m.predict(X[0, 0]), ValueError, "x"),
    "predict rank 4": (lambda m: m.predict(X[None]), ValueError, "x"),
    "predict 3 features": (lambda m: m.predict(np.zeros((3, 7, 3), np.float32)), ValueError, "x"),
    "predict T = 0": (lambda m: m.predict(X[:, :0]), ValueError, "x"),
    "predict B = 0": (lambda m: m.predict(X[:0]), ValueError, "x"),
    "predict NaN": (lambda m: m.predict(_with(np.nan)), ValueError, "x"),
    "predict inf": (lambda m: m.predict(_with(-np.inf)), ValueError, "x"),
    "predict integers": (lambda m: m.predict(X.astype(np.int64)), TypeError, "x"),
    "predict a list": (lambda m: m.predict(X.tolist()), TypeError, "x"),
    "predict a masked array": (lambda m: m.predict(masked_nan(X)), TypeError, "x"),
    "predict longdouble beyond float64": (lambda m: m.predict(_with(HUGE)), ValueError, "x"),
    "encode rank 1": (lambda m: m.encode(X[0, 0]), ValueError, "x"),
    "encode NaN": (lambda m: m.encode(_with(np.nan)), ValueError, "x"),
    "decode 2 code features": (lambda m: m.decode(X), ValueError, "z"),  # X: (3, 7, 2)
    "decode rank 4": (lambda m: m.decode(Z[None]), ValueError, "z"),
    "decode T = 0": (lambda m: m.decode(Z[:, :0]), ValueError, "z"),
    "decode inf": (lambda m: m.decode(Z + np.inf), ValueError, "z"),
    "decode integers": (lambda m: m.decode(Z.astype(np.int32)), TypeError, "z"),
    "decode a masked array": (lambda m: m.decode(masked_nan(Z)), TypeError, "z"),
    "loss y shape": (lambda m: m.loss_and_grads(X, X[:, :-1]), ValueError, "y"),
    "loss y NaN": (lambda m: m.loss_and_grads(X, _with(np.nan)), ValueError, "y"),
    "loss y integers": (lambda m: m.loss_and_grads(X, X.astype(np.int64)), TypeError, "y"),
    "loss x NaN": (lambda m: m.loss_and_grads(_with(np.nan)), ValueError, "x"),
    "loss y masked": (lambda m: m.loss_and_grads(X, masked_nan(X)), TypeError, "y"),
    "fit x NaN in the last batch": (_fit(_with(np.nan, (2, 6, 1)), batch_size=1), ValueError, "x"),
    "fit y shape": (_fit(X, X[:2]), ValueError, "y"),
    "fit epochs 0": (_fit(epochs=0), ValueError, "epochs"),
    "fit epochs float": (_fit(epochs=2.0), TypeError, "epochs"),
    "fit batch_size 0": (_fit(batch_size=0), ValueError, "batch_size"),
    "fit batch_size > B": (_fit(batch_size=4), ValueError, "batch_size"),
    "fit optimizer": (_fit(optimizer="rmsprop"), ValueError, "optimizer"),
    "fit learning_rate < 0": (_fit(learning_rate=-0.1), ValueError, "learning_rate"),
    "fit learning_rate NaN": (_fit(learning_rate=np.nan), ValueError, "learning_rate"),
    "fit learning_rate beyond float32": (_fit(learning_rate=1e39), ValueError, "learning_rate"),
    "fit learning_rate 0 in float32": (_fit(learning_rate=1e-50), ValueError, "learning_rate"),
    "fit learning_rate a string": (_fit(learning_rate="1e-3"), TypeError, "learning_rate"),
    "fit x masked": (_fit(masked_nan(X)), TypeError, "x"),
    "fit shuffle": (_fit(shuffle="yes"), TypeError, "shuffle"),
    "fit seed": (_fit(shuffle=True, seed=-1), ValueError, "seed"),
    "set_weights missing": (_set(lambda w: w.pop(BIAS)), ValueError, BIAS),
    "set_weights extra": (_set(lambda w: w.update(extra=Z[0, 0])), ValueError, "extra"),
    "set_weights not a dict": (lambda m: m.set_weights([1, 2]), TypeError, "weights"),
}
BAD_ENTRIES: dict[str, tuple[str, Callable[[np.ndarray], object], type[Exception]]] = {
    "transposed kernel": ("decoder/output/kernel", np.transpose, ValueError),
    "NaN in the last entry": (BIAS, lambda _: np.array([0, np.nan], np.float32), ValueError),
    "integers": ("encoder/latent/bias", lambda _: np.zeros(1, np.int32), TypeError),
    "masked": ("encoder/dense_0/kernel", masked_nan, TypeError),
    "longdouble beyond float64": (BIAS, lambda _: np.longdouble([0, "1e400"]), ValueError),
}
"""``set_weights`` of initial weights with one bad entry: its name (which the error must name),
its value made from the good one, the error."""
BAD_CALLS |= {
    f"set_weights {case}": (_set_entry(name, value), error, name)
    for case, (name, value, error) in BAD_ENTRIES.items()
}


@pytest.mark.parametrize("call", list(BAD_CALLS), ids=list(BAD_CALLS))
def test_bad_input_raises_and_leaves_weights(make_backend: MakeBackend, call: str) -> None:
    action, error, argument = BAD_CALLS[call]
    model = make_backend(seed=4)
    before = model.get_weights()
    with pytest.raises(error) as raised:
        action(model)
    assert argument in str(raised.value), f"the message does not name {argument!r}: {raised.value}"
    assert_same_weights(model.get_weights(), before, f"{call} changed")


def _all_finite(result: object) -> bool:
    """Whether every number in an output, a (loss, gradients) pair or a history is finite."""
    if isinstance(result, dict):
        return all(_all_finite(value) for value in result.values())
    if isinstance(result, tuple | list):
        return all(_all_finite(value) for value in result)
    return bool(np.isfinite(result).all())


BEYOND_CALLS: dict[str, tuple[Callable[[Any, np.floating], object], str]] = {
    "predict x": (lambda m, big: m.predict(_with(big)), "x"),
    "decode z": (lambda m, big: m.decode(Z + big), "z"),
    "loss y": (lambda m, big: m.loss_and_grads(X, _with(big)), "y"),
    # the history's losses: its training state holds Adam's moments in float32 by contract,
    # and a float64 backend's moments of gradients this large exceed float32's range (a
    # later fit refuses that state as not finite)
    "fit x": (lambda m, big: m.fit(_with(big))["loss"], "x"),
    "set_weights": (
        lambda m, big: _set_entry("encoder/latent/bias", lambda _: np.array([big], type(big)))(m),
        "encoder/latent/bias",
    ),
}


@pytest.mark.parametrize("big", [np.float64(1e39), HUGE], ids=str)
@pytest.mark.parametrize("call", list(BEYOND_CALLS), ids=list(BEYOND_CALLS))
def test_values_beyond_the_compute_dtype_are_refused(
    make_backend: MakeBackend, call: str, big: np.floating
) -> None:
    """Checked after conversion: 1e39 is infinite to a float32 computation, so a backend
    refuses it, unless it computes in float64, and then its results must be finite; 1e400 is
    infinite even in float64; weights are float32 everywhere."""
    action, argument = BEYOND_CALLS[call]
    model = make_backend(seed=4)
    before = model.get_weights()
    try:
        result = action(model, big)
    except ValueError as error:
        assert argument in str(error), str(error)
    else:
        assert big < np.finfo(np.float64).max and call != "set_weights", "accepted"
        assert _all_finite(result), f"{call} computed with {big} in float32: not finite"
        return
    assert_same_weights(model.get_weights(), before, f"{call} changed")


def test_messages_quote_a_summary_not_the_argument(make_backend: MakeBackend) -> None:
    model = make_backend()
    huge = np.zeros((256, 1000, 2)).tolist()
    for call in (
        lambda: model.predict(huge),
        lambda: model.fit(X, learning_rate=huge),
        lambda: model.fit(X, optimizer="x" * 10**6),
        lambda: model.set_weights(dict.fromkeys(map(str, range(10**5)), 0)),
    ):
        with pytest.raises((TypeError, ValueError)) as raised:
            call()
        assert len(str(raised.value)) < 400, str(raised.value)[:400]


BAD_CONFIGS: dict[str, tuple[dict[str, Any], type[Exception], str]] = {
    "input_dim 0": ({"input_dim": 0}, ValueError, "input_dim"),
    "input_dim float": ({"input_dim": 2.0}, TypeError, "input_dim"),
    "input_dim bool": ({"input_dim": True}, TypeError, "input_dim"),
    "latent_dim -1": ({"latent_dim": -1}, ValueError, "latent_dim"),
    "encoder_units 0": ({"encoder_units": (4, 0)}, ValueError, "encoder_units[1]"),
    "encoder_units int": ({"encoder_units": 4}, TypeError, "encoder_units"),
    "decoder_units str": ({"decoder_units": "3"}, TypeError, "decoder_units"),
    "activation relu": ({"activation": "relu"}, ValueError, "activation"),
    "output_activation None": ({"output_activation": None}, TypeError, "output_activation"),
    "feedback hidden": ({"feedback": "hidden"}, ValueError, "feedback"),
    "feedback None": ({"feedback": None}, TypeError, "feedback"),
    "state_dim with output feedback": ({"state_dim": 8}, ValueError, "state_dim"),
    "state feedback without state_dim": ({"feedback": "state"}, TypeError, "state_dim"),
    "state_dim 0": ({"feedback": "state", "state_dim": 0}, ValueError, "state_dim"),
    "state_dim float": ({"feedback": "state", "state_dim": 8.0}, TypeError, "state_dim"),
    "code_step 0": ({"code_step": 0.0}, ValueError, "code_step"),
    "code_step negative": ({"code_step": -0.25}, ValueError, "code_step"),
    "code_step not a power of two": ({"code_step": 0.3}, ValueError, "code_step"),
    "code_step 2": ({"code_step": 2.0}, ValueError, "code_step"),
    "code_step 2^-15": ({"code_step": 2.0**-15}, ValueError, "code_step"),
    "code_step infinite": ({"code_step": float("inf")}, ValueError, "code_step"),
    "code_step NaN": ({"code_step": float("nan")}, ValueError, "code_step"),
    "code_step str": ({"code_step": "0.5"}, TypeError, "code_step"),
    "code_step bool": ({"code_step": True}, TypeError, "code_step"),
}


@pytest.mark.parametrize("case", list(BAD_CONFIGS), ids=list(BAD_CONFIGS))
def test_bad_config_raises(case: str) -> None:
    fields, error, argument = BAD_CONFIGS[case]
    with pytest.raises(error, match=argument.replace("[", r"\[")):
        frae.FRAEConfig(**fields)


def test_config_units_become_tuples() -> None:
    config = frae.FRAEConfig(encoder_units=[4, 3], decoder_units=[3])
    assert config == frae.FRAEConfig()
    assert hash(config) == hash(frae.FRAEConfig())


def test_bad_create_arguments(backend_spec: str) -> None:
    with pytest.raises(TypeError, match="config"):
        frae.create(backend_spec, {"input_dim": 2})
    with pytest.raises(ValueError, match="seed"):
        frae.create(backend_spec, seed=-1)
    with pytest.raises(ValueError, match="encoder/latent/kernel"):
        frae.create(backend_spec, weights=_weights(lambda w: w.pop("encoder/latent/kernel")))


def test_unknown_backend_lists_the_available_ones() -> None:
    with pytest.raises(ValueError, match="tf_while") as raised:
        frae.create("tensorflow")
    for name in frae.available_backends():
        assert name in str(raised.value)


def test_bad_import_path() -> None:
    with pytest.raises(ImportError, match="NoSuchBackend"):
        frae.create("impls.reference:NoSuchBackend")
    with pytest.raises(ModuleNotFoundError):
        frae.create("no_such_package.module:Backend")


NOT_BACKENDS = ["os:getcwd", "os:sep", "json:dumps", "collections:OrderedDict", "math:pi"]


@pytest.mark.parametrize("path", NOT_BACKENDS)
def test_import_path_to_something_else_than_a_backend(path: str) -> None:
    """Refused as such, before it is called: not an unrelated error from inside it."""
    with pytest.raises(TypeError, match=f"{re.escape(path)}.*(not a backend|Backend methods)"):
        frae.create(path)


def test_missing_framework_names_the_extra(tmp_path, monkeypatch) -> None:
    (tmp_path / "frae_needs_missing.py").write_text("import frae_missing_framework\n")
    monkeypatch.syspath_prepend(tmp_path)
    entry = BackendEntry("frae_needs_missing:Backend", ("frae_missing_framework",), "missing")
    monkeypatch.setitem(REGISTRY, "needs_missing", entry)
    assert frae.unavailable_reason("needs_missing") is not None
    with pytest.raises(ImportError, match=r"pip install 'frae\[missing\]'"):
        frae.create("needs_missing")


@pytest.mark.parametrize("name", [n for n, e in REGISTRY.items() if e.frameworks])
def test_uninstalled_registered_backend_says_why(name: str) -> None:
    reason = frae.unavailable_reason(name)
    if reason is None:
        pytest.skip(f"{name} is installed")
    with pytest.raises(ImportError) as raised:
        frae.create(name)
    assert reason in str(raised.value)
