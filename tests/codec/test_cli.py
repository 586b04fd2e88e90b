"""``frae codec``: fit-prior, compress and decompress from the command line, across backends."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import frae
from frae.cli import main
from tests.codec.test_byte_format import CONFIG, large_weights

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
