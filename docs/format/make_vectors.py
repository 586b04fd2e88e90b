"""Writes the test vectors of docs/format.md into docs/format/vectors/ with frae's codec:
``.venv/bin/python docs/format/make_vectors.py``.

A small model (two code dimensions, Δ = 2^−6, weights N(0, 1.5²) so that its codes spread
over many symbols), its prior fitted on two short sequences (so that other signals escape its
tables), whole signals in format 2 (a batch, one sequence) and in format 1, and two streams of
packets (one sequence a frame a packet with a refresh every 4, whose opening codes its
symbols in 0 bytes; two sequences in packets of several frames), each with what a receiver
that lost some packets rebuilds.
"""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from safetensors.numpy import save_file

import frae
from frae import codec
from frae.codec import byte_format, checks, coder

VECTORS = Path(__file__).parent / "vectors"
CONFIG = frae.FRAEConfig(latent_dim=2, code_step=2**-6)
WEIGHTS = {"seed": 41, "std": 1.5}
PRIOR_SIGNAL = {"batch": 2, "steps": 6, "seed": 5}
WHOLE = {
    "whole_batch.frac": {"version": 2, "signal": {"batch": 2, "steps": 8, "seed": 0}},
    "whole_one.frac": {"version": 2, "signal": {"batch": 1, "steps": 12, "seed": 51, "one": 1}},
    "format_1.frac": {"version": 1, "signal": PRIOR_SIGNAL},
}
STREAMS = {
    "one_frame": {
        "signal": {"batch": 1, "steps": 12, "seed": 51, "one": 1},
        "refresh": 4,
        "chunks": [1] * 12,
        "lost": [2, 5],
        "concealment": "mode",
    },
    "batch": {
        "signal": {"batch": 2, "steps": 12, "seed": 0},
        "refresh": 4,
        "chunks": [5, 2, 5],
        "lost": [1],
        "concealment": "repeat",
    },
}


def large_weights() -> dict[str, npt.NDArray[np.float32]]:
    """Weights N(0, std²) drawn in canonical order from the seed of ``WEIGHTS``."""
    rng, shapes = np.random.default_rng(WEIGHTS["seed"]), CONFIG.parameter_shapes()
    return {
        name: rng.normal(0.0, WEIGHTS["std"], shape).astype(np.float32)
        for name, shape in shapes.items()
    }


def signal(batch: int, steps: int, seed: int, one: int = 0) -> npt.NDArray[np.float32]:
    """``frae.data.multi_sine``'s signal (B, T, F); its first sequence (T, F) where ``one``."""
    x = frae.data.multi_sine(batch, steps, seed=seed)
    return x[0] if one else x


def floats(array: npt.ArrayLike) -> Any:
    """``array`` as nested lists of the shortest decimals that read back to its float32
    values."""
    values = np.asarray(array, np.float32)
    shortest = [float(str(value)) for value in values.ravel()]
    return np.array(shortest, dtype=object).reshape(values.shape).tolist()


def format_1(model: Any, prior: codec.Prior, x: npt.NDArray[np.float32]) -> bytes:
    """``x`` (B, T, F) in format 1: each sequence's symbols as constriction's sealed 32-bit
    words, little-endian, under format 2's header with version 1."""
    symbol_coder, sequences = coder.SymbolCoder(prior), []
    for sequence in codec.symbols(model.encode(x), prior.step):
        encoder = coder.start()
        symbol_coder.write(encoder, sequence)
        sequences.append(np.asarray(encoder.get_compressed(), "<u4").tobytes())
    header = checks.header_of(model, prior, *x.shape[:2], one=False)
    body = bytearray(byte_format.pack(header, sequences)[: -byte_format.TRAILER_BYTES])
    body[4] = 1
    return bytes(body) + struct.pack("<I", zlib.crc32(body))


def whole(model: Any, prior: codec.Prior, name: str, case: dict[str, Any]) -> dict[str, Any]:
    """A whole signal's vector: its file written, the signal, the symbols and the frames."""
    x = signal(**case["signal"])
    data = codec.compress(model, prior, x) if case["version"] == 2 else format_1(model, prior, x)
    (VECTORS / name).write_bytes(data)
    symbols = codec.read(prior, data)
    expected = codec.symbols(model.encode(x), prior.step)
    assert np.array_equal(symbols, expected.reshape(symbols.shape)), name
    frames = codec.decompress(model, prior, data)
    return {
        "file": name,
        **case,
        "x": floats(x),
        "symbols": symbols.tolist(),
        "frames": floats(frames),
    }


def packet_contents(
    model: Any, prior: codec.Prior, packet: bytes, sequences: int
) -> tuple[list[int] | None, npt.NDArray[np.int32]]:
    """The refresh state values (or ``None``) and the symbols (B, t, L) a packet carries, read
    with frae's coder."""
    head = byte_format.unpack_packet(packet)
    symbol_coder, decoder = coder.SymbolCoder(prior), coder.opened(packet[head.start :])
    state = None
    if head.kind == byte_format.REFRESH:
        width = model.initial_state().shape[-1]
        state = symbol_coder.read_values(decoder, sequences * width).reshape(sequences, width)
    read = [symbol_coder.read(decoder, head.frames) for _ in range(sequences)]
    return None if state is None else state.tolist(), np.stack(read)


def stream(model: Any, prior: codec.Prior, case: dict[str, Any]) -> dict[str, Any]:
    """A packet stream's vector: each packet's bytes, head, contents and decoded frames, and
    what a receiver that lost ``case["lost"]`` rebuilds."""
    x = signal(**case["signal"])
    sequences = 1 if x.ndim == 2 else len(x)
    chunks = np.split(x, np.cumsum(case["chunks"])[:-1], axis=-2)
    sender = codec.Encoder(model, prior, refresh=case["refresh"])
    receiver = codec.Decoder(model, prior)
    lossy = codec.Decoder(model, prior, concealment=case["concealment"])
    packets, rebuilt = [], []
    for index, chunk in enumerate(chunks):
        data = sender.push(chunk)
        head = byte_format.unpack_packet(data)
        state, symbols = packet_contents(model, prior, data, sequences)
        packets.append(
            {
                "bytes": data.hex(),
                "kind": head.kind,
                "number": head.number,
                "frames": head.frames,
                "payload_bytes": len(data) - head.start,
                "state": state,
                "symbols": symbols.tolist(),
                "frames_decoded": floats(receiver.push(data)),
            }
        )
        if index not in case["lost"]:
            rebuilt.append(lossy.push(data))
    return {
        **case,
        "x": floats(x),
        "packets": packets,
        "lossy_frames": floats(np.concatenate(rebuilt, -2)),
    }


def write_json(path: Path, document: dict[str, Any]) -> None:
    """``document`` as JSON, a key a line and a list of records a record a line."""
    lines = []
    for key, value in document.items():
        if isinstance(value, list) and value and isinstance(value[0], dict):
            records = ",\n".join(f"  {json.dumps(record)}" for record in value)
            lines.append(f" {json.dumps(key)}: [\n{records}\n ]")
        else:
            lines.append(f" {json.dumps(key)}: {json.dumps(value)}")
    path.write_text("{\n" + ",\n".join(lines) + "\n}\n")


def main() -> None:
    VECTORS.mkdir(parents=True, exist_ok=True)
    weights = large_weights()
    save_file(weights, str(VECTORS / "model.safetensors"))
    model = frae.create("reference", CONFIG, weights=weights)
    write_json(
        VECTORS / "model.json",
        {
            "config": CONFIG.to_dict(),
            "config_json": byte_format.config_json(CONFIG),
            "weights": "model.safetensors",
            "weights_drawn": WEIGHTS,
            "parameter_order": list(CONFIG.parameter_shapes()),
            "digest": byte_format.model_digest(CONFIG, weights).hex(),
        },
    )
    x = signal(**PRIOR_SIGNAL)
    prior = codec.fit_prior(model, x)
    write_json(
        VECTORS / "prior.json",
        {
            "step": prior.step,
            "precision": prior.precision,
            "lo": prior.lo.tolist(),
            "frequencies": prior.frequencies.tolist(),
            "digest": byte_format.prior_digest(prior).hex(),
            "fitted_on": {**PRIOR_SIGNAL, "x": floats(x)},
        },
    )
    cases = [whole(model, prior, name, case) for name, case in WHOLE.items()]
    write_json(VECTORS / "whole.json", {"streams": cases})
    streams = [{"name": name, **stream(model, prior, case)} for name, case in STREAMS.items()]
    write_json(VECTORS / "packets.json", {"streams": streams})


if __name__ == "__main__":
    main()
