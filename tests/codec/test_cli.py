"""``frae codec``: fit-prior, compress and decompress from the command line, across backends."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import frae
from frae.cli import main
from tests.codec.small_model import CONFIG, large_weights
from tests.processes import python

pytest.importorskip("constriction")


def files(folder: Path) -> dict[str, Path]:
    paths = {name: folder / name for name in ("m.safetensors", "train.npy", "x.npy")}
    frae.save_checkpoint(paths["m.safetensors"], large_weights(41), config=CONFIG)
    np.save(paths["train.npy"], frae.data.multi_sine(8, 30, seed=1))
    np.save(paths["x.npy"], frae.data.multi_sine(3, 20, seed=2))
    return paths


def test_fit_compress_and_decompress_from_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = files(tmp_path)
    checkpoint, data, rebuilt = paths["m.safetensors"], tmp_path / "x.frac", tmp_path / "xh.npy"
    main(["codec", "fit-prior", str(checkpoint), str(paths["train.npy"])])
    main(["codec", "compress", str(checkpoint), str(paths["x.npy"]), "--out", str(data)])
    main(["codec", "decompress", str(checkpoint), str(data), "--out", str(rebuilt)])
    assert capsys.readouterr().out.split() == [str(checkpoint), str(data), str(rebuilt)]
    model = frae.create("reference", CONFIG, weights=large_weights(41))
    prior = frae.codec.load_prior(checkpoint)
    x = np.load(paths["x.npy"])
    assert prior == frae.codec.fit_prior(model, np.load(paths["train.npy"]))
    assert data.read_bytes() == frae.codec.compress(model, prior, x)
    np.testing.assert_array_equal(np.load(rebuilt), model.decode(model.encode(x)))


def test_a_checkpoint_without_a_prior_exits_saying_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = files(tmp_path)
    command = ["codec", "compress", str(paths["m.safetensors"]), str(paths["x.npy"])]
    with pytest.raises(SystemExit) as exited:
        main([*command, "--out", str(tmp_path / "x.frac")])
    assert exited.value.code == 2
    assert "holds no prior: frae codec fit-prior first" in capsys.readouterr().err


def frae_codec(*command: object) -> None:
    """``frae codec *command``, each argument as its ``str``."""
    main(["codec", *map(str, command)])


@pytest.fixture
def fitted(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Path]:
    """``files``, the checkpoint holding its prior, and ``x.frac``, ``x.npy`` compressed."""
    paths = files(tmp_path)
    checkpoint, paths["x.frac"] = paths["m.safetensors"], tmp_path / "x.frac"
    frae_codec("fit-prior", checkpoint, paths["train.npy"])
    frae_codec("compress", checkpoint, paths["x.npy"], "--out", paths["x.frac"])
    capsys.readouterr()
    return paths


def refused(capsys: pytest.CaptureFixture[str], *command: object) -> str:
    """The error ``frae codec *command`` exits 2 with: argparse's usage and one line (no
    traceback, no progress bar), nothing on stdout."""
    with pytest.raises(SystemExit) as exited:
        frae_codec(*command)
    out, err = capsys.readouterr()
    assert (exited.value.code, out) == (2, "")
    usage, error = err.splitlines()
    assert usage.startswith("usage: frae codec") and error.startswith("frae codec: error: ")
    return error


@pytest.mark.parametrize(("verb", "shape"), [("compress", (300,)), ("fit-prior", (20, 5))])
def test_a_signal_of_another_shape_is_refused_before_anything_runs(
    fitted: dict[str, Path], capsys: pytest.CaptureFixture[str], verb: str, shape: tuple[int, ...]
) -> None:
    signal, out = fitted["x.npy"].with_name("flat.npy"), fitted["x.npy"].with_name("out")
    np.save(signal, np.zeros(shape, np.float32))
    error = refused(capsys, verb, fitted["m.safetensors"], signal, "--out", out)
    assert f"{signal} must hold a signal (T, F) or (B, T, F) with F = 2" in error
    assert f"got float32 {shape}" in error
    assert not out.exists()


@pytest.mark.parametrize("kind", ["empty", "text", "compressed", "npz"])
def test_an_input_that_is_not_a_npy_array_is_refused_naming_it(
    fitted: dict[str, Path], capsys: pytest.CaptureFixture[str], kind: str
) -> None:
    given = fitted["x.npy"].with_name(f"given.{kind}")
    contents = {"empty": b"", "text": b"0.5, 1.5\n", "compressed": fitted["x.frac"].read_bytes()}
    if kind == "npz":
        np.savez(given, x=np.load(fitted["x.npy"]))  # named .npz: np.savez adds nothing
    else:
        given.write_bytes(contents[kind])
    for verb in ("compress", "fit-prior"):
        command = [verb, fitted["m.safetensors"], given, "--out", given.with_name("out")]
        assert f"{verb}: {given} is not a .npy array file" in refused(capsys, *command)
    assert not given.with_name("out").exists()


def test_an_empty_stream_is_refused(
    fitted: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    empty = fitted["x.frac"].with_name("empty.frac")
    empty.write_bytes(b"")
    refused(capsys, "decompress", fitted["m.safetensors"], empty, "--out", empty.with_name("o"))


def test_decompress_writes_the_path_given_and_prints_it(
    fitted: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    out = fitted["x.frac"].with_name("rebuilt")
    frae_codec("decompress", fitted["m.safetensors"], fitted["x.frac"], "--out", out)
    assert capsys.readouterr().out == f"{out}\n"
    assert np.load(out).shape == (3, 20, 2)
    assert not out.with_name("rebuilt.npy").exists()


@pytest.mark.parametrize(
    ("verb", "given", "out"),
    [
        ("compress", "x.npy", "x.npy"),
        ("compress", "x.npy", "m.safetensors"),
        ("decompress", "x.frac", "x.frac"),
        ("decompress", "x.frac", "m.safetensors"),
        ("fit-prior", "train.npy", "train.npy"),
    ],
)
def test_an_output_over_an_input_is_refused_before_anything_is_written(
    fitted: dict[str, Path], capsys: pytest.CaptureFixture[str], verb: str, given: str, out: str
) -> None:
    before = {path: path.read_bytes() for path in fitted.values()}
    elsewhere = fitted[out].parent / "elsewhere"
    elsewhere.mkdir()
    spelled = elsewhere / ".." / out  # another spelling of the same file
    error = refused(capsys, verb, fitted["m.safetensors"], fitted[given], "--out", spelled)
    role = "checkpoint" if out == "m.safetensors" else "input"
    assert f"--out {spelled} is the {role}: it would be overwritten" in error
    assert {path: path.read_bytes() for path in fitted.values()} == before


FILES_UP_TO_16_BYTES = """
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails, EFBIG
resource.setrlimit(resource.RLIMIT_FSIZE, (16, 16))
from frae.cli import main
main(sys.argv[1:])
"""
"""``frae`` run in a process that cannot write a file past 16 bytes: every output fails
midway."""


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_FSIZE and EFBIG as Linux has them")
@pytest.mark.parametrize(
    ("verb", "given"),
    [("compress", "x.npy"), ("decompress", "x.frac"), ("fit-prior", "train.npy")],
)
def test_a_write_that_fails_midway_leaves_the_old_file(
    fitted: dict[str, Path], verb: str, given: str
) -> None:
    out = fitted["x.npy"].with_name("out")
    out.write_bytes(b"old")
    command = [verb, str(fitted["m.safetensors"]), str(fitted[given]), "--out", str(out)]
    done = python("-c", FILES_UP_TO_16_BYTES, "codec", *command, check=False)
    assert done.returncode == 2 and "File too large" in done.stderr, done.stderr
    assert out.read_bytes() == b"old"
    assert sorted(path.name for path in out.parent.iterdir()) == sorted(
        ["out", *(path.name for path in fitted.values())]
    )


LEARNED = frae.FRAEConfig(latent_dim=2, code_step=2**-6, rate_weight=0.01)


def learned_checkpoint(folder: Path) -> tuple[Path, frae.Backend]:
    """A checkpoint of a model with a learned prior (μ and ρ set apart from their zeros)."""
    weights = large_weights(41) | {
        "prior/location": np.array([0.1, -0.3], np.float32),
        "prior/log_scale": np.array([-2.0, -1.0], np.float32),
    }
    path = frae.save_checkpoint(folder / "m.safetensors", weights, config=LEARNED)
    return path, frae.create("reference", LEARNED, weights=weights)


def test_fit_prior_takes_the_learned_prior_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    checkpoint, model = learned_checkpoint(tmp_path)
    frae_codec("fit-prior", checkpoint)
    assert "the model's learned prior" in capsys.readouterr().err
    assert frae.codec.load_prior(checkpoint) == frae.codec.prior_from_model(model)


def test_fit_prior_counts_a_signal_only_when_asked_where_the_model_learned_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    checkpoint, model = learned_checkpoint(tmp_path)
    train = tmp_path / "train.npy"
    np.save(train, frae.data.multi_sine(8, 30, seed=1))
    frae_codec("fit-prior", checkpoint, train)
    assert f"{train} not read" in capsys.readouterr().err
    assert frae.codec.load_prior(checkpoint) == frae.codec.prior_from_model(model)
    frae_codec("fit-prior", checkpoint, train, "--counted")
    assert f"the counts of the symbols of {train}" in capsys.readouterr().err
    assert frae.codec.load_prior(checkpoint) == frae.codec.fit_prior(model, np.load(train))


def test_fit_prior_without_a_signal_or_a_learned_prior_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = files(tmp_path)
    error = refused(capsys, "fit-prior", paths["m.safetensors"])
    assert "no learned prior (rate_weight): give the signal" in error
