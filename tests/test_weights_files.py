"""Weights files: each bad file a user could hand over is refused by its name, before its data
is inflated and never unpickled; how ``save_weights`` writes."""

from __future__ import annotations

import dataclasses
import io
import os
import stat
import struct
import tracemalloc
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

import frae
from frae.params import infer_config

OTHER = frae.FRAEConfig(input_dim=3, encoder_units=(5,), latent_dim=2, decoder_units=(4, 6))
CONFIGS = {
    "default": frae.FRAEConfig(),
    "other": OTHER,
    # no hidden layers: the encoder's 2F inputs feed the latent layer, and L + F the output
    "bare": dataclasses.replace(OTHER, encoder_units=(), decoder_units=()),
    # state feedback: the GRU's four entries between the sides, the decoder reading H
    "state": dataclasses.replace(OTHER, decoder_units=(4,), feedback="state", state_dim=6),
    "state_bare": frae.FRAEConfig(
        encoder_units=(), decoder_units=(), feedback="state", state_dim=7
    ),
}
BIAS = "decoder/output/bias"
HUGE_BYTES = 256 * 2**20
PEAK_LIMIT = 16 * 2**20  # far below HUGE_BYTES, far above the default weights' few KiB


def _weights(config: frae.FRAEConfig | None = None, seed: int = 0) -> dict[str, np.ndarray]:
    return frae.initial_weights(config or frae.FRAEConfig(), seed)


def _npy(array: np.ndarray) -> bytes:
    stream = io.BytesIO()
    np.lib.format.write_array(stream, array, allow_pickle=True)
    return stream.getvalue()


def _npy_header(shape: tuple[int, ...], dtype: str = "<f4") -> bytes:
    stream = io.BytesIO()
    header = {"descr": dtype, "fortran_order": False, "shape": shape}
    np.lib.format.write_array_header_1_0(stream, header)
    return stream.getvalue()


def _write_archive(path: Path, members: dict[str, bytes]) -> None:
    """An ``.npz`` as ``numpy.savez`` lays it out (stored, not compressed), from raw members."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # zipfile warns of duplicate names
        with zipfile.ZipFile(path, "w") as archive:
            for name, data in members.items():
                archive.writestr(name.partition("#")[0], data)  # "#": a second member


def _members(weights: dict[str, np.ndarray]) -> dict[str, bytes]:
    return {f"{name}.npy": _npy(value) for name, value in weights.items()}


def _data_offset(data: bytes, member: str) -> int:
    """Where ``member``'s stored bytes begin in the archive ``data``."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        info = archive.getinfo(member)
    name_length, extra_length = struct.unpack_from("<HH", data, info.header_offset + 26)
    return info.header_offset + 30 + name_length + extra_length


def _saved(path: Path) -> bytes:
    frae.save_weights(path, _weights())
    return path.read_bytes()


def _cut_in_member_data(path: Path) -> None:
    data = _saved(path)
    path.write_bytes(data[: _data_offset(data, f"{BIAS}.npy") + 130])


def _cut_in_directory(path: Path) -> None:
    data = _saved(path)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        directory = archive.start_dir
    path.write_bytes(data[: directory + 40])


def _flip_a_data_byte(path: Path) -> None:
    """One byte of the bias's float32 data changed (its lowest, so the value stays finite): only
    the member's CRC can tell."""
    data = bytearray(_saved(path))
    member = f"{BIAS}.npy"
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        stored_size = archive.getinfo(member).file_size
    data[_data_offset(data, member) + stored_size - 8] ^= 0x01
    path.write_bytes(bytes(data))


def _with_member(name: str, data: bytes) -> Callable[[Path], None]:
    return lambda path: _write_archive(path, {**_members(_weights()), name: data})


# (how to make the file, what the message must say besides the path)
UNREADABLE = {
    "missing": (lambda path: None, "No such file"),
    "directory": (lambda path: path.mkdir(), "directory"),
    "empty": (lambda path: path.write_bytes(b""), "not a readable .npz"),
    "cut-in-member-data": (_cut_in_member_data, "not a readable .npz"),
    "cut-in-directory": (_cut_in_directory, "not a readable .npz"),
    "cut-in-end-record": (lambda path: path.write_bytes(_saved(path)[:-7]), "not a readable .npz"),
    "npy-file": (lambda path: path.write_bytes(_npy(_weights()[BIAS])), "not a readable .npz"),
    "text-file": (lambda path: path.write_text("decoder/output/bias = [0.1, 0.2]\n"), ".npz"),
    "text-member": (_with_member("notes.txt", b"trained on Tuesday"), "notes.txt"),
    "crc-error": (_flip_a_data_byte, "CRC"),
    "not-npy-data": (_with_member(f"{BIAS}.npy", b"0.1 0.2"), "must be a .npy array"),
    "duplicate-member": (_with_member(f"{BIAS}.npy#2", _npy(_weights()[BIAS])), "repeated"),
    "short-member": (_with_member(f"{BIAS}.npy", _npy(_weights()[BIAS])[:-4]), "bytes"),
    "header-claims-4-TiB": (
        _with_member(f"{BIAS}.npy", _npy_header((2**40,)) + bytes(8)),
        "must have shape (2,), got (1099511627776,)",
    ),
}


@pytest.mark.parametrize("case", list(UNREADABLE))
def test_a_file_that_cannot_be_read_is_a_value_error_naming_it(tmp_path: Path, case: str) -> None:
    make, says = UNREADABLE[case]
    path = tmp_path / "weights.npz"
    make(path)
    with pytest.raises(ValueError, match="weights file") as caught:
        frae.load_weights(path)
    assert str(path) in str(caught.value)
    assert says in str(caught.value)
    assert len(str(caught.value)) < 1200


class _Trap:
    """Unpickled, it makes the folder ``marker``: proof that the loader ran a pickle."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, ...]:
        return os.mkdir, (str(self.marker),)


def test_an_object_member_is_refused_by_its_header_and_never_unpickled(tmp_path: Path) -> None:
    marker = tmp_path / "unpickled"
    trap = _npy(np.array([_Trap(marker), 0.0], dtype=object))
    path = tmp_path / "weights.npz"
    _write_archive(path, {**_members(_weights()), f"{BIAS}.npy": trap})
    with pytest.raises(TypeError, match="float32, got object") as caught:
        frae.load_weights(path)
    assert str(path) in str(caught.value)
    assert f"'{BIAS}'" in str(caught.value)
    assert not marker.exists(), "load_weights unpickled the member"
    np.load(io.BytesIO(trap), allow_pickle=True)  # the trap is live: unpickling springs it
    assert marker.exists()


def _wrong_shapes(shape: tuple[int, ...]) -> list[tuple[int, ...]]:
    """One size too many on each axis, an axis too many, an axis too few."""
    grown = [(*shape[:axis], size + 1, *shape[axis + 1 :]) for axis, size in enumerate(shape)]
    return [*grown, (*shape, 1), shape[:-1]]


ONE_WRONG_ENTRY = [
    pytest.param(config, name, wrong, id=f"{label}-{name}-{wrong}")
    for label, config in CONFIGS.items()
    for name, shape in config.parameter_shapes().items()
    for wrong in _wrong_shapes(shape)
]


@pytest.mark.parametrize(("config", "name", "wrong"), ONE_WRONG_ENTRY)
def test_one_wrong_shape_is_named_and_no_other(
    tmp_path: Path, config: frae.FRAEConfig, name: str, wrong: tuple[int, ...]
) -> None:
    """With no config to check against, the sizes are inferred; one wrong entry must be outvoted
    (a width read from its bias alone would blame the kernels beside a wrong bias)."""
    weights = {**_weights(config), name: np.zeros(wrong, np.float32)}
    path = tmp_path / "weights.npz"
    np.savez(path, **weights)
    messages = []
    for load in (lambda: frae.load_weights(path), lambda: infer_config(weights)):
        with pytest.raises(ValueError, match="must have shape") as caught:
            load()
        messages.append(str(caught.value))
    assert str(path) in messages[0]
    for message in messages:
        assert f"['{name}'] must have shape {config.parameter_shapes()[name]}" in message
        assert [other for other in weights if f"'{other}'" in message] == [name]


def _archive_with_huge_member(path: Path, name: str, header: bytes) -> None:
    """The default weights and a deflated member ``name``: ``header``, then HUGE_BYTES of zeros,
    written in chunks (a few hundred KiB on disk, cheap to write)."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for member, data in _members(_weights()).items():
            if member != name:
                archive.writestr(member, data)
        with archive.open(name, "w", force_zip64=True) as stream:
            stream.write(header)
            chunk = bytes(2**20)
            for _ in range(HUGE_BYTES // len(chunk)):
                stream.write(chunk)


HUGE = {
    # a name no config has, honestly announcing its 256 MiB of float32 zeros
    "extra-member": ("padding.npy", _npy_header((HUGE_BYTES // 4,)), "extra ['padding']"),
    # a canonical member whose header and first bytes are right, followed by 256 MiB more
    "member-longer-than-its-header": (
        f"{BIAS}.npy",
        _npy(_weights()[BIAS]),
        f"['{BIAS}'] must take",
    ),
}


@pytest.mark.parametrize("case", list(HUGE))
def test_a_huge_member_is_refused_before_it_is_inflated(tmp_path: Path, case: str) -> None:
    name, header, says = HUGE[case]
    path = tmp_path / "weights.npz"
    _archive_with_huge_member(path, name, header)
    assert path.stat().st_size < HUGE_BYTES // 100
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match="weights file") as caught:
            frae.load_weights(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(path) in str(caught.value)
    assert says in str(caught.value)
    assert peak < PEAK_LIMIT, f"loading allocated {peak / 2**20:.0f} MiB"


def test_round_trip_is_bit_exact_and_reads_compressed_files(tmp_path: Path) -> None:
    weights = _weights(CONFIGS["other"], seed=3)
    extremes = [-0.0, np.finfo(np.float32).smallest_subnormal, np.finfo(np.float32).max]
    weights["encoder/latent/bias"] = np.array(extremes[:2], np.float32)
    weights["decoder/output/bias"] = np.array(extremes, np.float32)
    path = tmp_path / "weights.npz"
    frae.save_weights(path, weights)
    assert list(tmp_path.iterdir()) == [path], "the temporary file of the atomic save remains"
    compressed = tmp_path / "compressed.npz"
    np.savez_compressed(compressed, **weights)
    for loaded in (frae.load_weights(path), frae.load_weights(compressed, CONFIGS["other"])):
        assert list(loaded) == list(weights)
        for name, value in weights.items():
            assert loaded[name].dtype == np.float32, name
            assert loaded[name].tobytes() == value.tobytes(), name


def test_a_float64_file_is_refused_naming_float32(tmp_path: Path) -> None:
    path = tmp_path / "weights.npz"
    np.savez(path, **{name: value.astype(np.float64) for name, value in _weights().items()})
    with pytest.raises(TypeError, match="float32"):
        frae.load_weights(path)


def test_a_file_checked_against_another_config_names_what_differs(tmp_path: Path) -> None:
    path = tmp_path / "weights.npz"
    frae.save_weights(path, _weights())
    with pytest.raises(ValueError, match="decoder/dense_1/kernel"):
        frae.load_weights(path, OTHER)


def test_a_failed_save_leaves_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "weights.npz"
    frae.save_weights(path, _weights())
    before = path.read_bytes()
    broken = _weights(seed=1)
    del broken[BIAS]
    with pytest.raises(ValueError, match=BIAS):
        frae.save_weights(path, broken)
    assert path.read_bytes() == before
    assert list(tmp_path.iterdir()) == [path]


@pytest.mark.parametrize(("umask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_a_saved_file_has_the_mode_open_would_give_it(
    tmp_path: Path, umask: int, mode: int
) -> None:
    path = tmp_path / "weights.npz"
    previous = os.umask(umask)
    try:
        frae.save_weights(path, _weights())
    finally:
        os.umask(previous)
    assert stat.S_IMODE(path.stat().st_mode) == mode


def test_save_syncs_the_whole_file_before_the_rename_and_the_folder_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[tuple[object, ...]] = []
    real_fsync, real_replace = os.fsync, os.replace

    def fsync(descriptor: int) -> None:
        status = os.fstat(descriptor)
        kind = "folder" if stat.S_ISDIR(status.st_mode) else "file"
        events.append((f"fsync {kind}", status.st_size if kind == "file" else None))
        real_fsync(descriptor)

    def replace(source: str | os.PathLike[str], target: str | os.PathLike[str]) -> None:
        events.append(("replace", Path(target).name))
        real_replace(source, target)

    monkeypatch.setattr(os, "fsync", fsync)
    monkeypatch.setattr(os, "replace", replace)
    path = tmp_path / "weights.npz"
    frae.save_weights(path, _weights())
    size = path.stat().st_size
    assert events == [("fsync file", size), ("replace", path.name), ("fsync folder", None)]
