"""Canonical weights: the contract's initial values and validated, atomic ``.npz`` files."""

from __future__ import annotations

import itertools
import math
import os
import reprlib
import zipfile
import zlib
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import numpy.typing as npt

from frae import validation
from frae.config import GRU, FRAEConfig
from frae.files import write_atomically

Weights = dict[str, npt.NDArray[np.float32]]

INIT_STDDEV = 0.05

_FLOAT32 = np.dtype(np.float32)

_HEADER_READERS = {
    (1, 0): np.lib.format.read_array_header_1_0,
    (2, 0): np.lib.format.read_array_header_2_0,
}
_SHORT = reprlib.Repr(maxlist=6, maxstring=60)
_MESSAGE_LIMIT = 1000  # zipfile's and numpy's messages may quote a whole name or header


def initial_weights(config: FRAEConfig, seed: int = 0) -> Weights:
    """Draw every weight from ``numpy.random.default_rng(seed)``, N(0, 0.05), in
    ``FRAEConfig.parameter_shapes`` order, so every backend starts from the same values; the
    learned prior's parameters start at zero, drawing nothing."""
    rng = np.random.default_rng(validation.check_seed(seed))
    prior = config.prior_parameters
    return {
        name: np.zeros(shape, np.float32)
        if name in prior
        else rng.normal(0.0, INIT_STDDEV, size=shape).astype(np.float32)
        for name, shape in config.parameter_shapes().items()
    }


def from_flat(config: FRAEConfig, flat: npt.ArrayLike, *, by_sorted_name: bool = False) -> Weights:
    """Canonical weights from one vector holding every weight, flattened, in canonical order
    (how the compiled backends keep a copy in one buffer), or with ``by_sorted_name`` in the
    order of their sorted names (how ``jax.flatten_util.ravel_pytree`` lays out a dict)."""
    shapes = config.parameter_shapes()
    if by_sorted_name:
        shapes = {name: shapes[name] for name in sorted(shapes)}
    sizes = [math.prod(shape) for shape in shapes.values()]
    pieces = np.split(np.asarray(flat, np.float32), np.cumsum(sizes)[:-1])
    return {
        name: piece.reshape(shape)
        for (name, shape), piece in zip(shapes.items(), pieces, strict=True)
    }


def infer_config(weights: Mapping[str, object]) -> FRAEConfig:
    """The sizes that a set of canonical weights describes (activations left at defaults).
    Where they hold a learned prior's parameters, ``code_step`` is 1 and ``rate_weight`` 0:
    the step and the weight are the config's to give, the shapes cannot tell them.

    Each width is the majority of the entries that fix it, so one wrong entry is outvoted and
    the check that follows names that entry, not the ones around it.

    Raises:
        TypeError: ``weights`` is not a dict of floating arrays.
        ValueError: the names or shapes are not those of any config.
    """
    if not isinstance(weights, Mapping):
        raise TypeError(f"weights must be a dict of numpy arrays, got {type(weights).__name__}")
    config = _infer_config({name: getattr(value, "shape", None) for name, value in weights.items()})
    validation.check_weights(weights, config.parameter_shapes())
    return config


@dataclass(frozen=True)
class _Votes:
    """The widths that the entries of ``shapes`` (canonical name -> shape) vote for."""

    shapes: Mapping[str, object]

    def size(self, name: str, axis: int, rank: int, divisor: int = 1) -> int | None:
        """Axis ``axis`` of ``name``'s shape divided by ``divisor``, if it has rank ``rank``
        and divides; ``None`` (no vote) otherwise."""
        shape = self.shapes.get(name)
        if not isinstance(shape, tuple) or len(shape) != rank:
            return None
        value = shape[axis]
        return value // divisor if isinstance(value, int) and value % divisor == 0 else None

    def layers(self, side: str, last: str) -> list[str]:
        """The dense layers of ``side`` named in ``shapes``, then ``side/last``."""
        count = 0
        while any(f"{side}/dense_{count}/{part}" in self.shapes for part in ("kernel", "bias")):
            count += 1
        return [f"{side}/dense_{i}" for i in range(count)] + [f"{side}/{last}"]

    def units(self, layer: str, *more: int | None) -> int:
        """``layer``'s width: its bias length, its kernel's columns and ``more`` votes."""
        bias, kernel = self.size(f"{layer}/bias", 0, 1), self.size(f"{layer}/kernel", 1, 2)
        return _majority((bias, kernel, *more))

    def hidden(self, side: list[str]) -> tuple[int, ...]:
        """The hidden widths of ``side``, each also voted by the next kernel's rows."""
        return tuple(
            self.units(layer, self.size(f"{after}/kernel", 0, 2))
            for layer, after in itertools.pairwise(side)
        )


def _infer_config(shapes: Mapping[str, object]) -> FRAEConfig:
    """``_infer_sizes``, with a learned prior where ``shapes`` names one (``infer_config``)."""
    config = _infer_sizes(shapes)
    if any(name.startswith("prior/") for name in shapes):
        return replace(config, code_step=1.0, rate_weight=0.0)
    return config


def _infer_sizes(shapes: Mapping[str, object]) -> FRAEConfig:
    """The config that most of ``shapes`` (canonical name -> shape) agree on: each width is
    voted on by every shape that fixes it (a bias length, a kernel's columns, the next
    kernel's rows), one vote per entry; the layer counts come from the names alone.
    """

    votes = _Votes(shapes)
    size, units, hidden = votes.size, votes.units, votes.hidden
    encoder, decoder = votes.layers("encoder", "latent"), votes.layers("decoder", "output")
    encoder_rows = size(f"{encoder[0]}/kernel", 0, 2)
    decoder_rows = size(f"{decoder[0]}/kernel", 0, 2)
    gru = GRU("decoder/gru", 1, 1)
    if not any(name.startswith(f"{gru.name}/") for name in shapes):
        input_dim = units(
            decoder[-1], encoder_rows // 2 if encoder_rows and encoder_rows % 2 == 0 else None
        )
        latent_dim = units(encoder[-1], decoder_rows - input_dim if decoder_rows else None)
        return FRAEConfig(
            input_dim=input_dim,
            encoder_units=hidden(encoder),
            latent_dim=latent_dim,
            decoder_units=hidden(decoder),
        )
    state_dim = _majority(
        (
            size(gru.recurrent_kernel, 0, 2),
            size(gru.recurrent_kernel, 1, 2, 3),
            size(gru.kernel, 1, 2, 3),
            size(gru.bias, 0, 1, 3),
            size(gru.recurrent_bias, 0, 1, 3),
            decoder_rows,
        )
    )
    input_dim = units(decoder[-1], encoder_rows - state_dim if encoder_rows else None)
    return FRAEConfig(
        input_dim=input_dim,
        encoder_units=hidden(encoder),
        latent_dim=units(encoder[-1], size(gru.kernel, 0, 2)),
        decoder_units=hidden(decoder),
        feedback="state",
        state_dim=state_dim,
    )


def _majority(votes: Iterable[int | None]) -> int:
    """The most frequent positive vote, the first given on a tie; 1 if there is none, as then
    the layer's bias is missing or malformed and the check that follows names it."""
    counts = Counter(vote for vote in votes if vote is not None and vote > 0)
    return counts.most_common(1)[0][0] if counts else 1


def save_weights(path: str | os.PathLike[str], weights: Mapping[str, object]) -> None:
    """Write canonical float32 weights to ``path`` (an uncompressed ``.npz``), atomically."""
    checked = validation.check_weights(weights, infer_config(weights).parameter_shapes())
    write_atomically(path, lambda stream: np.savez(stream, **checked))  # type: ignore[arg-type]


def load_weights(path: str | os.PathLike[str], config: FRAEConfig | None = None) -> Weights:
    """Read canonical weights; names, dtypes and shapes (against ``config`` when given) checked.

    Every array must be float32. Names and headers are checked before any data is
    decompressed, and nothing is unpickled.

    Raises:
        ValueError: naming the path, for a file that is not a readable ``.npz`` archive, or
            that holds other names, shapes or sizes than ``config``'s (or any config's).
        TypeError: naming the path, for an array that is not float32.
    """
    source = Path(path)
    if config is not None:
        validation.check_config(config)
    try:
        return _read_weights(source, config)
    except (TypeError, ValueError) as error:
        kind = TypeError if isinstance(error, TypeError) else ValueError
        raise kind(f"weights file {source}: {_abridged(error)}") from error
    except (OSError, EOFError, RuntimeError, zipfile.BadZipFile, zlib.error) as error:
        # RuntimeError: zipfile's encrypted members and unknown compression methods
        reason = _abridged(getattr(error, "strerror", None) or error)
        raise ValueError(
            f"weights file {source} is not a readable .npz archive: {reason}"
        ) from error


def _read_weights(path: Path, config: FRAEConfig | None) -> Weights:
    """The arrays of the ``.npz`` at ``path``: names, then headers and sizes, then data."""
    with zipfile.ZipFile(path) as archive:
        infos = archive.infolist()
        not_npy = [info.filename for info in infos if not info.filename.endswith(".npy")]
        if not_npy:
            raise ValueError(f"members must be '<canonical name>.npy', got {_SHORT.repr(not_npy)}")
        names = [info.filename.removesuffix(".npy") for info in infos]
        repeated = [name for name, count in Counter(names).items() if count > 1]
        if repeated:
            raise ValueError(f"each name must appear once, got {_SHORT.repr(repeated)} repeated")
        members = dict(zip(names, infos, strict=True))
        expected = (config or _infer_config(dict.fromkeys(members))).parameter_shapes()
        validation.check_names(members, expected, "weights must hold exactly the canonical names")
        headers = {name: _read_header(archive, name, info) for name, info in members.items()}
        layout = config or _infer_config({name: shape for name, (shape, _) in headers.items()})
        shapes = layout.parameter_shapes()
        for name, shape in shapes.items():
            found, header_size = headers[name]
            if found != shape:
                raise ValueError(f"weights[{name!r}] must have shape {shape}, got {found}")
            # zipfile reads a member no further than this size: data beyond is never inflated
            size = header_size + math.prod(shape) * _FLOAT32.itemsize
            if members[name].file_size != size:
                raise ValueError(
                    f"weights[{name!r}] must take {size} bytes (its header and {shape} float32), "
                    f"got {members[name].file_size}"
                )
        arrays = {}
        for name, info in members.items():
            with archive.open(info) as stream:
                arrays[name] = np.lib.format.read_array(stream, allow_pickle=False)
    return validation.check_weights(arrays, shapes)


def _read_header(
    archive: zipfile.ZipFile, name: str, info: zipfile.ZipInfo
) -> tuple[tuple[int, ...], int]:
    """The shape and the header's length in bytes of a float32 ``.npy`` member, read from its
    header alone (``ZipFile.open`` inflates only what is read).

    Raises:
        ValueError: the member does not start with a ``.npy`` header of format 1.0 or 2.0.
        TypeError: the header gives a dtype other than float32 (an object array's pickle is
            refused here, never read).
    """
    with archive.open(info) as stream:
        try:
            version = np.lib.format.read_magic(stream)
            if version not in _HEADER_READERS:
                raise ValueError(f"format version {version}, not 1.0 or 2.0")
            shape, _, dtype = _HEADER_READERS[version](stream)
        except ValueError as error:
            raise ValueError(f"{info.filename} must be a .npy array: {error}") from error
        if dtype != _FLOAT32:
            raise TypeError(f"weights[{name!r}] must be float32, got {dtype}")
        return shape, stream.tell()


def _abridged(message: object) -> str:
    text = str(message)
    return text if len(text) <= _MESSAGE_LIMIT else f"{text[:_MESSAGE_LIMIT]}…"
