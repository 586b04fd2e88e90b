"""The core's written-once facts: the layer table, config dicts, Adam's constants."""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest

import frae
from parity_tests.cases import CASES


@pytest.mark.parametrize("name", CASES)
def test_the_layer_table_chains_widths_and_gives_the_output_its_own_activation(name: str) -> None:
    config = CASES[name].config
    encoder, decoder, gru = config.encoder_layers, config.decoder_layers, config.gru
    if config.feedback == "output":
        assert gru is None and config.state_dim is None
        assert encoder[0].fan_in == 2 * config.input_dim
        assert decoder[0].fan_in == config.latent_dim + config.input_dim
    else:  # [x_t, s_{t-1}] in; the GRU between the sides; its state s_t into the decoder
        assert gru is not None and config.state_dim is not None
        assert encoder[0].fan_in == config.input_dim + config.state_dim
        assert (gru.input_dim, gru.state_dim) == (config.latent_dim, config.state_dim)
        assert decoder[0].fan_in == config.state_dim
    for side in (encoder, decoder):
        assert all(a.units == b.fan_in for a, b in itertools.pairwise(side))
    assert (encoder[-1].name, encoder[-1].units) == ("encoder/latent", config.latent_dim)
    assert (decoder[-1].name, decoder[-1].units) == ("decoder/output", config.input_dim)
    assert decoder[-1].activation == config.output_activation
    assert {layer.activation for layer in (*encoder, *decoder[:-1])} <= {config.activation}
    assert config.layers == encoder + decoder
    shapes = config.parameter_shapes()
    names = [n for layer in encoder for n in (layer.kernel, layer.bias)]
    if gru is not None:
        names += [gru.kernel, gru.recurrent_kernel, gru.bias, gru.recurrent_bias]
    names += [n for layer in decoder for n in (layer.kernel, layer.bias)]
    names += ["prior/location", "prior/log_scale"] if config.rate_weight is not None else []
    assert list(shapes) == names


@pytest.mark.parametrize("name", CASES)
def test_config_dicts_round_trip_through_json(name: str) -> None:
    config = CASES[name].config
    fields = json.loads(json.dumps(config.to_dict()))
    assert frae.FRAEConfig.from_dict(fields) == config


def test_every_code_step_of_the_contract_is_taken_as_a_float() -> None:
    """Δ = 2^-k for k = 0 … 14, from an int, a float or a NumPy scalar; one of each beyond."""
    steps = [1, *(2.0**-k for k in range(1, 14)), np.float32(2**-14)]
    assert [frae.FRAEConfig(code_step=step).code_step for step in steps] == [
        2.0**-k for k in range(15)
    ]
    assert all(type(frae.FRAEConfig(code_step=step).code_step) is float for step in steps)
    config = frae.FRAEConfig(code_step=2**-5)
    assert frae.FRAEConfig.from_dict(json.loads(json.dumps(config.to_dict()))) == config


def test_config_dicts_reject_unknown_fields_and_bad_values() -> None:
    with pytest.raises(ValueError, match="hidden_units"):
        frae.FRAEConfig.from_dict({"hidden_units": [3]})
    with pytest.raises(ValueError, match="activation"):
        frae.FRAEConfig.from_dict({"activation": "relu"})
    with pytest.raises(TypeError, match="dict"):
        frae.FRAEConfig.from_dict([("input_dim", 2)])  # type: ignore[arg-type]


def test_a_rate_weight_needs_a_code_step_and_a_finite_weight_of_at_least_zero() -> None:
    for weight in (0, 0.0, 2, np.float32(0.5)):
        config = frae.FRAEConfig(code_step=2**-3, rate_weight=weight)
        assert type(config.rate_weight) is float and config.rate_weight == float(weight)
    for fields, match in [
        ({"rate_weight": 0.1}, r"rate_weight.*needs code_step"),
        ({"code_step": 0.5, "rate_weight": -0.1}, "rate_weight must be a finite number"),
        ({"code_step": 0.5, "rate_weight": float("inf")}, "rate_weight must be a finite"),
        ({"code_step": 0.5, "rate_weight": float("nan")}, "rate_weight must be a finite"),
    ]:
        with pytest.raises(ValueError, match=match):
            frae.FRAEConfig(**fields)
    for bad in ("0.1", True, [0.1]):
        with pytest.raises(TypeError, match="rate_weight must be a number"):
            frae.FRAEConfig(code_step=0.5, rate_weight=bad)


def test_a_rate_weight_adds_the_prior_at_zero_and_draws_the_rest_as_before() -> None:
    plain = frae.FRAEConfig(latent_dim=3, code_step=2**-4)
    config = frae.FRAEConfig(latent_dim=3, code_step=2**-4, rate_weight=0.0)
    shapes = config.parameter_shapes()
    assert list(shapes) == [*plain.parameter_shapes(), "prior/location", "prior/log_scale"]
    assert shapes["prior/location"] == shapes["prior/log_scale"] == (3,)
    weights, before = frae.params.initial_weights(config, 7), frae.params.initial_weights(plain, 7)
    for name in config.prior_parameters:
        np.testing.assert_array_equal(weights.pop(name), np.zeros(3, np.float32))
    assert weights.keys() == before.keys()
    for name, value in before.items():
        np.testing.assert_array_equal(weights[name], value)
    assert plain.prior_parameters == ()


def test_weights_holding_a_prior_imply_a_rate_config() -> None:
    config = frae.FRAEConfig(latent_dim=2, code_step=2**-4, rate_weight=0.3)
    implied = frae.params.infer_config(frae.params.initial_weights(config))
    assert implied.parameter_shapes() == config.parameter_shapes()
    assert (implied.code_step, implied.rate_weight) == (1.0, 0.0)


def test_adam_constants_and_their_float32_rounding() -> None:
    assert (frae.ADAM.beta_1, frae.ADAM.beta_2, frae.ADAM.epsilon) == (0.9, 0.999, 1e-7)
    beta_1, beta_2 = frae.ADAM.float32_betas()
    assert beta_1.dtype == beta_2.dtype == np.float32
    assert float(beta_2) != 0.999  # the rounding the rule is about: 0.99900001
    assert beta_2 == np.float32(0.999)
    assert frae.OPTIMIZERS == ("sgd", "adam")
