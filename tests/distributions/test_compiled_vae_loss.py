"""A VAE-style loss (an encoder's Normal posterior, ``rsample``, a Normal likelihood and the KL to a
standard normal prior), compiled whole with ``fullgraph=True``: the loss and gradients equal eager's
under the same seed, and each call draws fresh noise (a new seed, a new loss).

It runs on the interpreter backend, as the compile tests above the backend do (tests/compile/conftest.py):
what it checks is that distributions trace into one graph, random draw included; the backends' lowering
of the ops used here is tested with the ops."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad
import jitgrad.distributions as jd


def vae_loss(x, w_enc, w_dec):
    h = x @ w_enc
    loc, scale = h[:, :2], jitgrad.nn.functional.softplus(h[:, 2:]) + 1e-3
    posterior = jd.Normal(loc, scale)
    z = posterior.rsample()
    prior = jd.Normal(jitgrad.zeros_like(loc), jitgrad.ones_like(scale))
    loss = jd.kl_divergence(posterior, prior).sum() - jd.Normal(z @ w_dec, 1.0).log_prob(x).sum()
    loss.backward()
    return loss


@pytest.fixture
def interpreter_backend(monkeypatch, tmp_path):
    monkeypatch.setenv("JITGRAD_COMPILE_BACKEND", "interpreter")
    monkeypatch.setenv("JITGRAD_CACHE_DIR", str(tmp_path))


def test_compiled_vae_loss_equals_eager_under_one_seed(interpreter_backend):
    rng = np.random.default_rng(0)
    x = jitgrad.tensor(rng.standard_normal((4, 3)), dtype=jitgrad.float32)
    weights = [rng.standard_normal((3, 4)) * 0.5, rng.standard_normal((2, 3)) * 0.5]
    eager_params = [jitgrad.tensor(w, dtype=jitgrad.float32, requires_grad=True) for w in weights]
    compiled_params = [jitgrad.tensor(w, dtype=jitgrad.float32, requires_grad=True) for w in weights]
    compiled = jitgrad.compile(vae_loss, fullgraph=True)
    losses = []
    for seed in range(3):  # the first call traces, the others run the compiled graph
        jitgrad.manual_seed(seed)
        expected = vae_loss(x, *eager_params)
        jitgrad.manual_seed(seed)
        got = compiled(x, *compiled_params)
        np.testing.assert_allclose(float(got), float(expected), rtol=1e-5)
        for eager, comp in zip(eager_params, compiled_params):
            np.testing.assert_allclose(comp.grad.numpy(), eager.grad.numpy(), rtol=1e-4, atol=1e-5)
            eager.grad = comp.grad = None
        losses.append(float(got))
    assert len(set(losses)) == 3  # fresh noise at every call


def new_families_loss(loc, scale):
    """A squashed-normal policy's log-likelihood (SAC's) beside draws and scores of the families built
    of transforms and of ops alone: one graph, draws included. (What needs lgamma or digamma, SciPy's,
    cannot be traced: Kumaraswamy's entropy, StudentT's log_prob, the gamma family.)"""
    policy = jd.TransformedDistribution(jd.Normal(loc, scale), jd.ComposeTransform([jd.AffineTransform(0.0, 2.0),
                                                                                   jd.TanhTransform()]))
    action = policy.rsample()
    total = policy.log_prob(action.clamp(-0.999, 0.999)).sum()
    for dist in (jd.Gumbel(loc, scale), jd.HalfCauchy(scale), jd.Kumaraswamy(scale + 0.5, scale + 1.0)):
        total = total + dist.log_prob(dist.rsample()).sum() + dist.cdf(dist.rsample()).sum()
    geometric = jd.Geometric(logits=loc)
    total = total + geometric.log_prob(geometric.sample()).sum() + geometric.entropy().sum()
    total.backward()
    return total


def test_new_families_compile_into_one_graph(interpreter_backend):
    loc = np.array([0.3, -0.5, 1.0], dtype=np.float32)
    scale = np.array([0.5, 1.0, 1.5], dtype=np.float32)
    eager_params = [jitgrad.tensor(a, requires_grad=True) for a in (loc, scale)]
    compiled_params = [jitgrad.tensor(a, requires_grad=True) for a in (loc, scale)]
    compiled = jitgrad.compile(new_families_loss, fullgraph=True)
    for seed in range(2):
        jitgrad.manual_seed(seed)
        expected = new_families_loss(*eager_params)
        jitgrad.manual_seed(seed)
        got = compiled(*compiled_params)
        np.testing.assert_allclose(float(got), float(expected), rtol=1e-4)
        for eager, comp in zip(eager_params, compiled_params):
            np.testing.assert_allclose(comp.grad.numpy(), eager.grad.numpy(), rtol=1e-3, atol=1e-4)
            eager.grad = comp.grad = None
