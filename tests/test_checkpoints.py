"""Checkpoint files (the contract's "Training state"): a round trip, today's weights files,
a writer killed at random points, every hostile file refused, naming its path, before any
data; and ``examples/resume_across_frameworks.py``, one loss curve across two backends, equal
to the second backend's uninterrupted run."""

from __future__ import annotations

import json
import os
import random
import re
import signal
import struct
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import frae
from frae.checkpoints import moment_key
from parity_tests.checks import assert_same_weights
from tests.processes import last_json, python

CONFIG = frae.FRAEConfig(feedback="state", state_dim=8, code_step=2**-5)  # its Δ in the metadata


def _trained(optimizer: str = "adam") -> tuple[dict, frae.TrainingState]:
    model = frae.create("reference", CONFIG, seed=1)
    x = frae.data.multi_sine(batch=3, steps=5, seed=2)
    history = model.fit(x, epochs=2, batch_size=2, optimizer=optimizer, learning_rate=1e-2)
    return model.get_weights(), history["training_state"]


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
def test_a_checkpoint_round_trips_bit_for_bit(tmp_path: Path, optimizer: str) -> None:
    weights, state = _trained(optimizer)
    path = frae.save_checkpoint(tmp_path / "c.safetensors", weights, state, config=CONFIG)
    loaded, loaded_state = frae.load_checkpoint(path)
    assert loaded.keys() == weights.keys()
    assert_same_weights(loaded, weights)
    assert loaded_state is not None
    counts = (optimizer, state.step, state.epoch)
    assert (loaded_state.optimizer, loaded_state.step, loaded_state.epoch) == counts
    for moment in ("m", "v"):
        expected = getattr(state, moment)
        assert getattr(loaded_state, moment).keys() == expected.keys()
        assert_same_weights(getattr(loaded_state, moment), expected, moment)


def test_a_learned_prior_and_its_moments_round_trip_with_its_rate_weight(tmp_path: Path) -> None:
    config = frae.FRAEConfig(latent_dim=2, code_step=2**-4, rate_weight=0.25)
    model = frae.create("reference", config, seed=1)
    history = model.fit(frae.data.multi_sine(3, 5, seed=2), epochs=2, learning_rate=1e-2)
    weights, state = model.get_weights(), history["training_state"]
    path = frae.save_checkpoint(tmp_path / "c.safetensors", weights, state, config=config)
    assert frae.checkpoints.load_config(path) == config
    loaded, loaded_state = frae.load_checkpoint(path, config)
    assert_same_weights(loaded, weights)
    assert loaded_state is not None and set(config.prior_parameters) <= loaded_state.m.keys()
    assert np.all(loaded["prior/log_scale"] != 0.0)  # trained, not the zeros it started from


def test_the_file_is_safetensors_with_the_contracts_names_and_metadata(tmp_path: Path) -> None:
    from safetensors import safe_open

    weights, state = _trained()
    path = frae.save_checkpoint(tmp_path / "c.safetensors", weights, state, config=CONFIG)
    with safe_open(str(path), framework="numpy") as file:
        metadata, keys = file.metadata(), set(file.keys())
    assert keys == set(weights) | {moment_key(m, n) for m in ("m", "v") for n in weights}
    assert metadata["format"] == "frae-checkpoint" and metadata["format_version"] == "1"
    assert (metadata["optimizer"], metadata["step"], metadata["epoch"]) == ("adam", "4", "2")
    adam = (repr(frae.ADAM.beta_1), repr(frae.ADAM.beta_2), repr(frae.ADAM.epsilon))
    assert (metadata["beta_1"], metadata["beta_2"], metadata["epsilon"]) == adam
    assert frae.FRAEConfig.from_dict(json.loads(metadata["config"])) == CONFIG


def test_weights_files_and_checkpoints_without_a_state_read_as_weights(tmp_path: Path) -> None:
    weights, _ = _trained()
    frae.save_weights(tmp_path / "w.npz", weights)
    frae.save_checkpoint(tmp_path / "w.safetensors", weights)
    for name in ("w.npz", "w.safetensors"):
        loaded, state = frae.load_checkpoint(tmp_path / name)
        assert state is None, name
        assert_same_weights(loaded, weights, name)
    assert frae.load_weights(tmp_path / "w.npz").keys() == weights.keys()


def test_bad_arguments_to_save_write_nothing(tmp_path: Path) -> None:
    weights, state = _trained()
    target = tmp_path / "c.safetensors"
    with pytest.raises(ValueError, match=r"training_state\.m"):
        frae.save_checkpoint(target, weights, frae.TrainingState("adam", 1, 0, {}, state.v))
    with pytest.raises(ValueError, match="canonical names"):
        frae.save_checkpoint(target, weights, state, config=frae.FRAEConfig())
    with pytest.raises(TypeError, match="training_state"):
        frae.save_checkpoint(target, weights, {"step": 1})  # type: ignore[arg-type]
    assert list(tmp_path.iterdir()) == []


CRASH_CONFIG = frae.FRAEConfig(encoder_units=(128,), decoder_units=(128,))
"""The killed writer's model: about 3,000 weights, so each save writes some 40 KB and kills
land mid-write too."""


KILLED_WRITERS_FILE = re.compile(r"\.run\.safetensors\.[0-9a-f]{16}\.tmp")
"""What a writer killed while saving ``run.safetensors`` leaves (the contract's "Training
state"): its temporary file, hidden, beside the target."""


def _numbered(n: int) -> tuple[dict[str, np.ndarray], frae.TrainingState]:
    """Checkpoint version n: every weight n, Adam's m n + 0.5 and v n + 0.25, step n."""
    shapes = CRASH_CONFIG.parameter_shapes()
    weights = {name: np.full(shape, n, np.float32) for name, shape in shapes.items()}
    m = {name: np.full(shape, n + 0.5, np.float32) for name, shape in shapes.items()}
    v = {name: np.full(shape, n + 0.25, np.float32) for name, shape in shapes.items()}
    return weights, frae.TrainingState("adam", n, 0, m, v)


def _read_version(path: Path) -> int:
    """The version the file holds, or -1 when it holds no single whole version."""
    weights, state = frae.load_checkpoint(path, CRASH_CONFIG)
    if state is None:
        return -1
    n = state.step
    expected_weights, expected_state = _numbered(n)
    same = all(np.array_equal(weights[k], expected_weights[k]) for k in weights)
    same = same and all(np.array_equal(state.m[k], expected_state.m[k]) for k in state.m)
    same = same and all(np.array_equal(state.v[k], expected_state.v[k]) for k in state.v)
    return n if same else -1


def _write_forever(path: Path, first: int, done: int) -> None:
    n = first
    while True:
        frae.save_checkpoint(path, *_numbered(n), config=CRASH_CONFIG)
        os.write(done, n.to_bytes(8, "little"))
        n += 1


def _finished(reader: int) -> list[int]:
    data = b""
    while chunk := os.read(reader, 65536):
        data += chunk
    return [int.from_bytes(data[i : i + 8], "little") for i in range(0, len(data) - 7, 8)]


def kill_writers(folder: Path, kills: int, seed: int) -> dict[str, object]:
    """Each round forks a writer that saves checkpoints to ``folder/run.safetensors`` in a
    loop, numbering them on from the file's own and telling the parent through a pipe each
    one it finished; the parent sends it SIGKILL after a random pause and reads the file.
    The kills, the versions read after them, every round where the file was not the last
    version finished or the one after it (torn, mixed or unreadable), and the names of the
    files left in ``folder`` beside the checkpoint. Run in a process of its
    own (this module as a script), which imports only NumPy, safetensors, pytest and
    ``frae``, so that forking is safe."""
    rng = random.Random(seed)
    path = folder / "run.safetensors"
    frae.save_checkpoint(path, *_numbered(0), config=CRASH_CONFIG)
    current, seen, bad = 0, [], []
    for round_ in range(kills):
        reader, writer = os.pipe()
        pid = os.fork()
        if pid == 0:  # the writer: it never returns into the loop
            try:
                os.close(reader)
                _write_forever(path, current + 1, writer)
            finally:
                os._exit(1)
        os.close(writer)
        time.sleep(rng.uniform(0.0, 0.02))
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        last = max(_finished(reader), default=current)
        os.close(reader)
        try:
            found = _read_version(path)
        except (ValueError, TypeError) as error:
            found, reason = -1, str(error)
        else:
            reason = ""
        if found not in (last, last + 1):
            bad.append({"round": round_, "last": last, "found": found, "error": reason[:300]})
        current = max(found, last)
        seen.append(found)
    left = sorted(p.name for p in folder.iterdir() if p != path)
    return {"kills": kills, "seen": seen, "bad": bad, "left": left}


def test_a_writer_killed_at_random_points_leaves_the_old_checkpoint_or_the_new(
    tmp_path: Path,
) -> None:
    """200 SIGKILLs of a process saving checkpoints in a loop (``kill_writers``): after each,
    the file holds the last checkpoint finished or the one being written, whole; beside it,
    at most a temporary file (``.<name>.<random>.tmp``) of each killed writer, none of a
    save that finished."""
    report = last_json(python("-m", "tests.test_checkpoints", str(tmp_path), "200", "7"))
    assert report["kills"] == 200 and report["bad"] == [], report["bad"]
    assert max(report["seen"]) > 20, "the writer finished too few checkpoints to be tested"
    left = report["left"]
    assert all(KILLED_WRITERS_FILE.fullmatch(name) for name in left), left[:5]
    assert len(left) <= report["kills"], f"{len(left)} files left by 200 kills"


def _valid_file(tmp_path: Path) -> bytes:
    weights, state = _trained()
    return frae.save_checkpoint(tmp_path / "good.safetensors", weights, state).read_bytes()


def _with_header(data: bytes, edit) -> bytes:
    """``data`` with its JSON header edited by ``edit`` and re-measured."""
    length = struct.unpack("<Q", data[:8])[0]
    header = json.loads(data[8 : 8 + length])
    edit(header)
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data[8 + length :]


def _offsets_past_the_end(header: dict) -> None:
    name = next(key for key in header if key != "__metadata__")
    start, end = header[name]["data_offsets"]
    header[name]["data_offsets"] = [start, end + 10**9]
    header[name]["shape"] = [1, (end + 10**9 - start) // 4]


def _float64(data: bytes) -> bytes:
    """The same checkpoint with every tensor stored as float64 (a well-formed file)."""
    from safetensors.numpy import load, save

    length = struct.unpack("<Q", data[:8])[0]
    metadata = json.loads(data[8 : 8 + length])["__metadata__"]
    return save({k: v.astype(np.float64) for k, v in load(data).items()}, metadata=metadata)


def _version(header: dict) -> None:
    header["__metadata__"]["format_version"] = "99"


def _step(header: dict) -> None:
    header["__metadata__"]["step"] = "-3"


HOSTILE = {
    "empty": (lambda data: b"", ValueError),
    "not safetensors": (lambda data: b"frae checkpoint? no" * 10, ValueError),
    "truncated": (lambda data: data[: len(data) // 2], ValueError),
    "a header longer than the file": (
        lambda data: struct.pack("<Q", len(data) * 4) + data[8:],
        ValueError,
    ),
    "an oversized header": (lambda data: struct.pack("<Q", 2**40) + data[8:], ValueError),
    "offsets past the end": (lambda data: _with_header(data, _offsets_past_the_end), ValueError),
    "float64 tensors": (_float64, TypeError),
    "another format version": (lambda data: _with_header(data, _version), ValueError),
    "a negative step": (lambda data: _with_header(data, _step), ValueError),
}


@pytest.mark.parametrize("hostile", list(HOSTILE))
def test_a_hostile_file_is_refused_naming_its_path(tmp_path: Path, hostile: str) -> None:
    make, error = HOSTILE[hostile]
    path = tmp_path / "hostile.safetensors"
    path.write_bytes(make(_valid_file(tmp_path)))
    with pytest.raises(error) as raised:
        frae.load_checkpoint(path)
    assert str(path) in str(raised.value), str(raised.value)


def test_paths_that_are_no_file_are_refused_naming_them(tmp_path: Path) -> None:
    for path in (tmp_path / "missing.safetensors", tmp_path):
        with pytest.raises(ValueError) as raised:
            frae.load_checkpoint(path)
        assert str(path) in str(raised.value)


def test_another_configs_checkpoint_is_refused_naming_the_path(tmp_path: Path) -> None:
    path = tmp_path / "c.safetensors"
    path.write_bytes(_valid_file(tmp_path))
    with pytest.raises(ValueError, match=r"shape|missing|extra") as raised:
        frae.load_checkpoint(path, frae.FRAEConfig())
    assert str(path) in str(raised.value)


def test_a_refused_file_costs_no_memory_for_the_data_it_claims(tmp_path: Path) -> None:
    """A header claiming a gigabyte that the file does not hold: refused with the peak
    memory of a fresh process grown by less than 20 MB (nothing read or allocated for it)."""
    path = tmp_path / "claims.safetensors"
    path.write_bytes(_with_header(_valid_file(tmp_path), _offsets_past_the_end))
    script = (
        "import resource, sys, frae\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "try:\n    frae.load_checkpoint(sys.argv[1])\nexcept ValueError:\n    pass\n"
        "else:\n    raise SystemExit('accepted')\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before)\n"
    )
    done = python("-c", script, str(path))
    assert int(done.stdout.split()[-1]) < 20_000, f"peak grew by {done.stdout.split()[-1]} KB"


@pytest.mark.slow
def test_the_example_continues_one_curve_on_another_backend(tmp_path: Path) -> None:
    pytest.importorskip("jax")
    command = ["-m", "examples.resume_across_frameworks"]
    command += ["--first", "reference", "--then", "jax_scan", "--first-epochs", "2"]
    command += ["--epochs", "4", "--checkpoint", str(tmp_path / "c.safetensors")]
    done = python(*command, timeout=300)
    rows = [line.split() for line in done.stdout.splitlines() if re.match(r"\s+\d+\s", line)]
    assert [int(row[0]) for row in rows] == list(range(1, 17))  # 4 mini-batches, 4 epochs
    assert {row[1] for row in rows[:8]} == {"reference"}
    assert {row[1] for row in rows[8:]} == {"jax_scan"}
    assert "checkpoint after step 8, epoch 2" in done.stdout
    gap = float(done.stdout.rsplit(":", 1)[1])
    assert gap < 1e-4, done.stdout


if __name__ == "__main__":  # FOLDER KILLS SEED: ``kill_writers``' report as JSON
    print(json.dumps(kill_writers(Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]))))


PRIOR_CONFIG = frae.FRAEConfig(latent_dim=2, code_step=2**-6)


def _with_prior(tmp_path: Path) -> tuple[Path, frae.codec.Prior, dict]:
    weights = frae.initial_weights(PRIOR_CONFIG, seed=1)
    prior = frae.codec.prior_of_symbols(np.array([[0, 1], [2, -3], [0, 1]]), 2**-6)
    path = tmp_path / "prior.safetensors"
    frae.save_checkpoint(path, weights, config=PRIOR_CONFIG, prior=prior)
    return path, prior, weights


def test_a_prior_rides_beside_the_weights(tmp_path: Path) -> None:
    path, prior, weights = _with_prior(tmp_path)
    assert frae.codec.load_prior(path) == prior
    loaded, state = frae.load_checkpoint(path)
    assert_same_weights(loaded, weights)
    assert state is None
    bare = frae.save_checkpoint(tmp_path / "bare.safetensors", weights, config=PRIOR_CONFIG)
    assert frae.codec.load_prior(bare) is None


def test_a_prior_of_another_config_writes_nothing(tmp_path: Path) -> None:
    _, prior, weights = _with_prior(tmp_path)
    finer = frae.FRAEConfig(latent_dim=2, code_step=2**-7)
    path = tmp_path / "finer.safetensors"
    with pytest.raises(ValueError, match=r"the prior codes 2 symbols a step of 0\.015625"):
        frae.save_checkpoint(path, weights, config=finer, prior=prior)
    assert not path.exists()


def _tampered(path: Path, edit) -> None:
    from safetensors.numpy import load, save

    data = path.read_bytes()
    length = struct.unpack("<Q", data[:8])[0]
    metadata = json.loads(data[8 : 8 + length])["__metadata__"]
    tensors = load(data)
    edit(tensors)
    path.write_bytes(save(tensors, metadata=metadata))


def test_a_tampered_prior_is_refused(tmp_path: Path) -> None:
    path, _, _ = _with_prior(tmp_path)
    _tampered(path, lambda t: t["codec/prior/frequencies"].__setitem__((0, 0), 7))
    with pytest.raises(ValueError, match="sum to 2\\^24"):
        frae.codec.load_prior(path)
    _tampered(path, lambda t: t.__setitem__("codec/prior/lo", t["codec/prior/lo"].astype(np.int64)))
    with pytest.raises(TypeError, match="must be I32"):
        frae.codec.load_prior(path)


def test_a_prior_gives_the_config_the_weights_imply_its_step(tmp_path: Path) -> None:
    """Shapes cannot tell ``code_step``; without ``config`` the prior's step is the step."""
    _, prior, weights = _with_prior(tmp_path)
    path = frae.save_checkpoint(tmp_path / "inferred.safetensors", weights, prior=prior)
    assert frae.checkpoints.load_config(path) == PRIOR_CONFIG
    assert frae.codec.load_prior(path) == prior
    wider = frae.codec.prior_of_symbols(np.array([[0, 1, 2]]), 2**-6)
    with pytest.raises(ValueError, match="the prior codes 3 symbols"):
        frae.save_checkpoint(tmp_path / "wider.safetensors", weights, prior=wider)
    assert not (tmp_path / "wider.safetensors").exists()


BARE_FRAE = (
    "import sys, types\n"
    "sys.modules['frae'] = types.ModuleType('frae')\n"
    "sys.modules['frae'].__path__ = ['frae']\n"
)
"""Code that makes ``frae`` a package whose ``__init__`` never runs, so that the order in
which it imports its modules cannot hide a loop between two of them."""


@pytest.mark.parametrize(
    "modules", [("frae.checkpoints", "frae.codec.prior"), ("frae.codec.prior", "frae.checkpoints")]
)
def test_checkpoints_and_the_codec_import_in_either_order(modules: tuple[str, str]) -> None:
    """``frae.checkpoints`` uses ``frae.codec.prior``; the codec imports no checkpoint module
    when it is imported, so that neither has to come first."""
    python("-c", f"{BARE_FRAE}import {', '.join(modules)}\nfrae.codec.load_prior")
