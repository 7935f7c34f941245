"""``nn.init``: PyTorch's gains, fans and bounds; the draws come from jitgrad's generator, so they
are checked by their statistics and against ``jitgrad.rand``/``randn`` rather than PyTorch's numbers."""
from __future__ import annotations

import math

import numpy as np
import pytest
from layer_pairs import needs_torch, torch

import jitgrad as jg
import jitgrad.nn as nn
from jitgrad.nn import init
from jitgrad.random import Generator


@needs_torch
@pytest.mark.parametrize("nonlinearity,param", [
    ("linear", None), ("conv2d", None), ("sigmoid", None), ("tanh", None), ("relu", None), ("leaky_relu", None),
    ("leaky_relu", 0.2), ("selu", None)])
def test_gains_are_pytorchs(nonlinearity, param):
    assert init.calculate_gain(nonlinearity, param) == pytest.approx(torch.nn.init.calculate_gain(nonlinearity, param))


@needs_torch
@pytest.mark.parametrize("call", [
    lambda L: L.nn.init.calculate_gain("swish"),
    lambda L: L.nn.init.calculate_gain("leaky_relu", "steep"),
    lambda L: L.nn.init.xavier_uniform_(L.ones(3)),
    lambda L: L.nn.init.kaiming_normal_(L.ones(3, 3), mode="fan_both"),
])
def test_errors_are_pytorchs(call):
    with pytest.raises(ValueError) as theirs:
        call(torch)
    with pytest.raises(ValueError) as ours:
        call(jg)
    assert str(ours.value) == str(theirs.value)


def fill(fn, *shape, **kwargs) -> np.ndarray:
    jg.manual_seed(0)
    return fn(jg.empty(*shape, dtype=jg.float64), **kwargs).numpy()


def test_distributions_have_their_bounds_and_spreads():
    fan_in, fan_out = 200, 300
    uniform = fill(init.uniform_, 400, 500, a=-2.0, b=3.0)
    assert uniform.min() >= -2.0 and uniform.max() < 3.0 and abs(uniform.mean() - 0.5) < 0.02
    normal = fill(init.normal_, 400, 500, mean=1.0, std=2.0)
    assert abs(normal.mean() - 1.0) < 0.02 and abs(normal.std() - 2.0) < 0.02
    bound = math.sqrt(6.0 / (fan_in + fan_out))
    xavier = fill(init.xavier_uniform_, fan_out, fan_in)
    assert np.abs(xavier).max() <= bound and np.abs(xavier).max() > 0.99 * bound
    assert abs(fill(init.xavier_normal_, fan_out, fan_in, gain=2.0).std() - 2 * math.sqrt(2.0 / 500)) < 0.002
    kaiming = fill(init.kaiming_uniform_, fan_out, fan_in, nonlinearity="relu")
    assert np.abs(kaiming).max() <= math.sqrt(6.0 / fan_in) and np.abs(kaiming).max() > 0.99 * math.sqrt(6.0 / fan_in)
    spread = fill(init.kaiming_normal_, fan_out, fan_in, mode="fan_out", nonlinearity="relu").std()
    assert abs(spread - math.sqrt(2.0 / fan_out)) < 0.002
    assert (fill(init.constant_, 2, 3, val=0.25) == 0.25).all()
    assert (fill(init.ones_, 2) == 1).all() and (fill(init.zeros_, 2) == 0).all()


def test_receptive_field_counts_in_the_fans():
    assert init._calculate_fan_in_and_fan_out(jg.empty(8, 4, 3, 3)) == (36, 72)


def test_draws_are_the_generators():
    jg.manual_seed(7)
    drawn = init.uniform_(jg.empty(4, 5)).numpy().copy()
    jg.manual_seed(7)
    assert np.array_equal(drawn, jg.rand(4, 5).numpy())
    jg.manual_seed(7)
    normal = init.normal_(jg.empty(3, dtype=jg.float64)).numpy().copy()
    jg.manual_seed(7)
    assert np.array_equal(normal, jg.randn(3, dtype=jg.float64).numpy())
    own = Generator(7)
    assert np.array_equal(init.uniform_(jg.empty(4, 5), generator=own).numpy(), drawn)
    assert own.offset == 20


def test_fills_a_parameter_in_place():
    weight = nn.Parameter(jg.zeros(3, 3))
    version = weight._version
    assert init.kaiming_uniform_(weight, a=math.sqrt(5)) is weight
    assert weight.requires_grad and weight._version > version and weight.abs().sum().item() > 0


def test_zero_element_tensors_warn():
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        init.kaiming_uniform_(jg.empty(0, 3))


def test_trunc_normal_keeps_its_bounds_and_the_truncated_spread():
    jg.manual_seed(0)
    values = init.trunc_normal_(jg.empty(200, 300), mean=0.1, std=0.02, a=0.07, b=0.14).numpy()
    assert values.min() >= 0.07 and values.max() <= 0.14
    alpha, beta = (0.07 - 0.1) / 0.02, (0.14 - 0.1) / 0.02   # the truncated normal's moments, from its bounds
    pdf = [math.exp(-z * z / 2) / math.sqrt(2 * math.pi) for z in (alpha, beta)]
    mass = (math.erf(beta / math.sqrt(2)) - math.erf(alpha / math.sqrt(2))) / 2
    mean = 0.1 + 0.02 * (pdf[0] - pdf[1]) / mass
    std = 0.02 * math.sqrt(1 + (alpha * pdf[0] - beta * pdf[1]) / mass - ((pdf[0] - pdf[1]) / mass) ** 2)
    assert abs(values.mean() - mean) < 3e-4 and abs(values.std() - std) < 3e-4


@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 2, 3)])
def test_orthogonal_gives_orthonormal_rows_or_columns(shape):
    weight = init.orthogonal_(jg.empty(*shape), gain=2.0).numpy().reshape(shape[0], -1).astype(np.float64)
    small = min(weight.shape)
    product = weight @ weight.T if weight.shape[0] == small else weight.T @ weight
    np.testing.assert_allclose(product, 4.0 * np.eye(small), atol=1e-5)


@needs_torch
def test_eye_and_dirac_are_pytorchs():
    for shape, groups in (((4, 2, 3, 3), 2), ((3, 5, 4), 1), ((2, 2, 1, 3, 3), 1)):
        ours, theirs = init.dirac_(jg.empty(*shape), groups), torch.nn.init.dirac_(torch.empty(*shape), groups)
        assert np.array_equal(ours.numpy(), theirs.numpy())
    assert np.array_equal(init.eye_(jg.empty(2, 3)).numpy(), torch.nn.init.eye_(torch.empty(2, 3)).numpy())
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.eye_(jg.empty(2, 2, 2))
    with pytest.raises(ValueError, match="dim 0 must be divisible by groups"):
        init.dirac_(jg.empty(3, 2, 3), groups=2)


def test_sparse_zeroes_the_same_count_in_every_column():
    """PyTorch's ``sparse_``: ceil(sparsity * rows) zeros per column at random rows, normal(0, std) elsewhere."""
    values = fill(init.sparse_, 60, 50, sparsity=0.25, std=0.5)
    assert ((values == 0).sum(0) == 15).all()
    assert abs(values[values != 0].std() - 0.5) < 0.03
    assert not np.array_equal(values[:, 0] == 0, values[:, 1] == 0)  # each column draws its own rows
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions are supported"):
        init.sparse_(jg.empty(3), 0.5)
