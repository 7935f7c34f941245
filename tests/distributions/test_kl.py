"""``kl_divergence`` for every registered pair, values and gradients against torch's, and the
registry's dispatch (most specific pair first, PyTorch's errors)."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad
import jitgrad.distributions as jd

torch = pytest.importorskip("torch")
td = torch.distributions

# family, or "p's family>q's family" -> (p's parameters, q's parameters); the last element of each pair of
# Uniforms (and of Pareto, Binomial) makes an infinite KL
PAIRS = {
    "Normal": ({"loc": [0.3, -1.0], "scale": [0.5, 2.0]}, {"loc": [0.0, 1.0], "scale": [1.0, 0.7]}),
    "LogNormal": ({"loc": [0.3, -1.0], "scale": [0.5, 2.0]}, {"loc": [0.0, 1.0], "scale": [1.0, 0.7]}),
    "Bernoulli": ({"probs": [0.2, 0.7, 0.0]}, {"probs": [0.5, 0.1, 0.3]}),
    "Categorical": ({"probs": [[0.2, 0.3, 0.5], [0.6, 0.4, 0.0]]}, {"logits": [[0.1, -0.4, 1.0], [0.0, 2.0, 1.0]]}),
    "OneHotCategorical": ({"probs": [[0.2, 0.3, 0.5]]}, {"probs": [[0.5, 0.25, 0.25]]}),
    "Uniform": ({"low": [0.0, -1.0], "high": [1.0, 2.0]}, {"low": [-0.5, 0.0], "high": [2.0, 3.0]}),
    "Exponential": ({"rate": [0.5, 3.0]}, {"rate": [1.0, 0.2]}),
    "Laplace": ({"loc": [0.3, -1.0], "scale": [0.5, 2.0]}, {"loc": [0.0, 1.0], "scale": [1.0, 0.7]}),
    "Gamma": ({"concentration": [0.5, 3.0], "rate": [1.0, 2.0]}, {"concentration": [2.0, 1.5], "rate": [0.5, 1.0]}),
    "Beta": ({"concentration1": [0.5, 3.0], "concentration0": [1.0, 2.0]},
             {"concentration1": [2.0, 1.5], "concentration0": [0.5, 1.0]}),
    "Dirichlet": ({"concentration": [[0.5, 3.0, 1.0]]}, {"concentration": [[2.0, 1.5, 0.7]]}),
    "Cauchy": ({"loc": [0.3, -1.0], "scale": [0.5, 2.0]}, {"loc": [0.0, 1.0], "scale": [1.0, 0.7]}),
    "HalfNormal": ({"scale": [0.5, 2.0]}, {"scale": [1.0, 0.7]}),
    "Gumbel": ({"loc": [0.3, -1.0], "scale": [0.5, 2.0]}, {"loc": [0.0, 1.0], "scale": [1.0, 0.7]}),
    "Pareto": ({"scale": [0.5, 1.0], "alpha": [0.5, 2.0]}, {"scale": [0.3, 2.0], "alpha": [1.0, 0.7]}),
    "Geometric": ({"probs": [0.2, 0.7]}, {"logits": [0.5, -1.0]}),
    "Poisson": ({"rate": [0.5, 3.0]}, {"rate": [1.0, 0.2]}),
    "Binomial": ({"total_count": [4.0, 5.0], "probs": [0.2, 0.7]}, {"total_count": [4.0, 3.0], "logits": [0.5, -1.0]}),
    "ContinuousBernoulli": ({"probs": [0.2, 0.5002]}, {"logits": [0.5, -1.0]}),
    "ContinuousBernoulli>Normal": ({"probs": [0.2, 0.7]}, {"loc": [0.0, 1.0], "scale": [1.0, 0.7]}),
    "ContinuousBernoulli>Exponential": ({"probs": [0.2, 0.7]}, {"rate": [1.0, 0.2]}),
    "Laplace>ContinuousBernoulli": ({"loc": [0.3, -1.0], "scale": [0.5, 2.0]}, {"probs": [0.2, 0.7]}),
    "Exponential>Gumbel": ({"rate": [0.7, 2.0]}, {"loc": [0.3, -1.0], "scale": [1.5, 0.5]}),
    "Gumbel>Normal": ({"loc": [0.3, -1.0], "scale": [0.5, 2.0]}, {"loc": [1.0, 0.0], "scale": [2.0, 0.7]}),
    "Normal>Gumbel": ({"loc": [0.3, -1.0], "scale": [0.5, 2.0]}, {"loc": [1.0, 0.0], "scale": [2.0, 0.7]}),
    "Pareto>Exponential": ({"scale": [1.0, 0.5], "alpha": [3.0, 0.8]}, {"rate": [0.5, 2.0]}),
    "Uniform>Gumbel": ({"low": [0.0, -1.0], "high": [2.0, 0.5]}, {"loc": [0.5, 0.0], "scale": [1.5, 0.7]}),
    "Uniform>Pareto": ({"low": [1.0, 0.2], "high": [3.0, 0.5]}, {"scale": [0.5, 0.3], "alpha": [1.5, 2.0]}),
    "Beta>Pareto": ({"concentration1": [0.5, 3.0], "concentration0": [1.0, 2.0]},
                    {"scale": [0.5, 0.3], "alpha": [1.5, 2.0]}),
    "Bernoulli>Poisson": ({"probs": [0.2, 0.7]}, {"rate": [1.0, 0.2]}),
    "Gumbel>Exponential": ({"loc": [0.3, -1.0], "scale": [0.5, 2.0]}, {"rate": [1.0, 0.2]}),
    "Pareto>Uniform": ({"scale": [0.5, 1.0], "alpha": [0.5, 2.0]}, {"low": [0.0, 0.0], "high": [1.0, 3.0]}),
    "Poisson>Binomial": ({"rate": [0.5, 3.0]}, {"total_count": [4.0, 3.0], "probs": [0.2, 0.7]}),
}


def make(library, family, params, reinterpreted):
    """``family`` (or, ``"P>Q"``, its ``P`` for ``p``'s parameters and its ``Q`` for ``q``'s) of ``params``."""
    if library is jd:
        tensors = {k: jitgrad.tensor(v, dtype=jitgrad.float64, requires_grad=True) for k, v in params.items()}
    else:
        tensors = {k: torch.tensor(v, dtype=torch.float64, requires_grad=True) for k, v in params.items()}
    dist = getattr(library, family)(**tensors)
    return (library.Independent(dist, 1) if reinterpreted else dist), list(tensors.values())


@pytest.mark.parametrize("reinterpreted", [False, True], ids=["plain", "Independent"])
@pytest.mark.parametrize("family", PAIRS)
def test_kl_and_its_gradients_match_torch(family, reinterpreted):
    if reinterpreted and family in ("Categorical", "OneHotCategorical", "Dirichlet"):
        pytest.skip("Independent over a one-row batch adds nothing here")
    p_params, q_params = PAIRS[family]
    p_family, q_family = (family.split(">") * 2)[:2]
    jp, jp_tensors = make(jd, p_family, p_params, reinterpreted)
    jq, jq_tensors = make(jd, q_family, q_params, reinterpreted)
    tp, tp_tensors = make(td, p_family, p_params, reinterpreted)
    tq, tq_tensors = make(td, q_family, q_params, reinterpreted)
    got, expected = jd.kl_divergence(jp, jq), td.kl_divergence(tp, tq)
    np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), rtol=1e-10)
    finite = torch.isfinite(expected)
    if not bool(finite.any()):   # a pair whose supports differ: a constant infinity, with no gradient
        return
    # the gradients of an infinite KL are not compared; those of the finite elements are
    expected, got = torch.where(finite, expected, 0.0), jitgrad.where(jitgrad.tensor(finite.numpy()), got, 0.0)
    t_grads = torch.autograd.grad(expected.sum(), tp_tensors + tq_tensors, allow_unused=True)
    j_grads = jitgrad.autograd.grad(got.sum(), jp_tensors + jq_tensors, allow_unused=True)
    for t_grad, j_grad in zip(t_grads, j_grads):
        if t_grad is not None:
            # rtol 1e-7: the gamma family's gradients use polygamma, SciPy's here and torch's own there
            np.testing.assert_allclose(j_grad.numpy(), t_grad.numpy(), rtol=1e-7, atol=1e-12)


def test_unregistered_pairs_raise_torchs_error_and_registration_dispatches_by_specificity():
    unregistered = "No KL\\(p \\|\\| q\\) is implemented for p type Normal and q type Laplace"
    with pytest.raises(NotImplementedError, match=unregistered):
        jd.kl_divergence(jd.Normal(0.0, 1.0), jd.Laplace(0.0, 1.0))

    class MyNormal(jd.Normal):
        pass

    p, q = MyNormal(0.0, 1.0), jd.Normal(1.0, 1.0)
    assert float(jd.kl_divergence(p, q)) == pytest.approx(0.5)  # falls back to (Normal, Normal)

    @jd.register_kl(MyNormal, jd.Normal)
    def _constant(p, q):
        return jitgrad.tensor(7.0)

    assert float(jd.kl_divergence(p, q)) == 7.0  # the more specific pair wins once registered
    assert float(jd.kl_divergence(q, q)) == 0.0
    with pytest.raises(TypeError, match="Expected type_p to be a Distribution subclass"):
        jd.register_kl(int, jd.Normal)
    for p, q in ((jd.Binomial(3, jitgrad.tensor(0.5)), jd.Binomial(4, jitgrad.tensor(0.5))),   # PyTorch refuses both
                 (jd.Weibull(1.0, jitgrad.tensor(2.0)), jd.Weibull(1.0, jitgrad.tensor(3.0)))):
        with pytest.raises(NotImplementedError):
            jd.kl_divergence(p, q)
    # transformed distributions through equal transforms: their bases' KL (a bijection keeps it)
    p, q = (jd.TransformedDistribution(jd.Normal(loc, 1.0), [jd.ExpTransform(), jd.AffineTransform(1.0, 2.0)])
            for loc in (0.0, 1.5))
    assert float(jd.kl_divergence(p, q)) == pytest.approx(1.5 ** 2 / 2)
    with pytest.raises(NotImplementedError):
        jd.kl_divergence(jd.Independent(jd.Normal(jitgrad.zeros(2, 2), 1.0), 1),
                         jd.Independent(jd.Normal(jitgrad.zeros(2, 2), 1.0), 2))
