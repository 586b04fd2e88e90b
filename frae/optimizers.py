"""The optimizers of the contract (its "Optimizers" section), written once.

Every backend reads its constants here; none defines its own.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

OPTIMIZERS = ("sgd", "adam")
"""``"sgd"``: w ← w − lr·g. ``"adam"``: as ``AdamSpec`` defines it."""


@dataclass(frozen=True)
class AdamSpec:
    """Adam with ε outside the root, t counting steps from 1::

        m ← β₁m + (1 − β₁)g;   v ← β₂v + (1 − β₂)g²
        w ← w − lr·m̂/(√v̂ + ε),  m̂ = m/(1 − β₁ᵗ),  v̂ = v/(1 − β₂ᵗ)

    Keras' ``Adam`` folds the bias corrections into the step size, which moves ε inside,
    m̂/(√v̂ + ε/√(1 − β₂ᵗ)): not this rule.
    """

    beta_1: float = 0.9
    beta_2: float = 0.999
    epsilon: float = 1e-7

    def float32_betas(self) -> tuple[np.float32, np.float32]:
        """β₁ and β₂ rounded to float32 once, so that a float32 backend's 1 − β and 1 − βᵗ
        cancel exactly in m̂ and v̂: mixing the double and float32 β (as optax and TensorFlow
        do with Python floats) moves 50 Adam steps outside the parity tolerance.
        """
        return np.float32(self.beta_1), np.float32(self.beta_2)


ADAM = AdamSpec()
