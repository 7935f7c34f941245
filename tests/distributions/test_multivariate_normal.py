"""``MultivariateNormal`` from ``scale_tril``, a covariance or a precision matrix: log_prob, entropy,
moments, KL and rsample against torch, values and gradients (the whole of ``scale_tril``'s gradient, its
upper triangle included)."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad
import jitgrad.distributions as jd

torch = pytest.importorskip("torch")
td = torch.distributions

TRIL = np.array([[[1.5, 0, 0], [0.3, 0.8, 0], [-0.2, 0.4, 1.1]], [[0.7, 0, 0], [0.1, 1.2, 0], [0.5, -0.3, 0.9]]])
LOC = np.array([0.2, -0.5, 1.0])
VALUE = np.array([[0.1, 0.3, -0.2], [1.0, 0.0, 0.5]])
QUANTITIES = {
    "log_prob": lambda d, lib: d.log_prob(lib.tensor(VALUE)),
    "entropy": lambda d, lib: d.entropy(),
    "variance": lambda d, lib: d.variance,
    "covariance_matrix": lambda d, lib: d.covariance_matrix,
    "precision_matrix": lambda d, lib: d.precision_matrix,
    "kl": lambda d, lib: (jd if lib is jitgrad else td).kl_divergence(
        d, type(d)(lib.tensor(LOC[::-1].copy()), scale_tril=lib.tensor(TRIL[::-1].copy()))),
    "rsample": None,
}


@pytest.mark.parametrize("what", QUANTITIES)
def test_values_and_gradients_match_torch(what):
    j_tril, j_loc = jitgrad.tensor(TRIL, requires_grad=True), jitgrad.tensor(LOC, requires_grad=True)
    t_tril, t_loc = torch.tensor(TRIL, requires_grad=True), torch.tensor(LOC, requires_grad=True)
    j, t = jd.MultivariateNormal(j_loc, scale_tril=j_tril), td.MultivariateNormal(t_loc, scale_tril=t_tril)
    if what == "rsample":  # the same noise through loc + L eps
        jitgrad.manual_seed(0)
        got = j.rsample((4,))
        jitgrad.manual_seed(0)
        eps = torch.tensor(jitgrad.randn((4, 2, 3), dtype=jitgrad.float64).numpy())
        expected = t_loc + (t_tril @ eps.unsqueeze(-1)).squeeze(-1)
    else:
        got, expected = QUANTITIES[what](j, jitgrad), QUANTITIES[what](t, torch)
    assert tuple(got.shape) == tuple(expected.shape)
    np.testing.assert_allclose(got.detach().numpy(), expected.detach().numpy(), rtol=1e-10, atol=1e-12)
    weights = np.linspace(0.5, 1.5, expected.numel()).reshape(tuple(expected.shape))
    j_grads = jitgrad.autograd.grad((got * jitgrad.tensor(weights)).sum(), [j_tril, j_loc], allow_unused=True)
    t_grads = torch.autograd.grad((expected * torch.tensor(weights)).sum(), [t_tril, t_loc], allow_unused=True)
    for j_grad, t_grad in zip(j_grads, t_grads):
        if t_grad is not None:
            np.testing.assert_allclose(j_grad.numpy(), t_grad.numpy(), rtol=1e-9, atol=1e-12)


def test_shapes_and_errors():
    j = jd.MultivariateNormal(jitgrad.zeros(3, dtype=jitgrad.float64), scale_tril=jitgrad.tensor(TRIL))
    t = td.MultivariateNormal(torch.zeros(3, dtype=torch.float64), scale_tril=torch.tensor(TRIL))
    assert (tuple(j.batch_shape), tuple(j.event_shape)) == (tuple(t.batch_shape), tuple(t.event_shape))
    assert tuple(j.sample((5,)).shape) == tuple(t.sample((5,)).shape)
    assert repr(jd.constraints.lower_cholesky) == repr(td.constraints.lower_cholesky)
    with pytest.raises(ValueError, match="Expected parameter scale_tril"):
        jd.MultivariateNormal(jitgrad.zeros(3), scale_tril=jitgrad.tensor(TRIL).mT)
    with pytest.raises(ValueError, match="Exactly one of covariance_matrix or precision_matrix or scale_tril"):
        jd.MultivariateNormal(jitgrad.zeros(3))
    with pytest.raises(ValueError, match="Expected parameter covariance_matrix"):
        jd.MultivariateNormal(jitgrad.zeros(2), covariance_matrix=jitgrad.tensor([[1.0, 2.0], [2.0, 1.0]]))


@pytest.mark.parametrize("form", ["covariance_matrix", "precision_matrix"])
def test_a_covariance_or_precision_matrix_is_factored_with_gradients(form):
    """``cholesky`` of the covariance (of the precision's inverse): values and the matrix's gradient
    against torch, the matrix kept as given."""
    factor = TRIL[0]
    matrix = factor @ factor.T if form == "covariance_matrix" else np.linalg.inv(factor @ factor.T)
    j_matrix, t_matrix = jitgrad.tensor(matrix, requires_grad=True), torch.tensor(matrix, requires_grad=True)
    j = jd.MultivariateNormal(jitgrad.tensor(LOC), **{form: j_matrix})
    t = td.MultivariateNormal(torch.tensor(LOC), **{form: t_matrix})
    np.testing.assert_allclose(j.scale_tril.detach().numpy(), t.scale_tril.detach().numpy(), rtol=1e-10, atol=1e-12)
    assert np.array_equal(getattr(j, form).detach().numpy(), matrix)
    got = j.log_prob(jitgrad.tensor(VALUE)).sum() + j.entropy()
    expected = t.log_prob(torch.tensor(VALUE)).sum() + t.entropy()
    np.testing.assert_allclose(got.item(), expected.item(), rtol=1e-12)
    (j_grad,), (t_grad,) = jitgrad.autograd.grad(got, [j_matrix]), torch.autograd.grad(expected, [t_matrix])
    np.testing.assert_allclose(j_grad.numpy(), t_grad.numpy(), rtol=1e-8, atol=1e-10)
