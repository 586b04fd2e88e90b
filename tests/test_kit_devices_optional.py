"""The kit's data-parallel refusal test against ports whose factory leaves out the optional
``devices`` parameter (the contract's "Public interface"): a faithful wrapper of the
reference passes it, and a port that takes ``devices`` and ignores it fails it."""

from __future__ import annotations

import re

import pytest

import frae
from frae.config import FRAEConfig
from frae.params import Weights
from tests.processes import python


def reference_without_devices(
    config: FRAEConfig | None = None, *, seed: int = 0, weights: Weights | None = None
) -> frae.Backend:
    """The reference, built by a factory without a ``devices`` parameter."""
    return frae.create("reference", config, seed=seed, weights=weights)


def devices_ignored(
    config: FRAEConfig | None = None,
    *,
    seed: int = 0,
    weights: Weights | None = None,
    **options: object,
) -> frae.Backend:
    """The reference on one device whatever ``devices`` it is given: nothing refuses 2."""
    return frae.create("reference", config, seed=seed, weights=weights)


PORTS = {f"{__name__}:reference_without_devices": "PASSED", f"{__name__}:devices_ignored": "FAILED"}
"""Each port, and the kit's verdict on it."""


@pytest.mark.nested
def test_the_kit_passes_a_port_without_devices_and_fails_one_that_ignores_them() -> None:
    command = ["-m", "pytest", "parity_tests/test_data_parallel.py"]
    command += ["-k", "refused", "-rA", "-q", "-p", "no:cacheprovider"]
    for port in PORTS:
        command += ["--backend", port]
    result = python(*command, check=False)
    output = result.stdout + result.stderr
    verdict = re.compile(
        r"^(PASSED|FAILED) \S+::test_devices_refused_without_engine\[(\S+)\]", re.M
    )
    verdicts = {port: outcome for outcome, port in verdict.findall(output)}
    assert verdicts == PORTS, output
    assert "DID NOT RAISE" in output, output  # the port that ignores devices: not refused
