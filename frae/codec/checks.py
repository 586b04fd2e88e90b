"""The checks a whole signal (``compression``) and a stream of packets (``packets``) share:
a model and its prior, the digests a stream carries, the signal sent, and the codes it
makes."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import numpy.typing as npt

from frae import validation
from frae.codec import byte_format
from frae.codec.prior import Prior


def check_pair(model: Any, prior: Prior) -> None:
    """A ``ValueError`` unless ``prior`` codes the symbols of ``model``'s config."""
    config = model.config
    if config.code_step is None:
        raise ValueError("a codec needs a model with code_step set")
    if (config.code_step, config.latent_dim) != (prior.step, prior.latent_dim):
        raise ValueError(
            f"the prior codes {prior.latent_dim} symbols a step of {prior.step}, the model "
            f"{config.latent_dim} a step of {config.code_step}"
        )


def checked_signal(model: Any, x: object) -> tuple[npt.NDArray[Any], bool]:
    """``x`` (B, T, F) or one sequence (T, F), checked whole as ``model.encode`` checks it,
    as (B, T, F), and whether it was one sequence."""
    array = x if isinstance(x, np.ndarray) else np.asarray(x)
    validation.check_sequences(array, "x", model.config.input_dim, np.float64)
    return (array[None], True) if array.ndim == 2 else (array, False)


def check_codes(codes: npt.NDArray[Any], first_frame: int = 0) -> None:
    """A ``ValueError`` naming the first frame whose codes are not finite (a model whose
    codes ran away inside its loop): such codes have no symbol, and are never coded."""
    finite = np.isfinite(codes).all(axis=(0, 2))
    if not finite.all():
        frame = first_frame + int(np.argmin(finite))
        raise ValueError(
            f"the model's codes are not finite from frame {frame} on (NaN or infinite): "
            "nothing was coded"
        )


def header_of(
    model: Any, prior: Prior, sequences: int, frames: int, *, one: bool
) -> byte_format.Header:
    """The header of ``sequences`` × ``frames`` frames of ``model``'s symbols under ``prior``."""
    return byte_format.Header(
        code_exponent=-int(math.log2(prior.step)),
        flags=byte_format.ONE_SEQUENCE if one else 0,
        latent_dim=prior.latent_dim,
        sequences=sequences,
        frames=frames,
        model_digest=byte_format.model_digest(model.config, model.get_weights()),
        prior_digest=byte_format.prior_digest(prior),
    )


def check_prior_digest(header: byte_format.Header, prior: Prior) -> None:
    expected = byte_format.prior_digest(prior)
    if header.prior_digest != expected:
        raise ValueError(
            f"the stream was coded under prior {header.prior_digest.hex()}, "
            f"this prior is {expected.hex()}"
        )
    if (2.0**-header.code_exponent, header.latent_dim) != (prior.step, prior.latent_dim):
        raise ValueError(f"the stream's header disagrees with its prior: {header}")


def check_model_digest(header: byte_format.Header, model: Any) -> None:
    expected = byte_format.model_digest(model.config, model.get_weights())
    if header.model_digest != expected:
        raise ValueError(
            f"the stream was made by model {header.model_digest.hex()}, "
            f"this model is {expected.hex()}"
        )
