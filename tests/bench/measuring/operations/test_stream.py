"""``bench.measuring.operations.stream``: the stream at each side and chunk length, the state
carried from call to call, and why where a backend cannot stream."""

from __future__ import annotations

import numpy as np
import pytest

import frae
from bench.grid import STREAM_CHUNKS
from bench.measuring.job import Job, Settings
from bench.measuring.operations.stream import pieces, streams
from bench.measuring.worker import measure_shape
from bench.records import RECEIVER, SENDER, STREAM, Point
from frae.data import multi_sine
from impls.reference import ReferenceBackend

TINY = Settings(repeats=2, min_time_s=0.0, budget_s=0.0, max_samples=2)
"""Two timed runs of a side: enough for quartiles, fast on the reference."""


class EncodeNotOffered(ReferenceBackend):
    """A backend without ``encode`` and ``decode``: its stream is unsupported."""

    def _encode(self, x: np.ndarray, state: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError("this backend predicts alone")


def test_the_worker_streams_the_reference_at_each_side_and_chunk_length() -> None:
    job = Job(variant="reference", backend="reference", settings=TINY)
    rows = list(measure_shape(job, Point("default", 1, 20, (STREAM,))))
    expected = [(side, chunk) for side in (SENDER, RECEIVER) for chunk in STREAM_CHUNKS]
    assert [(r.side, r.chunk) for r in rows] == expected
    each = (STREAM, 1, 20, 2, 1)  # the operation, B, T, samples and steps per sample
    for r in rows:
        assert (r.operation, r.batch, r.steps, r.samples, r.steps_per_sample) == each
        assert r.q1_s is not None and r.median_s is not None and r.q3_s is not None
        assert 0 < r.q1_s <= r.median_s <= r.q3_s and r.first_call_s, r
        assert r.us_per_step == pytest.approx(r.median_s / 20 * 1e6)  # µs per frame


def test_a_backend_that_cannot_stream_gets_every_row_with_why() -> None:
    backend = "tests.bench.measuring.operations.test_stream:EncodeNotOffered"
    job = Job(variant="no", backend=backend, settings=TINY)
    rows = list(measure_shape(job, Point("default", 1, 20, (STREAM,))))
    assert len(rows) == 4 and {r.unsupported for r in rows} == {"this backend predicts alone"}
    assert all(r.median_s is None and r.side and r.chunk for r in rows)


def test_the_streamed_runs_carry_the_state_from_call_to_call() -> None:
    """Each side's run ends at the state one whole call ends at; a chunk length that does not
    divide T leaves a shorter last chunk."""
    model = frae.create("reference", frae.FRAEConfig(feedback="state", state_dim=3), seed=1)
    x = multi_sine(batch=1, steps=23, features=2, seed=0)
    codes, sent = model.encode(x, return_state=True)
    _, received = model.decode(codes, return_state=True)
    for stream in streams(model, x, codes, chunks=(1, 10)):
        last = stream.run()
        np.testing.assert_allclose(last, sent if stream.side == SENDER else received, rtol=1e-12)
    cut = pieces(x, 10)
    assert [piece.shape[1] for piece in cut] == [10, 10, 3]
    assert all(piece.flags.c_contiguous for piece in cut)
    np.testing.assert_array_equal(np.concatenate(cut, axis=1), x)
