"""The demo's models and how each backend trains them."""

from __future__ import annotations

from dataclasses import replace

from frae.config import FRAEConfig

WINDOW = 7
"""Frames per sequence: the shortest utterance's length."""
CHANNELS = 12
BATCH_SIZE = 250
EPOCHS = 150
LEARNING_RATE = 0.02
"""300 Adam steps, two mini-batches an epoch: the reference reaches the held-out SNR of
1500 steps in batches of 50 with them, in a fifth of the steps a slow backend pays for."""
SEED = 0
OUTPUT_FEEDBACK = FRAEConfig(
    input_dim=CHANNELS,
    encoder_units=(32,),
    latent_dim=4,
    decoder_units=(32,),
    activation="tanh",
    output_activation="linear",
)
MODELS = {
    "output": OUTPUT_FEEDBACK,
    "state": replace(OUTPUT_FEEDBACK, feedback="state", state_dim=16),
}
"""Both models by the feedback they use: 12 channels through a code of 4, one hidden layer
of 32 a side, tanh inside; the state model's GRU has 16 units. Each backend trains both,
output feedback (the contract's "The model") and GRU state feedback (the contract's "State
feedback"), from the same initial weights, on the same windows, with the same Adam settings
and shuffling."""
