"""Bytes cross between keras_rnn on each Keras backend this process does not run (each in a
process of its own, ``parity_tests/coding_worker.py``) and every backend here, both ways, and
between those processes: the contract's promise (2), which the kit checks within one process.

One exchange serves every pair: the Keras processes start once, together, and write their bytes
as this process writes its own; told ``go``, each decodes every other party's, as this one
decodes theirs.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import frae
from parity_tests import coding_worker as worker
from parity_tests.coding_worker import CASES, Party, bytes_path
from tests.processes import ROOT

pytest.importorskip("constriction")
keras = pytest.importorskip("keras")

# one worker runs the exchange once for every pair
pytestmark = [pytest.mark.nested, pytest.mark.xdist_group("keras_backends_codec")]

HERE = [Party(name) for name in frae.installed_backends()]
"""The parties of this process: every installed backend (keras_rnn on this process's Keras)."""
ELSEWHERE = [
    Party("keras_rnn", name)
    for name in ("tensorflow", "jax", "torch")  # each Keras backend named as its framework
    if name != keras.backend.backend()
]
"""keras_rnn on each other Keras backend, in a process of its own."""
PAIRS = [
    pytest.param(sender, receiver, id=f"{sender}-to-{receiver}")
    for sender in HERE + ELSEWHERE
    for receiver in HERE + ELSEWHERE
    if sender != receiver and (sender in ELSEWHERE or receiver in ELSEWHERE)
]
"""Every ordered pair with a party elsewhere (the kit checks the pairs within this process)."""
TIMEOUT = 600
"""Seconds a Keras process may take to write its bytes, and again to decode the others'."""


@dataclass
class Exchange:
    """Each decode's verdict (``coding_worker.verdict``) by case, sender and receiver, and why
    a Keras process failed, by party."""

    verdicts: dict[tuple[str, str, str], str | None] = field(default_factory=dict)
    failures: dict[Party, str] = field(default_factory=dict)


def absent(party: Party) -> str | None:
    """Why ``party`` cannot take part here, or ``None``."""
    if party.keras_backend and importlib.util.find_spec(party.keras_backend) is None:
        return f"{party.keras_backend} is not installed: no keras_rnn on it"
    return None


def start(party: Party, folder: Path) -> subprocess.Popen[str]:
    """``party``'s worker on its Keras backend, its stderr in ``folder/<party>.log``."""
    assert party.keras_backend is not None
    # off any GPU: this process's frameworks may hold its memory
    environment = os.environ | {"KERAS_BACKEND": party.keras_backend, "CUDA_VISIBLE_DEVICES": ""}
    command = [sys.executable, "-m", "parity_tests.coding_worker", "--folder", str(folder)]
    with open(folder / f"{party}.log", "w") as log:
        return subprocess.Popen(
            command, cwd=ROOT, env=environment, text=True,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
        )  # fmt: skip


def failed(party: Party, process: subprocess.Popen[str], folder: Path, when: str) -> str:
    """That ``party``'s process failed ``when`` writing its bytes, how it ended, and the tail
    of its stderr."""
    status = process.poll()
    ended = "still running" if status is None else f"exit status {status}"
    tail = (folder / f"{party}.log").read_text()[-3000:]
    return f"{party}'s process failed {when} writing its bytes ({ended}); its stderr:\n{tail}"


def write_here(folder: Path) -> dict[tuple[str, Party], frae.Backend]:
    """Each case's bytes made by each party of this process, in ``folder``; its models."""
    models = {}
    for case in CASES:
        ready = worker.coded(case)
        for party in HERE:
            model = frae.create(party.backend, ready.config, weights=ready.weights)
            data = frae.codec.compress(model, ready.prior, ready.x)
            worker.write_bytes(bytes_path(folder, case, party), data)
            models[case, party] = model
    return models


def wait_for_bytes(workers: dict[Party, subprocess.Popen[str]], folder: Path) -> dict[Party, str]:
    """Until each worker has written every case's bytes, or exited or run out of time first:
    why, for those that did."""
    deadline, waiting, failures = time.monotonic() + TIMEOUT, dict(workers), {}
    while waiting:
        for party, process in list(waiting.items()):
            if all(bytes_path(folder, case, party).exists() for case in CASES):
                del waiting[party]
            elif process.poll() is not None or time.monotonic() > deadline:
                failures[party] = failed(party, waiting.pop(party), folder, "before")
        time.sleep(0.1)
    return failures


def read_here(
    folder: Path, models: dict[tuple[str, Party], frae.Backend], senders: list[Party]
) -> dict[tuple[str, str, str], str | None]:
    """The verdict of each party of this process on each of ``senders``' bytes."""
    verdicts = {}
    for (case, receiver), model in models.items():
        ready = worker.coded(case)
        for sender in senders:
            data = bytes_path(folder, case, sender).read_bytes()
            verdicts[case, str(sender), str(receiver)] = worker.verdict(model, ready, data)
    return verdicts


def report(party: Party, process: subprocess.Popen[str], folder: Path, exchange: Exchange) -> None:
    """``party``'s verdicts on the others' bytes into ``exchange``, or why it gave none."""
    try:
        output, _ = process.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        output = ""
    if process.returncode != 0 or not output:
        exchange.failures[party] = failed(party, process, folder, "after")
        return
    for case, verdicts in json.loads(output.splitlines()[-1]).items():
        for sender, outcome in verdicts.items():
            exchange.verdicts[case, sender, str(party)] = outcome


@pytest.fixture(scope="module")
def exchange(tmp_path_factory: pytest.TempPathFactory) -> Exchange:
    """Every party's bytes of every case decoded by every other party of the pairs."""
    folder = tmp_path_factory.mktemp("bytes")
    workers = {party: start(party, folder) for party in ELSEWHERE if absent(party) is None}
    try:
        models = write_here(folder)
        result = Exchange(failures=wait_for_bytes(workers, folder))
        told = {party: workers[party] for party in workers if party not in result.failures}
        for process in told.values():
            assert process.stdin is not None
            with contextlib.suppress(BrokenPipeError):  # exited already: report() says how
                process.stdin.write("go\n")
                process.stdin.flush()  # communicate() closes it
        result.verdicts |= read_here(folder, models, list(told))
        for party, process in told.items():
            report(party, process, folder, result)
        return result
    finally:
        for process in workers.values():  # those failed or timed out
            if process.poll() is None:
                process.kill()
                process.wait()


@pytest.mark.parametrize(("sender", "receiver"), PAIRS)
@pytest.mark.parametrize("case", CASES)
def test_bytes_decode_to_the_references_symbols_and_signal(
    request: pytest.FixtureRequest, case: str, sender: Party, receiver: Party
) -> None:
    """Bytes ``sender`` made decompress on ``receiver`` in another process (keras_rnn on
    another Keras backend in one of them): the reference's symbols exactly, and its decode."""
    for party in (sender, receiver):
        if reason := absent(party):
            pytest.skip(reason)
    result: Exchange = request.getfixturevalue("exchange")
    key = (case, str(sender), str(receiver))
    if key not in result.verdicts:  # a process failed: its stderr, or else what is missing
        why = [result.failures[party] for party in (sender, receiver) if party in result.failures]
        message = "\n".join(why) or f"{receiver} gave no verdict on {sender}'s bytes"
        pytest.fail(message, pytrace=False)
    assert result.verdicts[key] is None, f"{sender}'s bytes on {receiver}: {result.verdicts[key]}"
