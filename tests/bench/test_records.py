"""``bench.records``: records survive their JSON lines; a format not read is refused, named."""

from __future__ import annotations

import json

import pytest

from bench.measuring.job import QUICK_SETTINGS
from bench.records import (
    FORMAT,
    OLDEST,
    RECEIVER,
    STREAM,
    DoneRecord,
    EndRecord,
    Listing,
    ParityRecord,
    Point,
    ResultRecord,
    RunRecord,
    VariantRecord,
    from_json,
    parse,
    to_json,
)
from tests.bench_cases import FORMAT_1, RESULT, RUN, measured, run_record, streamed

PARITY = [
    ParityRecord(
        "keras_rnn[jax]",
        passed=True,
        worst="adam",
        used=0.06,
        errors={
            "outputs": 3.6e-9,
            "codes": 3.6e-9,
            "loss": 1.5e-7,
            "grads": 6.5e-7,
            "adam": 3.6e-7,
        },
        held_to="float32",
    ),
    ParityRecord("tf_while", passed=False, reason="RuntimeError: its process exited 1: boom"),
    ParityRecord("keras_rnn[torch]", reason="needs torch: not installed"),
]
"""A backend compared, one whose comparison raised, one that could not run (``frae compare``)."""


def test_records_survive_a_json_line_with_their_derived_figures() -> None:
    """Each kind of record comes back equal from its line; a measurement's line also carries
    µs per step and throughput, for readers of the file without ``bench.records``."""
    listing = Listing("reference", "baseline", "the reference", {"KERAS_BACKEND": "jax"})
    twin = Listing("reference_bptt", "by_hand", "by hand", twin_of="reference")
    split = Listing("reference", "devices", "split", devices=4, of="reference")
    records = [
        run_record(
            {"reference": listing, "renamed twin": twin, "split": split},
            [Point("default", 1, 20, ("predict",))],
            settings=QUICK_SETTINGS,  # tuples among its settings, lists in JSON
        ),
        VariantRecord("reference", "baseline", import_s=0.5, threads={}),
        VariantRecord("torch_eager", "baseline", skipped="needs torch"),
        measured("reference", "baseline", "predict", 3, 20, us_per_step=50.0),
        ResultRecord("reference", "train_step", 3, 20, error="ValueError: no"),
        streamed("jax_scan", "compiled", RECEIVER, 10, us_per_frame=4.0),
        *PARITY,
        DoneRecord("reference", 1.5),
        EndRecord(2.5),
    ]
    assert [from_json(to_json(r)) for r in records] == records
    line = json.loads(to_json(records[3]))
    assert line["kind"] == "result"
    assert line["us_per_step"] == pytest.approx(50.0)
    assert line["sequence_steps_per_s"] == pytest.approx(3 * 1e6 / 50.0)
    stream = json.loads(to_json(records[5]))  # a stream's side and chunk length are fields
    assert (stream["operation"], stream["side"], stream["chunk"]) == (STREAM, RECEIVER, 10)
    assert stream["us_per_step"] == pytest.approx(4.0)  # per frame


def test_a_format_this_version_does_not_know_is_refused() -> None:
    """Today's format reads as written; a later format is refused, and format 1 (no timed calls,
    no threads) with its format named."""
    (today,) = parse([json.dumps(RUN | {"format": FORMAT})])
    assert isinstance(today, RunRecord) and today.format == FORMAT
    with pytest.raises(ValueError, match=f"format must be {OLDEST} to {FORMAT}, got {FORMAT + 1}$"):
        parse([json.dumps(RUN | {"format": FORMAT + 1})])
    with pytest.raises(ValueError, match="got 1: format 1 kept no timed calls"):
        parse(FORMAT_1)


def test_parity_lines_read_after_the_run_and_a_file_of_format_3_reads_without_them() -> None:
    """``frae compare`` writes a parity line a backend after the run's line; a file of format
    3, from before them, is read as today's with none."""
    lines = [json.dumps(RUN | {"format": FORMAT}), *map(to_json, PARITY), json.dumps(RESULT)]
    run, *parity, result = parse(lines)
    assert isinstance(run, RunRecord) and isinstance(result, ResultRecord)
    assert parity == PARITY
    assert json.loads(lines[3]) == {"kind": "parity", "variant": "keras_rnn[torch]"} | {
        "reason": "needs torch: not installed"
    }  # not judged: no ``passed``, which reads back as None
    run, result = parse([json.dumps(RUN | {"format": 3}), json.dumps(RESULT)])
    assert isinstance(run, RunRecord) and run.format == FORMAT == 4
    assert isinstance(result, ResultRecord)
