"""Packets lost as a network loses them: a seeded two-state (Gilbert-Elliott) model, in which
a packet is lost in the bad state and received in the good one, so that losses come in bursts.

From the good state a packet turns bad with probability ``rate / (burst · (1 − rate))``, and
from the bad state good again with ``1 / burst``: over a long stream a fraction ``rate`` of
the packets is lost, in bursts of ``burst`` packets on average (the parametrisation of Lyra's
loss simulator). The stream starts in the good state.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from frae import validation


def gilbert_elliott(
    packets: int, rate: float, *, burst: float = 2.0, seed: int = 0
) -> npt.NDArray[np.bool_]:
    """Which of ``packets`` packets are lost (``True``), at a long-run ``rate`` in [0, 1), in
    bursts of ``burst`` ≥ 1 packets on average, drawn from ``seed``."""
    packets = validation.check_int(packets, "packets", least=0)
    if not 0.0 <= rate < 1.0:
        raise ValueError(f"rate must lie in [0, 1), got {rate}")
    if burst < 1.0:
        raise ValueError(f"burst must be at least 1 packet, got {burst}")
    turns_bad = rate / (burst * (1.0 - rate))
    if turns_bad > 1.0:
        raise ValueError(f"a rate of {rate} needs bursts longer than {burst} packets")
    draws = np.random.default_rng(seed).random(packets)
    lost, bad = np.zeros(packets, np.bool_), False
    for index, draw in enumerate(draws):
        bad = draw >= 1.0 / burst if bad else draw < turns_bad
        lost[index] = bad
    return lost
