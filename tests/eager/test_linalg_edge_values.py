"""``jitgrad.linalg`` where a formula would give a plausible number PyTorch does not: empty reductions
without an identity, singular matrices, options PyTorch documents as ignored. Each case is one that
gave a silently wrong (finite, or differently infinite) result before; tiny sizes, no kernels."""
from __future__ import annotations

import math

import numpy as np
import pytest

import jitgrad as jg

torch = pytest.importorskip("torch")


@pytest.mark.parametrize("ord", [-1, -0.5, -math.inf, math.inf])
@pytest.mark.parametrize("shape, dim", [((2, 0), -1), ((2, 0), None), ((0, 3), (0, 1))])
def test_vector_norm_without_identity_over_an_empty_dimension_raises(ord, shape, dim):
    """A negative ``ord`` summed ``|x|^p`` over nothing (0) and gave ``0 ** (1/p) = inf``."""
    with pytest.raises(RuntimeError, match="cannot compute the"):
        torch.linalg.vector_norm(torch.zeros(shape), ord, dim=dim)
    with pytest.raises(RuntimeError, match=f"cannot compute the {ord:g} norm on .*does not have an identity"):
        jg.linalg.vector_norm(jg.zeros(shape), ord, dim=dim)


def test_vector_norm_over_a_nonempty_dimension_of_an_empty_tensor_is_empty():
    assert tuple(jg.linalg.vector_norm(jg.zeros(0, 3), -1, dim=1).shape) == (0,)


def test_lstsq_gels_ignores_rcond_as_pytorch_documents():
    """``gels`` assumes full rank: an ``rcond`` that would drop a singular value changed its solution."""
    a = np.array([[1.0, 0.0], [0.0, 0.1], [1.0, 1.0]])
    b = np.array([[1.0], [2.0], [3.0]])
    ours = jg.linalg.lstsq(jg.tensor(a), jg.tensor(b), rcond=0.5, driver="gels")
    theirs = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), rcond=0.5, driver="gels")
    np.testing.assert_allclose(ours.solution.numpy(), theirs.solution.numpy(), rtol=1e-10)
    np.testing.assert_allclose(ours.residuals.numpy(), theirs.residuals.numpy(), rtol=1e-10)


def test_inv_ex_gives_a_singular_matrix_a_nan_gradient_and_the_others_theirs():
    """The singular matrix's NaN inverse was filled in, which gave it a zero gradient (PyTorch: NaN)."""
    batch = np.stack([np.array([[2.0, 1.0], [1.0, 3.0]]), np.ones((2, 2))])
    grads = []
    for m in (jg, torch):
        a = m.tensor(batch, requires_grad=True)
        inverse, info = m.linalg.inv_ex(a)
        (inverse[0].sum() + inverse[1].sum()).backward()
        grads.append(a.grad.numpy())
        assert info.tolist() == [0, 2]
    assert np.isnan(grads[0][1]).all() and np.isnan(grads[1][1]).all()
    np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-12)


def test_inverse_and_slogdet_of_a_matrix_holding_nan_are_pytorchs():
    """LAPACK's pivoting left the inverse of ``[[nan, 1], [1, 0]]`` partly finite (``[1, -1]`` in its
    second row, where ``-nan`` belongs), and numpy's slogdet gave a NaN determinant the sign -1."""
    batch = np.stack([np.array([[np.nan, 1.0], [1.0, 0.0]]), np.array([[2.0, 1.0], [1.0, 3.0]])])
    for call in (lambda m, a: m.linalg.inv(a), lambda m, a: m.linalg.matrix_power(a, -1),
                 lambda m, a: m.linalg.inv_ex(a).inverse, lambda m, a: m.linalg.slogdet(a).sign):
        np.testing.assert_array_equal(call(jg, jg.tensor(batch)).numpy(), call(torch, torch.tensor(batch)).numpy())


def test_cholesky_of_a_matrix_holding_nan_fails_as_pytorchs():
    """numpy's Cholesky carried a NaN through and reported success (``info`` 0); PyTorch's fails."""
    batch = np.stack([np.array([[4.0, 1.0], [1.0, 3.0]]), np.array([[2.0, 1.0], [1.0, np.nan]])])
    ours, theirs = jg.linalg.cholesky_ex(jg.tensor(batch)), torch.linalg.cholesky_ex(torch.tensor(batch))
    assert ours.info.tolist() == theirs.info.tolist() == [0, 2]
    np.testing.assert_allclose(ours.L[0].numpy(), theirs.L[0].numpy(), rtol=1e-12)
    with pytest.raises(RuntimeError) as expected:
        torch.linalg.cholesky(torch.tensor(batch))
    with pytest.raises(RuntimeError) as got:
        jg.linalg.cholesky(jg.tensor(batch))
    assert str(got.value) == str(expected.value)


@pytest.mark.parametrize("upper, left", [(False, True), (True, False)])
def test_solve_triangular_with_a_zero_on_the_diagonal_gives_pytorchs_infinities(upper, left):
    """It raised where PyTorch's substitution divides by the zero: inf and NaN, in the gradients too."""
    lower = np.array([[[1.0, 0.0, 0.0], [2.0, 0.0, 0.0], [1.0, 1.0, 3.0]], [[2.0, 0.0, 0.0], [1.0, 1.0, 0.0],
                                                                            [1.0, 1.0, 3.0]]])
    triangle = lower.transpose(0, 2, 1) if upper else lower
    rhs = np.arange(12.0).reshape(2, 3, 2) - 4
    rhs = rhs if left else rhs.transpose(0, 2, 1)
    results = []
    for m in (jg, torch):
        a, b = m.tensor(triangle, requires_grad=True), m.tensor(rhs, requires_grad=True)
        x = m.linalg.solve_triangular(a, b, upper=upper, left=left)
        x[1].sum().backward()
        results.append([x.detach().numpy(), a.grad.numpy(), b.grad.numpy()])
    for ours, theirs in zip(*results):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-12)   # inf and NaN where PyTorch's are


@pytest.mark.parametrize("call", [lambda a: jg.linalg.slogdet(a).logabsdet, jg.logdet])
def test_the_gradient_of_slogdet_at_a_singular_matrix_is_refused_naming_slogdet(call):
    """It raised from the inverse inside the backward, naming ``linalg.inv``, which the caller never called."""
    a = jg.tensor([[1.0, 2.0], [2.0, 4.0]], requires_grad=True)
    with pytest.raises(RuntimeError, match="linalg.slogdet: the gradient at a singular matrix"):
        call(a).backward()
