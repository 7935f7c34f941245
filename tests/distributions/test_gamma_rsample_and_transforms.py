"""The gamma family's ``rsample`` (implicit reparameterisation, as PyTorch's ``_standard_gamma``) and
``TransformedDistribution`` with the transforms (``ExpTransform``, ``AffineTransform``, ``TanhTransform``...).

Finite differences cannot check a gamma draw's gradient (a redraw at another concentration is another
number), so the gradient is compared with exact values (40-digit mpmath, written here) and with
PyTorch's ``_standard_gamma_grad`` on the same draws (PyTorch's rational approximations are within
about 1e-3 of the exact value; ours within 1e-9); Beta's and Dirichlet's with PyTorch's
``_Dirichlet`` backward on the same draws, and by the mean gradient of many draws against the
gradient of the expectation (the estimator is unbiased)."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad
import jitgrad.distributions as jd
from jitgrad.distributions.gamma_draws import dirichlet_grad, standard_gamma_grad

torch = pytest.importorskip("torch")
td = torch.distributions

# (concentration, draw) -> dx/da, from mpmath at 40 digits: -dP(a, x)/da / p(x; a)
EXACT = {(0.05, 1e-6): 0.00026635358314383506, (0.05, 0.3): 7.6847334012938251, (0.7, 0.2): 0.60764873747602978,
         (0.7, 3.0): 2.3779393639106449, (3.0, 1.0): 0.57877304915405245, (3.0, 9.0): 1.7397554120638797,
         (40.0, 35.0): 0.93862102027777458, (40.0, 55.0): 1.1725263475898511,
         (1000.0, 1040.0): 1.0199085070110788}


def test_standard_gamma_grad_is_the_exact_implicit_gradient():
    a, x = (np.array(column) for column in zip(*EXACT))
    np.testing.assert_allclose(standard_gamma_grad(a, x), list(EXACT.values()), rtol=1e-7)


def test_gamma_rsample_gradients_are_pytorchs_on_the_same_draws():
    concentration = np.array([0.05, 0.3, 1.0, 2.5, 9.0, 60.0] * 50)
    rate = np.linspace(0.5, 3.0, concentration.size)
    a, r = jitgrad.tensor(concentration, requires_grad=True), jitgrad.tensor(rate, requires_grad=True)
    jitgrad.manual_seed(1)
    draws = jd.Gamma(a, r).rsample()
    (draws * jitgrad.tensor(np.linspace(-1.0, 2.0, concentration.size))).sum().backward()
    unit_draws = torch.tensor(draws.detach().numpy() * rate)
    t_a, t_r = torch.tensor(concentration, requires_grad=True), torch.tensor(rate, requires_grad=True)
    # PyTorch's Gamma.rsample is _standard_gamma(a) / rate: its backward, on our draws
    expected_a = torch._standard_gamma_grad(t_a.detach(), unit_draws).numpy() / rate
    np.testing.assert_allclose(a.grad.numpy() / np.linspace(-1.0, 2.0, concentration.size), expected_a, rtol=2e-3,
                               atol=1e-12)
    (unit_draws / t_r * torch.tensor(np.linspace(-1.0, 2.0, concentration.size))).sum().backward()
    np.testing.assert_allclose(r.grad.numpy(), t_r.grad.numpy(), rtol=1e-12)
    assert jd.Gamma(a, r).has_rsample and not jd.Gamma(a, r).sample((2,)).requires_grad


def test_dirichlet_and_beta_rsample_gradients_are_pytorchs_on_the_same_draws():
    concentration = np.array([[0.3, 1.5, 4.0], [2.0, 2.0, 0.7]] * 20)
    weights = np.random.default_rng(3).standard_normal(concentration.shape)
    c = jitgrad.tensor(concentration, requires_grad=True)
    jitgrad.manual_seed(4)
    x = jd.Dirichlet(c).rsample()
    (x * jitgrad.tensor(weights)).sum().backward()
    draws, g = torch.tensor(x.detach().numpy()), torch.tensor(weights)
    t_c = torch.tensor(concentration)
    expected = torch._dirichlet_grad(draws, t_c, t_c.sum(-1, keepdim=True).expand_as(t_c)) * (
        g - (draws * g).sum(-1, keepdim=True))   # PyTorch's _Dirichlet.backward
    np.testing.assert_allclose(c.grad.numpy(), expected.numpy(), rtol=3e-3, atol=1e-9)   # PyTorch's: within 1e-3
    np.testing.assert_allclose(x.detach().numpy().sum(-1), 1.0, rtol=1e-12)
    np.testing.assert_allclose(dirichlet_grad([0.2, 0.999, 1e-5], [1.5, 5.0, 0.3], [3.0, 5.5, 20.0]),
                               torch._dirichlet_grad(*(torch.tensor(v) for v in ([0.2, 0.999, 1e-5], [1.5, 5.0, 0.3],
                                                                                [3.0, 5.5, 20.0]))).numpy(),
                               rtol=1e-6)
    a, b = jitgrad.tensor([0.5, 2.0], requires_grad=True), jitgrad.tensor([1.5, 0.8], requires_grad=True)
    jitgrad.manual_seed(5)
    beta_draws = jd.Beta(a, b).rsample()
    beta_draws.sum().backward()
    pair = torch.stack([torch.tensor(beta_draws.detach().numpy()), 1 - torch.tensor(beta_draws.detach().numpy())], -1)
    t_pair = torch.tensor([[0.5, 1.5], [2.0, 0.8]])
    expected = torch._dirichlet_grad(pair, t_pair, t_pair.sum(-1, keepdim=True).expand_as(t_pair)) * (
        torch.tensor([[1.0, 0.0]]) - pair[..., :1])
    np.testing.assert_allclose(np.stack([a.grad.numpy(), b.grad.numpy()], -1), expected.numpy(), rtol=3e-3)


def test_beta_rsample_gradients_are_unbiased():
    """Twenty independent parameters of one value, 300 draws each: the mean gradient of E[x ** 2]
    over the draws is within five standard errors of the exact gradient, for each parameter (Beta's
    draws are a Dirichlet's, so this checks the Dirichlet estimator too)."""
    alpha, beta, copies, draws = 1.7, 0.8, 20, 300
    a = jitgrad.tensor(np.full(copies, alpha), requires_grad=True)
    b = jitgrad.tensor(np.full(copies, beta), requires_grad=True)
    jitgrad.manual_seed(2)
    (jd.Beta(a, b).rsample((draws,)) ** 2).mean(0).sum().backward()

    def second_moment(a_, b_):
        return a_ * (a_ + 1) / ((a_ + b_) * (a_ + b_ + 1))
    step = 1e-6
    exact_a = (second_moment(alpha + step, beta) - second_moment(alpha - step, beta)) / (2 * step)
    exact_b = (second_moment(alpha, beta + step) - second_moment(alpha, beta - step)) / (2 * step)
    for grads, exact in ((a.grad.numpy(), exact_a), (b.grad.numpy(), exact_b)):
        assert abs(grads.mean() - exact) < 5 * grads.std() / np.sqrt(copies), (grads.mean(), exact)


def test_gamma_draws_refuse_a_trace():
    """A traced draw would be one constant repeated by every compiled call (jitgrad.compile runs such a
    function eagerly)."""
    with pytest.raises(RuntimeError, match="cannot be traced by jitgrad.compile"):
        jitgrad.fx.trace(lambda a: jd.Gamma(a, 1.0).rsample(), jitgrad.ones(2))
    for family, draw in (("Poisson", lambda a: jd.Poisson(a).sample()),
                         ("Binomial", lambda a: jd.Binomial(3, a / 2).sample())):
        with pytest.raises(RuntimeError, match=f"{family} draws with numpy's generator and cannot be traced"):
            jitgrad.fx.trace(draw, jitgrad.ones(2))


# ---- TransformedDistribution -------------------------------------------------------------------------
LOC, SCALE = np.array([0.2, -0.5, 1.0]), np.array([1.0, 0.5, 2.0])
SHIFT, FACTOR = np.array([0.3, -1.0, 0.0]), np.array([1.5, -2.0, 0.5])


def transformed(D, lib, kind):
    """``(distribution, parameters that require grad, values to score, cdf levels)`` of one kind."""
    loc, scale = (lib.tensor(a, requires_grad=True) for a in (LOC, SCALE))
    shift, factor = (lib.tensor(a, requires_grad=True) for a in (SHIFT, FACTOR))
    base = D.Normal(loc, scale)
    params = [loc, scale]
    if kind == "affine-exp":   # a decreasing affine map in one coordinate: cdf reflected there
        dist, values = D.TransformedDistribution(base, [D.AffineTransform(shift, factor), D.ExpTransform()]), \
            [0.5, 1.5, 3.0]
        params += [shift, factor]
    elif kind == "sigmoid":
        dist, values = D.TransformedDistribution(base, D.SigmoidTransform()), [0.1, 0.5, 0.999]
    elif kind == "exp-number-affine":
        dist, values = D.TransformedDistribution(base, [D.ExpTransform(), D.AffineTransform(-1.0, 3.0)]), \
            [0.5, 1.5, 30.0]
    elif kind == "affine-tanh":   # a squashed normal (SAC's policies): a composed transform
        dist, values = D.TransformedDistribution(base, D.ComposeTransform([D.AffineTransform(shift, factor),
                                                                           D.TanhTransform()])), [0.5, -0.9, 0.0]
        params += [shift, factor]
    elif kind == "softplus-power":
        power = lib.tensor([2.0, 0.5, -1.5], requires_grad=True)
        dist, values = D.TransformedDistribution(base, [D.SoftplusTransform(), D.PowerTransform(power)]), \
            [0.5, 1.5, 3.0]
        params += [power]
    else:   # one event of three coordinates
        dist, values = D.TransformedDistribution(base, [D.AffineTransform(shift, factor, event_dim=1)]), \
            [[0.5, 1.5, 3.0], [0.0, -1.0, 0.2]]
        params += [shift, factor]
    return dist, params, lib.tensor(np.array(values)), lib.tensor(np.array([0.1, 0.5, 0.9]))


@pytest.mark.parametrize("kind", ["affine-exp", "sigmoid", "exp-number-affine", "affine-tanh", "softplus-power",
                                  "affine-event"])
def test_transformed_distribution_is_pytorchs(kind):
    results = []
    for lib, D in ((jitgrad, jd), (torch, td)):
        dist, params, values, levels = transformed(D, lib, kind)
        log_prob = dist.log_prob(values)
        grads = lib.autograd.grad(log_prob.sum(), params)
        quantities = [log_prob.detach().numpy(), *(g.numpy() for g in grads)]
        if kind != "affine-event":
            quantities += [dist.cdf(values).detach().numpy(), dist.icdf(levels).detach().numpy()]
        results.append((quantities, tuple(dist.batch_shape), tuple(dist.event_shape), repr(dist.support),
                        dist.has_rsample, tuple(dist.rsample((2,)).shape)))
    (ours, *our_meta), (theirs, *their_meta) = results
    assert our_meta == their_meta
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)


# name -> (the transform's arguments, points of its domain)
TRANSFORMS = {
    "ExpTransform": ((), [-3.0, -0.2, 0.0, 0.7, 4.0]),
    "SigmoidTransform": ((), [-3.0, -0.2, 0.0, 0.7, 4.0]),
    "AffineTransform": ((0.5, -2.0), [-3.0, -0.2, 0.0, 0.7, 4.0]),
    "TanhTransform": ((), [-3.0, -0.2, 0.0, 0.7, 4.0]),
    "SoftplusTransform": ((), [-3.0, -0.2, 0.0, 0.7, 4.0]),
    "PowerTransform": (([2.5, -0.5, 1.0, 3.0, 0.3],), [0.2, 0.7, 1.5, 3.0, 0.01]),
    "AbsTransform": ((), [-3.0, -0.2, 0.0, 0.7, 4.0]),
    "ComposeTransform": (("exp-affine-tanh",), [-0.5, -0.2, 0.0, 0.7, 0.3]),
    "StickBreakingTransform": ((), [-3.0, -0.2, 0.0, 0.7, 4.0]),
}


def make_transform(D, lib, name, args):
    """The transform ``name`` of library ``D``; its tensor arguments require grad."""
    if name == "ComposeTransform":
        shift, factor = lib.tensor([0.0, 1.0, 0.5, -1.0, 0.2]), lib.tensor([1.0, -2.0, 0.5, 1.0, 0.3])
        parts = [D.ExpTransform(), D.AffineTransform(shift, factor, event_dim=1), D.TanhTransform()]
        return D.ComposeTransform(parts), []
    tensors = [lib.tensor(np.array(a), requires_grad=True) for a in args if isinstance(a, list)]
    return getattr(D, name)(*(tensors or args)), tensors


def sign_of(transform):
    try:
        sign = transform.sign
    except NotImplementedError:
        return "no sign"
    return np.asarray(sign.detach().numpy() if hasattr(sign, "detach") else sign).tolist()


@pytest.mark.parametrize("name", TRANSFORMS)
def test_transforms_invert_and_give_pytorchs_jacobians(name):
    args, points = TRANSFORMS[name]
    outs = []
    for lib, D in ((jitgrad, jd), (torch, td)):
        t, params = make_transform(D, lib, name, args)
        x = lib.tensor(np.array(points), requires_grad=True)
        y = t(x)
        out = [y.detach().numpy(), t.inv(y).detach().numpy(),
               *lib.autograd.grad(y.sum(), [x, *params], retain_graph=True)]
        if t.bijective:
            ladj = t.log_abs_det_jacobian(x, y)
            out += [ladj.detach().numpy(), t.inv.log_abs_det_jacobian(y, x).detach().numpy(), ladj.requires_grad]
            if ladj.requires_grad:   # an AffineTransform of numbers has a constant Jacobian
                out += [0.0 if g is None else g for g in lib.autograd.grad(ladj.sum(), [x, *params], allow_unused=True)]
        else:
            with pytest.raises(NotImplementedError):
                t.log_abs_det_jacobian(x, y)
        meta = [sign_of(t), repr(t), repr(t.inv), repr(t.domain), repr(t.codomain), t.bijective, t.event_dim,
                t.inv.bijective, tuple(t.forward_shape((2, 5))), tuple(t.inv.forward_shape((2, 5)))]
        outs.append(([np.asarray(o.detach().numpy() if hasattr(o, "detach") else o) for o in out], meta))
    (ours, our_meta), (theirs, their_meta) = outs
    assert our_meta == their_meta
    for a, b in zip(ours, theirs):
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-12)
    if name != "AbsTransform":
        np.testing.assert_allclose(ours[1], points, rtol=1e-10, atol=1e-12)


def test_transformed_distribution_refuses_what_pytorch_refuses():
    with pytest.raises(ValueError, match="transforms must be a Transform or a list of Transforms"):
        jd.TransformedDistribution(jd.Normal(0.0, 1.0), "exp")
    with pytest.raises(ValueError, match="Expected value argument"):
        jd.TransformedDistribution(jd.Normal(0.0, 1.0), jd.ExpTransform()).log_prob(jitgrad.tensor(-1.0))
