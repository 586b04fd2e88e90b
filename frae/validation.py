"""Every check of caller input (the contract's "Bad input"), in one place.

Each check raises ``TypeError`` for a wrong type and ``ValueError`` for a wrong value, with a
message that names the argument, what was expected and what was given. Checks return the
validated value in its canonical form and never modify what they were given, so a call that
fails here has changed nothing.
"""

from __future__ import annotations

import math
import numbers
import reprlib
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from frae.optimizers import OPTIMIZERS

if TYPE_CHECKING:
    from frae.config import FRAEConfig

FLOAT32_MAX = float(np.finfo(np.float32).max)
FLOAT32_TINY = float(np.finfo(np.float32).smallest_subnormal)


_SHORT = reprlib.Repr(maxlevel=2, maxlist=4, maxtuple=4, maxdict=4, maxstring=60, maxother=60)


def describe(value: object) -> str:
    """A short summary of ``value`` for an error message: an array's type, shape and dtype,
    anything else's abridged repr and type; never the whole contents."""
    if isinstance(value, np.ndarray):
        return f"a {type(value).__name__} of shape {value.shape} and dtype {value.dtype}"
    return f"{_SHORT.repr(value)} ({type(value).__name__})"


def names(keys: Iterable[object], limit: int = 8) -> str:
    """Up to ``limit`` of ``keys``, abridged, and how many more there are."""
    listed = list(keys)
    shown = ", ".join(_SHORT.repr(key) for key in listed[:limit])
    more = f" and {len(listed) - limit} more" if len(listed) > limit else ""
    return f"[{shown}{more}]"


def check_int(value: object, name: str, least: int = 1) -> int:
    """An ``int`` (not ``bool``; NumPy's integers too) of at least ``least``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {describe(value)}")
    if value < least:
        raise ValueError(f"{name} must be at least {least}, got {value}")
    return int(value)


def check_code_step(value: object) -> float | None:
    """``None``, or Δ = 2^−k for an integer 0 ≤ k ≤ 14 (the contract's "Quantized codes")."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"code_step must be a number or None, got {describe(value)}")
    step = float(value)
    mantissa, exponent = math.frexp(step) if math.isfinite(step) else (0.0, 0)
    if mantissa != 0.5 or not -13 <= exponent <= 1:  # 2^-k = 0.5 · 2^(1-k)
        raise ValueError(
            f"code_step must be 2^-k for an integer k from 0 to 14 (1, 0.5, ... 2^-14), "
            f"got {value!r}"
        )
    return step


def check_rate_weight(value: object, code_step: float | None) -> float | None:
    """``None``, or λ ≥ 0, a finite number, with ``code_step`` set (the contract's "Rate:
    training the codec for its bits")."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"rate_weight must be a number or None, got {describe(value)}")
    weight = float(value)
    if not math.isfinite(weight) or weight < 0.0:
        raise ValueError(f"rate_weight must be a finite number of at least 0, got {value!r}")
    if code_step is None:
        raise ValueError(
            f"rate_weight ({value!r}) needs code_step set: the rate counts the bits of the "
            "quantized code's symbols"
        )
    return weight


def check_units(value: object, name: str) -> tuple[int, ...]:
    """A sequence (possibly empty) of positive layer widths."""
    if isinstance(value, str | bytes) or not isinstance(value, Iterable):
        raise TypeError(f"{name} must be a sequence of ints, got {describe(value)}")
    return tuple(check_int(width, f"{name}[{i}]") for i, width in enumerate(value))


def check_choice(value: object, name: str, choices: tuple[str, ...]) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{name} must be one of {choices}, got {describe(value)}")
    if value not in choices:
        raise ValueError(f"{name} must be one of {choices}, got {_SHORT.repr(value)}")
    return value


def check_seed(value: object, name: str = "seed") -> int:
    return check_int(value, name, least=0)


def check_learning_rate(value: object) -> float:
    """A real number that is finite and above 0 once rounded to float32, as backends use it."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"learning_rate must be a float, got {describe(value)}")
    with np.errstate(over="ignore", under="ignore"):
        rate = np.float32(value)
    if not (np.isfinite(rate) and rate > 0):
        raise ValueError(
            f"learning_rate must be finite and above 0 in float32 (up to {FLOAT32_MAX:.4g}, "
            f"at least {FLOAT32_TINY:.4g}), got {_SHORT.repr(value)}"
        )
    return float(value)


def check_devices(value: object) -> int | None:
    """``None`` or a positive int: how many devices ``create(..., devices=N)`` trains on."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"devices must be None or an int, got {describe(value)}")
    if value < 1:
        raise ValueError(f"devices must be None or at least 1, got {value}")
    return int(value)


def check_split(num_sequences: int, batch_size: int, devices: int) -> None:
    """Every mini-batch of ``fit`` (the last may be smaller) splits evenly over ``devices``."""
    sizes = {batch_size, num_sequences % batch_size or batch_size}
    uneven = sorted(size for size in sizes if size % devices)
    if uneven:
        raise ValueError(
            f"fit's mini-batches must split evenly over devices={devices}: a mini-batch of "
            f"{uneven[0]} sequences does not (batch_size {batch_size}, {num_sequences} sequences)"
        )


def check_config(config: object) -> FRAEConfig:
    """``None`` gives the default config; anything but a ``FRAEConfig`` is a ``TypeError``."""
    from frae.config import FRAEConfig

    if config is None:
        return FRAEConfig()
    if not isinstance(config, FRAEConfig):
        raise TypeError(f"config must be a frae.FRAEConfig or None, got {describe(config)}")
    return config


def _as_float_array(value: object, name: str) -> npt.NDArray[np.floating[Any]]:
    # the checks of a call on one frame cost more than its arithmetic: a plain array skips
    # the subclass tests, and the dtype's kind ("f": float16 to longdouble) is read directly
    if type(value) is not np.ndarray:
        if isinstance(value, np.ma.MaskedArray):
            # isfinite skips masked entries, while the backend would compute with the raw values
            raise TypeError(f"{name} must be a plain numpy.ndarray, not a masked array")
        if not isinstance(value, np.ndarray):
            raise TypeError(f"{name} must be a numpy.ndarray, got {describe(value)}")
    if value.dtype.kind != "f":
        raise TypeError(
            f"{name} must have a floating dtype (float16, float32 or float64), "
            f"got dtype {value.dtype}"
        )
    return value


_SMALL = 64
"""Up to this many values, finiteness is checked in Python: a NumPy ufunc on a frame costs
less than its own call, but it slows the framework call that follows it several times over."""


def _all_finite(array: npt.NDArray[np.floating[Any]]) -> bool:
    if array.size <= _SMALL:
        return all(map(math.isfinite, array.ravel().tolist()))
    return bool(np.isfinite(array).all())


def _converted(
    array: npt.NDArray[np.floating[Any]], name: str, dtype: npt.DTypeLike
) -> npt.NDArray[np.floating[Any]]:
    """A new C-contiguous copy of ``array`` in ``dtype``, refused unless every value is finite
    in ``dtype``: a float64 value beyond float32's range is infinite to a float32 backend."""
    target = np.dtype(dtype)
    if array.dtype.itemsize > target.itemsize:  # a narrowing cast overflows to inf: refused below
        with np.errstate(over="ignore"):
            converted = np.array(array, dtype=target, order="C")
    else:
        converted = np.array(array, dtype=target, order="C")
    if not _all_finite(converted):
        finite = np.isfinite(converted)
        bad = int(finite.size - np.count_nonzero(finite))
        raise ValueError(
            f"{name} must hold only values finite in {np.dtype(dtype).name}, "
            f"got {bad} NaN, infinite or beyond {np.finfo(dtype).max:.4g}"
        )
    return converted


def check_sequences(
    value: object, name: str, width: int, dtype: npt.DTypeLike
) -> tuple[npt.NDArray[np.floating[Any]], bool]:
    """Validate a batch ``(B, T, width)`` or one sequence ``(T, width)``.

    Returns:
        The array as a new C-contiguous ``(B, T, width)`` array of ``dtype``, and whether the
        input was a single 2-D sequence (so the caller drops the batch axis again).
    """
    array = _as_float_array(value, name)
    if array.ndim not in (2, 3):
        raise ValueError(
            f"{name} must have rank 3 (batch, time, features) or rank 2 (time, features), "
            f"got shape {array.shape}"
        )
    single = array.ndim == 2
    batch = array[None] if single else array
    if batch.shape[-1] != width:
        raise ValueError(f"{name} must have {width} features in its last axis, got {array.shape}")
    if batch.shape[0] == 0:
        raise ValueError(f"{name} must hold at least one sequence (B >= 1), got {array.shape}")
    if batch.shape[1] == 0:
        raise ValueError(f"{name} must hold at least one time step (T >= 1), got {array.shape}")
    return _converted(batch, name, dtype), single


def check_flag(value: object, name: str) -> bool:
    """A ``bool``, nothing that merely converts to one."""
    if not isinstance(value, bool | np.bool_):
        raise TypeError(f"{name} must be a bool, got {describe(value)}")
    return bool(value)


def check_state(
    state: object, batch: int, single: bool, width: int, dtype: npt.DTypeLike
) -> npt.NDArray[np.floating[Any]]:
    """The feedback entering a call's first step (the contract's "Streaming"): ``None`` for zeros,
    else ``(batch, width)`` beside a batch of sequences or ``(width,)`` beside one sequence.

    Returns a new C-contiguous ``(batch, width)`` array of ``dtype``.
    """
    if state is None:
        return np.zeros((batch, width), dtype)
    array = _as_float_array(state, "state")
    expected = (width,) if single else (batch, width)
    if array.ndim != len(expected):
        layout = "(S,) beside one sequence (T, F)" if single else "(B, S) beside a batch (B, T, F)"
        raise ValueError(
            f"state must have rank {len(expected)}, {layout}, with S = {width}; "
            f"got shape {array.shape}"
        )
    if array.shape[-1] != width:
        raise ValueError(
            f"state must have {width} features in its last axis (the feedback's width), "
            f"got shape {array.shape}"
        )
    if not single and array.shape[0] != batch:
        raise ValueError(
            f"state must hold one row per sequence: the input has {batch} sequences, "
            f"the state {array.shape[0]} (shape {array.shape})"
        )
    return _converted(array[None] if single else array, "state", dtype)


def check_target(y: object, x: npt.NDArray[np.floating[Any]], single: bool) -> Any:
    """``y`` defaults to ``x``; otherwise it must be a finite float array of x's shape."""
    if y is None:
        return x
    array = _as_float_array(y, "y")
    expected = x.shape[1:] if single else x.shape
    if array.shape != expected:
        raise ValueError(f"y must have the shape of x, {expected}, got {array.shape}")
    return _converted(array[None] if single else array, "y", x.dtype)


def check_names(found: Iterable[object], expected: Iterable[str], what: str) -> None:
    """``found`` holds exactly the ``expected`` names: else a ``ValueError``, ``what`` and the
    names missing and extra."""
    present, wanted = set(found), list(expected)
    missing = [name for name in wanted if name not in present]
    extra = sorted(str(name) for name in present - set(wanted))
    if missing or extra:
        raise ValueError(f"{what}; missing {names(missing)}, extra {names(extra)}")


def check_weights(
    weights: object, expected_shapes: Mapping[str, tuple[int, ...]]
) -> dict[str, npt.NDArray[np.float32]]:
    """Exactly the canonical names and shapes, floating and finite; returns float32 copies."""
    if not isinstance(weights, Mapping):
        raise TypeError(f"weights must be a dict of numpy arrays, got {describe(weights)}")
    check_names(weights, expected_shapes, "weights must hold exactly the canonical names")
    checked = {}
    for key, shape in expected_shapes.items():
        array = _as_float_array(weights[key], f"weights[{key!r}]")
        if array.shape != shape:
            raise ValueError(f"weights[{key!r}] must have shape {shape}, got {array.shape}")
        checked[key] = _converted(array, f"weights[{key!r}]", np.float32)
    return checked


def check_fit_options(
    num_sequences: int,
    epochs: object,
    batch_size: object,
    optimizer: object,
    learning_rate: object,
    shuffle: object,
    seed: object,
) -> tuple[int, int, str, float, bool, int]:
    """The keyword arguments of ``fit``; ``batch_size=None`` means all sequences at once."""
    epochs = check_int(epochs, "epochs")
    batch_size = check_int(num_sequences if batch_size is None else batch_size, "batch_size")
    if batch_size > num_sequences:
        raise ValueError(
            f"batch_size must be at most the number of sequences ({num_sequences}), "
            f"got {batch_size}"
        )
    optimizer = check_choice(optimizer, "optimizer", OPTIMIZERS)
    learning_rate = check_learning_rate(learning_rate)
    shuffle = check_flag(shuffle, "shuffle")
    return epochs, batch_size, optimizer, learning_rate, shuffle, check_seed(seed)
