"""A results file of format 1, which kept no timed calls and set no threads, is refused
with its format named: no upgrade to format 2 can fill either in (``bench.records.OLDEST``),
and ``frae diff`` says which argument it came from."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from bench import diff
from bench.records import parse

RUN = {"kind": "run", "started": "then", "command": "python -m bench", "machine": {}}
RUN |= {"grid": [["default", 1, 1000, ["predict"]]], "settings": {}, "variants": {}}
RESULT = {"kind": "result", "variant": "reference", "operation": "predict", "batch": 1}
RESULT |= {"steps": 1000, "samples": 7, "median_s": 0.04, "q1_s": 0.039, "q3_s": 0.041}
FORMAT_1 = [json.dumps(RUN), json.dumps(RESULT)]
"""A file of format 1: its run line has no ``format``, its measurement no calls."""


def test_a_file_of_format_1_is_refused_naming_its_format() -> None:
    with pytest.raises(ValueError, match="got 1: format 1 kept no timed calls"):
        parse(FORMAT_1)


def test_frae_diff_refuses_it_naming_the_argument(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = tmp_path / "results.jsonl"
    old.write_text("\n".join(FORMAT_1) + "\n")
    with pytest.raises(SystemExit) as stopped:
        diff.main([str(old), str(old)])
    assert stopped.value.code == 2
    error = capsys.readouterr().err.splitlines()[-1]
    assert "OLD must be a benchmark's results.jsonl" in error and "got 1: format 1" in error
