"""Every tolerance a float32 backend is held to against the float64 reference, with the
reason for its size: the parity suite's (``parity_tests``) and ``frae compare``'s, and
the benchmark's SIMD floor's against its scalar floor (``SIMD_FLOOR``).

A float32 result is compared with the float64 reference under the entry for the quantity;
two float64 results (the reference against itself) under ``FLOAT64``. Tighten an entry when
measurements allow; never loosen one to make a failure pass.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt


@dataclass(frozen=True)
class Tolerance:
    """How close a result must be, ``|actual - expected| ≤ atol + rtol·|expected|``, and why."""

    rtol: float
    atol: float
    reason: str
    scaled: bool = False
    """``atol`` is a fraction of the expected array's largest magnitude, not an absolute."""
    float32_factor: float = 0.0
    """``atol`` is at least this multiple of ``float32_error``, the largest error a plain
    float32 NumPy evaluation of the same maths makes (measured by the caller): where a
    problem is ill-conditioned, float32 itself can do no better."""

    def __str__(self) -> str:
        """``rtol, atol`` as the tables print them, ``× largest`` where ``atol`` is scaled."""
        return f"{self.rtol:g}, {self.atol:g}{' × largest' if self.scaled else ''}"

    def absolute(self, expected: npt.ArrayLike, float32_error: float = 0.0) -> float:
        """The ``atol`` this tolerance allows around ``expected``: scaled by its largest
        magnitude if ``scaled``, and at least ``float32_factor × float32_error``."""
        largest = float(np.abs(expected).max(initial=0.0)) if self.scaled else 1.0
        return max(self.atol * largest, self.float32_factor * float32_error)

    def fraction_used(self, actual: npt.ArrayLike, expected: npt.ArrayLike) -> float:
        """The largest ``|actual - expected|`` as a fraction of what is allowed there,
        ``atol + rtol·|expected|`` (``numpy.testing.assert_allclose``'s test): within the
        tolerance at most 1; infinite or NaN where ``actual`` is not finite."""
        actual, expected = np.asarray(actual, np.float64), np.asarray(expected, np.float64)
        allowed = self.absolute(expected) + self.rtol * np.abs(expected)
        difference = np.abs(actual - expected)
        with np.errstate(divide="ignore", invalid="ignore"):
            fractions = np.where(difference == 0.0, 0.0, difference / allowed)
        return float(fractions.max(initial=0.0))


FLOAT64 = Tolerance(
    rtol=1e-12,
    atol=1e-12,
    reason="float64 rounding (1e-16) of the same maths by another route, a few hundred "
    "operations per step over at most a few thousand steps",
)

TOLERANCES = {
    "self": Tolerance(
        rtol=1e-5,
        atol=1e-6,
        reason="one float32 backend against itself by two routes (decode(encode(x)) against "
        "predict(x), one sequence against the batch): float32 rounding (6e-8) of a few "
        "hundred operations per step; the feedback is contractive, so it does not grow with T",
    ),
    "outputs": Tolerance(
        rtol=1e-5,
        atol=1e-6,
        reason="float32 outputs and codes against float64, T up to 2000: float32 rounding "
        "with inputs and weights rounded alike; the feedback is contractive, so the error "
        "does not grow with T (measured at most 4e-8 in every backend)",
    ),
    "random outputs": Tolerance(
        rtol=1e-5,
        atol=1e-6,
        float32_factor=2.0,
        reason="float32 outputs of drawn configs with weights N(0, 0.5): as 'outputs' where the "
        "problem is well conditioned; but with linear layers the feedback need not contract "
        "and intermediate values grow (a draw reaches 10.6 in 10 steps), so an entry carries "
        "the rounding of the large values it is computed from. Such a draw is held to twice "
        "the error of the same maths evaluated in float32 NumPy (measured: at most 0.96 of it, "
        "in 300 draws and the two examples the test keeps)",
    ),
    "loss": Tolerance(
        rtol=5e-6,
        atol=0.0,
        reason="a float32 mean of B·T·F squares: rounding grows with the sum's length "
        "(measured at most 2.5e-7)",
    ),
    "gradients": Tolerance(
        rtol=1e-4,
        atol=1e-4,
        scaled=True,
        reason="float32 back-propagation through time sums B·T products per weight, with "
        "cancellation; entries far below the tensor's largest are held to that largest "
        "(measured at most 1e-5 of the largest)",
    ),
    "sgd": Tolerance(
        rtol=1e-5,
        atol=0.0,
        reason="the loss of each of 50 SGD steps: per-step loss rounding plus the drift of "
        "float32 weights (measured at most 3.1e-7)",
    ),
    "sgd weights": Tolerance(
        rtol=0.0,
        atol=1e-6,
        reason="weights after 50 SGD steps: float32 updates of float32 weights "
        "(measured at most 1.1e-8)",
    ),
    "adam": Tolerance(
        rtol=1e-5,
        atol=0.0,
        reason="the loss of each of 50 Adam steps, ε = 1e-7 placed as the contract places it: "
        "m̂/√v̂ normalizes every update, so the float32 noise of a small gradient moves its "
        "weight as much as a large gradient would (measured at most 1.4e-6; ε placed as Keras' "
        "Adam places it, or 1 - β and 1 - βᵗ from differently rounded β, exceed it)",
    ),
    "adam weights": Tolerance(
        rtol=0.0,
        atol=3e-5,
        reason="weights after 50 Adam steps of lr 1e-2: as 'adam'; each step moves a weight by "
        "up to lr whatever the gradient's size (measured at most 4.7e-6)",
    ),
    "devices": Tolerance(
        rtol=1e-5,
        atol=1e-5,
        scaled=True,
        reason="one float32 backend on N devices against itself on one (losses, weights, "
        "outputs after a few SGD and Adam steps): the same maths, with each sum over the "
        "batch split into N partial sums and an all-reduce, so only the summation order "
        "differs (measured at most 1.2e-7 of the largest, jax_scan on 4 devices); a gradient "
        "summed instead of averaged, or a shard dropped, moves the weights by far more",
    ),
}


SIMD_FLOOR = {
    "outputs": Tolerance(
        rtol=1e-5,
        atol=1e-6,
        reason="x̂, z and decode(z) of two float32 evaluations: a few ulp per operation "
        "(glibc's vector swish and tanh measured within 2e-7 relative of float64) over a "
        "contractive recurrence, so the error does not grow with T (measured at most 9e-8)",
    ),
    "loss": Tolerance(
        rtol=1e-6,
        atol=0.0,
        reason="the same float64 sum of float32 squares, whose terms differ by the outputs' "
        "rounding (measured at most 1e-8 relative)",
    ),
    "gradients": Tolerance(
        rtol=1e-4,
        atol=3e-5,
        scaled=True,
        reason="B·T products per weight, each carrying the outputs' and slopes' rounding "
        "back through time, summed with cancellation: entries far below the tensor's largest "
        "are held to that largest (measured at most 2.4e-6 of it)",
    ),
    "training": Tolerance(
        rtol=1e-6,
        atol=0.0,
        reason="the loss of each of 20 steps of Adam (lr 1e-2) or SGD: each step's gradient "
        "rounding moves the weights, and Adam's normalised update carries the noise of a "
        "small gradient as far as a large one (measured at most 2.8e-8)",
    ),
}
"""The benchmark's SIMD floor against its scalar floor (``bench/baselines/simd_floor.py``
against ``numba_floor.py``): two float32 evaluations of the same maths, the sums in another
order and the activations from the vector maths library."""


def held_to(quantity: str, *, both_float64: bool) -> Tolerance:
    """The entry a comparison of ``quantity`` is held to: ``FLOAT64`` between two float64
    results, else ``TOLERANCES[quantity]``."""
    return FLOAT64 if both_float64 else TOLERANCES[quantity]
