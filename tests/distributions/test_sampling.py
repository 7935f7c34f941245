"""Draws: repeatable under ``jitgrad.manual_seed``, in the support, with the family's moments; and
``rsample``'s reparameterisation: the draw is the family's transform of jitgrad's noise, and its
gradients with respect to the parameters are torch's for the same transform of the same noise."""
from __future__ import annotations

import math

import numpy as np
import pytest

import jitgrad
import jitgrad.distributions as jd

torch = pytest.importorskip("torch")

# family -> (parameters, a function of torch parameters and jitgrad's noise giving the same draw, noise)
REPARAMETERISED = {
    "Normal": ({"loc": [0.3, -1.2], "scale": [0.5, 2.0]}, lambda p, e: p["loc"] + p["scale"] * e, "randn"),
    "LogNormal": ({"loc": [0.3, -1.2], "scale": [0.5, 2.0]}, lambda p, e: (p["loc"] + p["scale"] * e).exp(), "randn"),
    "Uniform": ({"low": [0.0, -2.0], "high": [1.0, 3.0]}, lambda p, u: p["low"] + u * (p["high"] - p["low"]), "rand"),
    "Exponential": ({"rate": [0.5, 3.0]}, lambda p, u: -torch.log1p(-u) / p["rate"], "rand"),
    "Laplace": ({"loc": [0.3, -1.2], "scale": [0.5, 2.0]}, None, "rand"),
    "LogisticNormal": ({"loc": [0.3, -1.2], "scale": [0.5, 2.0]},
                       lambda p, e: torch.distributions.StickBreakingTransform()(p["loc"] + p["scale"] * e), "randn"),
}


def laplace_draw(p, u):
    eps = float(np.finfo(np.float64).eps)
    u = u * (2 - eps) + (eps - 1)
    return p["loc"] - p["scale"] * u.sign() * torch.log1p(-u.abs())


@pytest.mark.parametrize("name", REPARAMETERISED)
def test_rsample_gradients_match_torch_on_the_same_noise(name):
    params, transform, noise = REPARAMETERISED[name]
    transform = transform or laplace_draw
    j_params = {k: jitgrad.tensor(v, dtype=jitgrad.float64, requires_grad=True) for k, v in params.items()}
    t_params = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in params.items()}
    jitgrad.manual_seed(3)
    draw = getattr(jd, name)(**j_params).rsample((3,))
    jitgrad.manual_seed(3)
    eps = getattr(jitgrad, noise)((3, 2), dtype=jitgrad.float64)
    expected = transform(t_params, torch.tensor(eps.numpy()))
    np.testing.assert_allclose(draw.detach().numpy(), expected.detach().numpy(), rtol=1e-12)
    weights = np.arange(1.0, draw.numel() + 1.0).reshape(tuple(draw.shape))
    j_grads = jitgrad.autograd.grad((draw * jitgrad.tensor(weights)).sum(), list(j_params.values()))
    t_grads = torch.autograd.grad((expected * torch.tensor(weights)).sum(), list(t_params.values()))
    for key, j_grad, t_grad in zip(params, j_grads, t_grads):
        np.testing.assert_allclose(j_grad.numpy(), t_grad.numpy(), rtol=1e-10, err_msg=f"{name} d/d{key}")


# families whose draws are a monotone map of one uniform or exponential number: parameters, then the
# parameters whose cdf has a gradient (Gamma's cdf has none in its concentration)
IMPLICIT = {
    "Cauchy": ({"loc": [0.3, -1.2], "scale": [0.5, 2.0]}, ("loc", "scale")),
    "HalfNormal": ({"scale": [0.5, 2.0]}, ("scale",)),
    "HalfCauchy": ({"scale": [0.5, 2.0]}, ("scale",)),
    "Gumbel": ({"loc": [0.3, -1.2], "scale": [0.5, 2.0]}, ("loc", "scale")),
    "Weibull": ({"scale": [0.5, 2.0], "concentration": [0.7, 3.0]}, ("scale", "concentration")),
    "Pareto": ({"scale": [0.5, 2.0], "alpha": [0.7, 3.0]}, ("scale", "alpha")),
    "Kumaraswamy": ({"concentration1": [0.7, 3.0], "concentration0": [2.0, 0.5]}, ("concentration1", "concentration0")),
    "ContinuousBernoulli": ({"probs": [0.2, 0.8]}, ("probs",)),
}


@pytest.mark.parametrize("name", IMPLICIT)
def test_rsample_gradients_are_the_implicit_ones(name):
    """A draw ``x`` that is a monotone map of its noise moves with a parameter so as to keep its
    quantile: ``dx/dp = -(dF/dp)(x) / f(x)``, from the family's cdf and density (both PyTorch's)."""
    params, differentiable = IMPLICIT[name]
    j_params = {k: jitgrad.tensor(v, dtype=jitgrad.float64, requires_grad=True) for k, v in params.items()}
    dist = getattr(jd, name)(**j_params)
    jitgrad.manual_seed(5)
    draw = dist.rsample((3,))
    assert draw.requires_grad and tuple(draw.shape) == (3, 2)
    x = draw.detach()
    grads = jitgrad.autograd.grad(draw.sum(), [j_params[k] for k in differentiable], retain_graph=True)
    density = dist.log_prob(x).exp().detach().numpy()
    for key, grad in zip(differentiable, grads):
        expected = np.zeros(2)
        for row in range(3):   # each element of a row's cdf depends on its own parameters only
            (per_draw,) = jitgrad.autograd.grad(dist.cdf(x[row]).sum(), [j_params[key]], retain_graph=True)
            expected -= per_draw.numpy() / density[row]
        np.testing.assert_allclose(grad.numpy(), expected, rtol=1e-7, err_msg=f"{name} d/d{key}")


@pytest.mark.parametrize("name", ["Normal", "LogNormal", "Uniform", "Exponential", "Laplace", "Bernoulli",
                                  "Categorical", "OneHotCategorical", "Gamma", "Beta", "Dirichlet", "HalfNormal",
                                  "Gumbel", "Weibull", "Pareto", "Kumaraswamy", "InverseGamma", "Chi2", "StudentT",
                                  "Geometric", "Poisson", "Binomial", "ContinuousBernoulli"])
def test_samples_are_repeatable_in_the_support_and_have_the_moments(name):
    params = {"Normal": dict(loc=0.5, scale=2.0), "LogNormal": dict(loc=0.1, scale=0.4),
              "Uniform": dict(low=-1.0, high=3.0), "Exponential": dict(rate=2.0),
              "Laplace": dict(loc=0.5, scale=1.5), "Bernoulli": dict(probs=0.3),
              "Categorical": dict(probs=jitgrad.tensor([0.2, 0.5, 0.3])),
              "OneHotCategorical": dict(probs=jitgrad.tensor([0.2, 0.5, 0.3])),
              "Gamma": dict(concentration=2.5, rate=1.5), "Beta": dict(concentration1=2.0, concentration0=3.0),
              "Dirichlet": dict(concentration=jitgrad.tensor([1.5, 2.0, 0.5])), "HalfNormal": dict(scale=1.5),
              "Gumbel": dict(loc=0.5, scale=1.5), "Weibull": dict(scale=1.5, concentration=2.0),
              "Pareto": dict(scale=1.0, alpha=9.0), "Kumaraswamy": dict(concentration1=2.0, concentration0=3.0),
              "InverseGamma": dict(concentration=9.0, rate=2.0), "Chi2": dict(df=3.0),
              "StudentT": dict(df=9.0, loc=0.5, scale=2.0), "Geometric": dict(probs=0.3),
              "Poisson": dict(rate=3.5), "Binomial": dict(total_count=10, probs=0.3),
              "ContinuousBernoulli": dict(probs=0.3)}[name]
    dist = getattr(jd, name)(**params)
    jitgrad.manual_seed(0)
    first = dist.sample((20000,))
    jitgrad.manual_seed(0)
    np.testing.assert_array_equal(first.numpy(), dist.sample((20000,)).numpy())
    assert not first.requires_grad
    assert bool(dist.support.check(first).all())
    values = first.numpy().astype(np.float64)
    if name == "Categorical":  # the moments of its one-hot form: each category's frequency
        values = np.eye(3)[first.numpy()]
    mean, variance = dist.mean.numpy(), dist.variance.numpy()
    if name == "Categorical":
        mean, variance = dist.probs.numpy(), (dist.probs * (1 - dist.probs)).numpy()
    standard_error = np.sqrt(variance / len(values))
    assert np.all(np.abs(values.mean(0) - mean) < 5 * standard_error + 1e-12), (values.mean(0), mean)
    if name not in ("LogNormal", "Pareto", "InverseGamma"):  # fourth moments too heavy for a tight check
        assert np.allclose(values.var(0), variance, rtol=0.1)


def test_student_t_rsample_gradients_are_pytorchs_on_the_same_draws():
    """A draw is ``loc + scale * x / sqrt(z / df)`` for a normal ``x`` and a chi-squared ``z``, whose
    gradient in ``df`` is the gamma draw's implicit one: compared with PyTorch's backward of that
    expression, its gamma gradient ``_standard_gamma_grad`` (within about 1e-3) on the same draws."""
    values = {"df": [0.7, 3.0, 12.0], "loc": [0.3, -1.2, 2.0], "scale": [0.5, 1.5, 2.0]}
    j_params = {k: jitgrad.tensor(v, dtype=jitgrad.float64, requires_grad=True) for k, v in values.items()}
    jitgrad.manual_seed(7)
    draw = jd.StudentT(**j_params).rsample((2,))
    jitgrad.manual_seed(7)   # the same calls on the generator: the normal draw, then the chi-squared one
    normal = torch.tensor(jitgrad.randn((2, 3), dtype=jitgrad.float64).numpy())
    chi2 = jd.Chi2(jitgrad.tensor(values["df"], dtype=jitgrad.float64)).sample((2,))
    t = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in values.items()}
    half_df = t["df"].detach().expand(2, 3) / 2
    gamma_grad = torch._standard_gamma_grad(half_df, torch.tensor(chi2.numpy()) / 2)   # dz/d(df) = dg/da
    z = torch.tensor(chi2.numpy()) + (t["df"] - t["df"].detach()) * gamma_grad   # z's value, its gradient in df
    expected = t["loc"] + t["scale"] * normal * torch.rsqrt(z / t["df"])
    np.testing.assert_allclose(draw.detach().numpy(), expected.detach().numpy(), rtol=1e-12)
    j_grads = jitgrad.autograd.grad(draw.sum(), list(j_params.values()))
    t_grads = torch.autograd.grad(expected.sum(), list(t.values()))
    for key, j_grad, t_grad in zip(values, j_grads, t_grads):
        np.testing.assert_allclose(j_grad.numpy(), t_grad.numpy(), rtol=2e-3, err_msg=f"StudentT d/d{key}")


def test_normal_rsample_keeps_the_generator_and_the_sample_shape():
    dist = jd.Normal(jitgrad.zeros(2, 3), 1.0)
    assert tuple(dist.rsample((4, 5)).shape) == (4, 5, 2, 3)
    generator_state = jitgrad.get_rng_state()
    dist.rsample()
    assert not np.array_equal(generator_state.numpy(), jitgrad.get_rng_state().numpy())
    assert math.isclose(float(jd.Normal(0.0, 1.0).perplexity()), math.exp(0.5 + 0.5 * math.log(2 * math.pi)),
                        rel_tol=1e-6)
