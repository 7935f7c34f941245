"""Each family's quantities (log_prob, cdf, icdf, entropy, mean, mode, variance, stddev) and their
gradients with respect to the parameters, compared with torch.distributions on the same values."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad
import jitgrad.distributions as jd

torch = pytest.importorskip("torch")
td = torch.distributions

# name (the family, then which parameter it is given) -> (its parameters, a value to score)
CASES = {
    "Normal": ({"loc": [0.3, -1.2, 2.0], "scale": [0.5, 1.5, 2.0]}, [0.1, -0.4, 3.0]),
    "LogNormal": ({"loc": [0.3, -1.2, 0.5], "scale": [0.5, 1.5, 0.7]}, [0.4, 1.3, 2.5]),
    "Laplace": ({"loc": [0.3, -1.2, 2.0], "scale": [0.5, 1.5, 2.0]}, [0.1, -0.4, 3.0]),
    "Uniform": ({"low": [0.0, -2.0, 1.0], "high": [1.0, 3.0, 1.5]}, [0.5, 2.9, 1.2]),
    "Exponential": ({"rate": [0.5, 1.0, 3.0]}, [0.2, 1.7, 0.01]),
    "Bernoulli-probs": ({"probs": [0.2, 0.5, 0.9]}, [1.0, 0.0, 1.0]),
    "Bernoulli-logits": ({"logits": [-2.0, 0.0, 3.0]}, [1.0, 0.0, 0.0]),
    "Categorical-probs": ({"probs": [[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]]}, [2, 0]),
    "Categorical-logits": ({"logits": [[0.2, -1.3, 0.5], [2.0, 0.1, -0.3]]}, [1, 2]),
    "OneHotCategorical": ({"logits": [[0.2, -1.3, 0.5], [2.0, 0.1, -0.3]]}, [[0, 1, 0], [0, 0, 1]]),
    "Gamma": ({"concentration": [0.5, 2.0, 3.5], "rate": [1.0, 0.5, 2.0]}, [0.3, 2.0, 1.1]),
    "Beta": ({"concentration1": [1.5, 2.0, 3.5], "concentration0": [1.2, 0.5, 2.0]}, [0.3, 0.9, 0.5]),
    "Dirichlet": ({"concentration": [[1.5, 2.0, 3.5], [1.2, 1.5, 2.0]]}, [[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]]),
    "Cauchy": ({"loc": [0.3, -1.2, 2.0], "scale": [0.5, 1.5, 2.0]}, [0.1, -0.4, 3.0]),
    "HalfNormal": ({"scale": [0.5, 1.5, 2.0]}, [0.1, 0.4, 3.0]),
    "HalfCauchy": ({"scale": [0.5, 1.5, 2.0]}, [0.1, 0.4, 3.0]),
    "Gumbel": ({"loc": [0.3, -1.2, 2.0], "scale": [0.5, 1.5, 2.0]}, [0.1, -0.4, 3.0]),
    "Weibull": ({"scale": [0.5, 1.5, 2.0], "concentration": [0.7, 1.5, 3.0]}, [0.1, 0.4, 3.0]),
    "Pareto": ({"scale": [0.5, 1.5, 2.0], "alpha": [0.7, 1.5, 3.0]}, [0.6, 1.6, 3.0]),
    "Kumaraswamy": ({"concentration1": [0.7, 1.5, 3.0], "concentration0": [2.0, 0.5, 1.5]}, [0.1, 0.4, 0.9]),
    "InverseGamma": ({"concentration": [0.5, 1.5, 3.0], "rate": [2.0, 0.5, 1.5]}, [0.1, 0.4, 3.0]),
    "Chi2": ({"df": [0.8, 2.0, 5.0]}, [0.3, 2.0, 1.1]),
    "StudentT": ({"df": [0.8, 1.5, 4.0], "loc": [0.3, -1.2, 2.0], "scale": [0.5, 1.5, 2.0]}, [0.1, -0.4, 3.0]),
    "Geometric-probs": ({"probs": [0.2, 0.5, 1.0]}, [3.0, 1.0, 0.0]),
    "Geometric-logits": ({"logits": [-2.0, 0.0, 3.0]}, [1.0, 0.0, 4.0]),
    "Poisson": ({"rate": [0.5, 2.0, 7.5]}, [0.0, 3.0, 6.0]),
    "Binomial-probs": ({"total_count": [5.0, 5.0, 5.0], "probs": [0.2, 0.5, 0.9]}, [1.0, 5.0, 3.0]),
    "Binomial-logits": ({"total_count": [3.0, 4.0, 6.0], "logits": [-2.0, 0.0, 3.0]}, [0.0, 2.0, 6.0]),
    "ContinuousBernoulli-probs": ({"probs": [0.2, 0.5003, 0.9]}, [0.3, 0.9, 1.0]),   # 0.5003: the Taylor branch
    "ContinuousBernoulli-logits": ({"logits": [-2.0, 0.001, 3.0]}, [0.0, 0.4, 0.7]),
    "LogisticNormal": ({"loc": [[0.3, -1.2], [0.0, 1.0]], "scale": [[0.5, 1.5], [2.0, 0.3]]},
                       [[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]]),
}
NOT_BUILT: set[tuple[str, str]] = set()
# PyTorch 2.13's Kumaraswamy.mode is nan wherever concentration0 != 1: checked against the density instead
WRONG_IN_TORCH = {("Kumaraswamy", "mode")}
# PyTorch's igamma has no derivative in its first argument: both refuse
NO_GRADIENT_IN = {("Gamma", "cdf"): "concentration", ("InverseGamma", "cdf"): "concentration",
                  ("Chi2", "cdf"): "df"}
QUANTITIES = ("log_prob", "cdf", "icdf", "entropy", "mean", "mode", "variance", "stddev")


def build(name, library, params, dtype):
    family = name.split("-")[0]
    if library is jd:
        tensors = {k: jitgrad.tensor(np.array(v, dtype=np.float64), dtype=dtype, requires_grad=True)
                   for k, v in params.items()}
    else:
        tensors = {k: torch.tensor(v, dtype=dtype, requires_grad=True) for k, v in params.items()}
    return getattr(library, family)(**tensors), tensors


def quantity(dist, what, value, is_torch):
    if what in ("log_prob", "cdf"):
        return getattr(dist, what)(value)
    if what == "icdf":
        probability = torch.tensor([0.1, 0.5, 0.8], dtype=value.dtype) if is_torch else \
            jitgrad.tensor([0.1, 0.5, 0.8], dtype=value.dtype)
        return dist.icdf(probability)
    if what == "entropy":
        return dist.entropy()
    return getattr(dist, what)


@pytest.mark.parametrize("what", QUANTITIES)
@pytest.mark.parametrize("name", CASES)
def test_quantity_and_gradients_match_torch(name, what):
    if (name, what) in NOT_BUILT | WRONG_IN_TORCH:
        pytest.skip(f"{name}.{what} is not built or not PyTorch's")
    params, value = CASES[name]
    is_discrete = name.startswith(("Categorical", "Bernoulli", "OneHot", "Geometric", "Poisson", "Binomial"))
    t_dist, t_params = build(name, td, params, torch.float64)
    j_dist, j_params = build(name, jd, params, jitgrad.float64)
    value_dtype = torch.int64 if name.startswith("Categorical") else torch.float64
    t_value = torch.tensor(value, dtype=value_dtype)
    j_value = jitgrad.tensor(value, dtype=jitgrad.int64 if value_dtype is torch.int64 else jitgrad.float64)
    try:
        expected = quantity(t_dist, what, t_value, True)
    except NotImplementedError:
        with pytest.raises(NotImplementedError):
            quantity(j_dist, what, j_value, False)
        return
    got = quantity(j_dist, what, j_value, False)
    assert tuple(got.shape) == tuple(expected.shape), (name, what)
    np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), rtol=1e-6, atol=1e-9,
                               equal_nan=True)
    if not expected.requires_grad or expected.dtype != torch.float64 or (is_discrete and what == "mode"):
        return
    weights = np.linspace(0.5, 1.5, expected.numel()).reshape(tuple(expected.shape))
    refused = NO_GRADIENT_IN.get((name, what))
    if refused is not None:
        for total, parameter, lib in (((expected * torch.tensor(weights)).sum(), t_params[refused], torch),
                                      ((got * jitgrad.tensor(weights)).sum(), j_params[refused], jitgrad)):
            with pytest.raises(NotImplementedError, match="the derivative for 'igamma: input' is not implemented"):
                lib.autograd.grad(total, [parameter], retain_graph=True)
        t_params = {k: v for k, v in t_params.items() if k != refused}
        j_params = {k: v for k, v in j_params.items() if k != refused}
        if not t_params:
            return
    t_grads = torch.autograd.grad((expected * torch.tensor(weights)).sum(), list(t_params.values()),
                                  allow_unused=True)
    j_grads = jitgrad.autograd.grad((got * jitgrad.tensor(weights)).sum(), list(j_params.values()),
                                    allow_unused=True)
    for key, t_grad, j_grad in zip(t_params, t_grads, j_grads):
        if t_grad is None:
            continue
        got_grad = np.zeros(t_grad.shape) if j_grad is None else j_grad.numpy()
        np.testing.assert_allclose(got_grad, t_grad.numpy(), rtol=1e-6, atol=1e-9, err_msg=f"{name}.{what} d/d{key}")


@pytest.mark.parametrize("name", CASES)
def test_shapes_support_and_flags_match_torch(name):
    params, _ = CASES[name]
    t_dist, _ = build(name, td, params, torch.float32)
    j_dist, _ = build(name, jd, params, jitgrad.float32)
    assert tuple(j_dist.batch_shape) == tuple(t_dist.batch_shape)
    assert tuple(j_dist.event_shape) == tuple(t_dist.event_shape)
    assert j_dist.has_rsample == t_dist.has_rsample
    # these supports show their bounds, tensors printed by each library
    if name not in ("Uniform", "Pareto", "Binomial-probs", "Binomial-logits"):
        assert repr(j_dist.support) == repr(t_dist.support)
    assert j_dist.support.is_discrete == t_dist.support.is_discrete
    assert j_dist.support.event_dim == t_dist.support.event_dim
    expanded_t = t_dist.expand((4,) + tuple(t_dist.batch_shape))
    expanded_j = j_dist.expand((4,) + tuple(j_dist.batch_shape))
    assert tuple(expanded_j.batch_shape) == tuple(expanded_t.batch_shape)
    assert tuple(expanded_j.sample((2,)).shape) == tuple(expanded_t.sample((2,)).shape)
    assert str(expanded_j.sample().dtype).split(".")[1] == str(expanded_t.sample().dtype).split(".")[1]


def test_kumaraswamy_mode_is_where_the_density_peaks():
    a, b = jitgrad.tensor([0.7, 1.5, 3.0, 2.0, 1.0], requires_grad=True), jitgrad.tensor([2.0, 0.5, 1.5, 2.0, 3.0])
    dist = jd.Kumaraswamy(a, b)
    grid = jitgrad.tensor(np.linspace(1e-4, 1 - 1e-4, 20001)).reshape(-1, 1)
    peaks = grid.numpy()[dist.log_prob(grid).detach().numpy().argmax(0), 0]
    mode = dist.mode
    np.testing.assert_allclose(mode.detach().numpy(), [np.nan, np.nan, peaks[2], peaks[3], 0.0], atol=1e-4)
    assert np.isnan(td.Kumaraswamy(torch.tensor([3.0]), torch.tensor([1.5])).mode.item())   # PyTorch's
    (grad,) = jitgrad.autograd.grad(mode[2:4].sum(), [a])   # d/da ((a - 1) / (a b - 1)) ** (1 / a)
    step, c1, c0 = 1e-6, np.array([3.0, 2.0]), np.array([1.5, 2.0])

    def closed_form(x):
        return ((x - 1) / (x * c0 - 1)) ** (1 / x)
    np.testing.assert_allclose(grad.numpy()[2:4], (closed_form(c1 + step) - closed_form(c1 - step)) / (2 * step),
                               rtol=1e-6)


def test_independent_sums_log_prob_and_entropy_over_reinterpreted_dims():
    loc, scale = np.array([[0.1, -0.5, 1.0], [2.0, 0.0, -1.0]]), np.array([[0.5, 1.0, 2.0], [1.5, 0.3, 0.9]])
    value = np.array([[0.3, 0.2, -0.1], [1.0, 0.4, 0.0]])
    j_loc = jitgrad.tensor(loc, requires_grad=True)
    t_loc = torch.tensor(loc, requires_grad=True)
    j = jd.Independent(jd.Normal(j_loc, jitgrad.tensor(scale)), 1)
    t = td.Independent(td.Normal(t_loc, torch.tensor(scale)), 1)
    assert (tuple(j.batch_shape), tuple(j.event_shape)) == ((2,), (3,))
    np.testing.assert_allclose(j.log_prob(jitgrad.tensor(value)).detach().numpy(),
                               t.log_prob(torch.tensor(value)).detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(j.entropy().numpy(), t.entropy().numpy(), rtol=1e-12)
    j.log_prob(jitgrad.tensor(value)).sum().backward()
    t.log_prob(torch.tensor(value)).sum().backward()
    np.testing.assert_allclose(j_loc.grad.numpy(), t_loc.grad.numpy(), rtol=1e-12)
    assert repr(j).replace("jitgrad", "torch") == repr(t)
    assert repr(j.support) == repr(t.support)


def test_categorical_log_prob_broadcasts_values_against_the_batch():
    logits = np.array([[0.2, -1.3, 0.5], [2.0, 0.1, -0.3]])
    values = [[0, 1], [2, 2], [1, 0]]  # (3, 2): a sample shape before the batch
    got = jd.Categorical(logits=jitgrad.tensor(logits)).log_prob(jitgrad.tensor(values))
    expected = td.Categorical(logits=torch.tensor(logits)).log_prob(torch.tensor(values))
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-12)


def test_enumerate_support_matches_torch():
    for j, t in ((jd.Bernoulli(jitgrad.tensor([0.3, 0.6])), td.Bernoulli(torch.tensor([0.3, 0.6]))),
                 (jd.Categorical(jitgrad.ones(2, 3)), td.Categorical(torch.ones(2, 3))),
                 (jd.OneHotCategorical(jitgrad.ones(2, 3)), td.OneHotCategorical(torch.ones(2, 3)))):
        for expand in (True, False):
            np.testing.assert_array_equal(j.enumerate_support(expand).numpy(), t.enumerate_support(expand).numpy())
