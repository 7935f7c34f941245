"""Public gradcheck/gradgradcheck (run over every registry op) and the functional API, compared with
finite differences and with PyTorch's torch.autograd.functional."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import numerical_gradient
from op_samples import SAMPLES

import jitgrad as jg
from jitgrad.autograd import functional as F

GRAD_SAMPLES = [s for s in SAMPLES if s.differentiable]


def float_leaves(sample):
    return [jg.tensor(a, requires_grad=a.dtype.kind == "f") for a in sample.arrays(1)]


@pytest.mark.parametrize("sample", GRAD_SAMPLES, ids=[s.id for s in GRAD_SAMPLES])
def test_every_op_passes_gradcheck_and_gradgradcheck(sample):
    inputs = tuple(float_leaves(sample))
    assert jg.autograd.gradcheck(sample.fn, inputs, eps=sample.eps, atol=1e-5)
    assert jg.autograd.gradgradcheck(sample.fn, inputs, eps=sample.eps, atol=1e-4)


class Wrong(jg.autograd.Function):
    """sin with a derivative off by 1%."""

    @staticmethod
    def forward(ctx, a):
        ctx.save_for_backward(a)
        return a.sin()

    @staticmethod
    def backward(ctx, grad):
        (a,) = ctx.saved_tensors
        return grad * a.cos() * 1.01


def test_gradcheck_reports_the_first_mismatch():
    x = jg.tensor([0.3, -1.2, 0.7], dtype=jg.float64, requires_grad=True)
    with pytest.raises(jg.autograd.GradcheckError, match=r"Jacobian mismatch for output 0 with respect to "
                                                         r"input 0(.|\n)*first mismatch: d output\[0\] / d "
                                                         r"input\[0\]"):
        jg.autograd.gradcheck(Wrong.apply, (x,))
    assert jg.autograd.gradcheck(Wrong.apply, (x,), raise_exception=False) is False


def test_gradgradcheck_catches_a_wrong_second_derivative():
    class WrongSecond(jg.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            ctx.save_for_backward(a)
            return a * a * a

        @staticmethod
        def backward(ctx, grad):
            (a,) = ctx.saved_tensors
            return grad * 3 * a.detach() * a  # half of the second derivative is lost by the detach

    x = jg.tensor([0.5, 1.5], dtype=jg.float64, requires_grad=True)
    assert jg.autograd.gradcheck(WrongSecond.apply, (x,))
    assert jg.autograd.gradgradcheck(WrongSecond.apply, (x,), raise_exception=False) is False


def test_gradcheck_needs_an_input_that_requires_grad():
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        jg.autograd.gradcheck(lambda a: a * 2, (jg.tensor([1.0], dtype=jg.float64),))


def scalar_fn(a, b):
    return (a.sin() * b).sum() + (a * a * b).sum()


def two_outputs(a, b):
    return a * b.exp(), a.sum() * b


X, Y = np.array([0.3, -1.2, 0.7]), np.array([1.5, 0.2, -0.4])


def test_hessian_matches_finite_differences():
    (hxx, hxy), (hyx, hyy) = F.hessian(scalar_fn, (jg.tensor(X), jg.tensor(Y)))

    def grad_x(arrays):
        a, b = arrays
        return np.cos(a) * b + 2 * a * b

    for row in range(3):
        expected = numerical_gradient(lambda arrs: grad_x(arrs)[row], [X, Y], wrt=[0, 1])
        assert np.allclose(hxx.numpy()[row], expected[0], atol=1e-6)
        assert np.allclose(hxy.numpy()[row], expected[1], atol=1e-6)
    assert np.allclose(hxy.numpy(), hyx.numpy().T) and np.allclose(hyy.numpy(), 0.0)


def test_functional_matches_pytorch():
    torch = pytest.importorskip("torch")
    TF = torch.autograd.functional
    ins, tins = (jg.tensor(X), jg.tensor(Y)), (torch.tensor(X), torch.tensor(Y))
    v3 = (np.array([1.0, 2.0, 3.0]), np.array([0.5, 0.0, 1.0]))
    v, tv = tuple(jg.tensor(a) for a in v3), tuple(torch.tensor(a) for a in v3)

    def same(ours, theirs):
        if isinstance(ours, tuple):
            return all(same(o, t) for o, t in zip(ours, theirs))
        return np.allclose(ours.detach().numpy(), theirs.detach().numpy())

    assert same(F.jacobian(two_outputs, ins), TF.jacobian(two_outputs, tins))
    assert same(F.hessian(scalar_fn, ins), TF.hessian(scalar_fn, tins))
    assert same(F.vjp(two_outputs, ins, v), TF.vjp(two_outputs, tins, tv))
    assert same(F.jvp(two_outputs, ins, v), TF.jvp(two_outputs, tins, tv))
    assert same(F.hvp(scalar_fn, ins, v), TF.hvp(scalar_fn, tins, tv))
    assert same(F.vhp(scalar_fn, ins, v), TF.vhp(scalar_fn, tins, tv))
    single = F.jacobian(lambda a: a.exp(), jg.tensor(X))
    assert same(single, TF.jacobian(lambda a: a.exp(), torch.tensor(X)))


def test_jvp_equals_jacobian_times_v():
    v = (jg.tensor([1.0, -2.0, 0.5]), jg.tensor([0.3, 0.1, 2.0]))
    _, (jv1, jv2) = F.jvp(two_outputs, (jg.tensor(X), jg.tensor(Y)), v)
    (j11, j12), (j21, j22) = F.jacobian(two_outputs, (jg.tensor(X), jg.tensor(Y)))
    assert np.allclose(jv1.numpy(), j11.numpy() @ v[0].numpy() + j12.numpy() @ v[1].numpy())
    assert np.allclose(jv2.numpy(), j21.numpy() @ v[0].numpy() + j22.numpy() @ v[1].numpy())


def test_strict_and_shape_errors():
    with pytest.raises(RuntimeError, match="independent of input 1"):
        F.vjp(lambda a, b: a * 2, (jg.tensor(X), jg.tensor(Y)), jg.tensor(X), strict=True)
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        F.vjp(lambda a: a * 2, jg.tensor(X), jg.tensor([1.0]))
    _, (g, zero) = F.vjp(lambda a, b: a * 2, (jg.tensor(X), jg.tensor(Y)), jg.tensor(X))
    assert np.allclose(zero.numpy(), 0.0) and np.allclose(g.numpy(), 2 * X)


def test_create_graph_keeps_results_differentiable():
    x = jg.tensor(X, requires_grad=True)
    _, g = F.vjp(lambda a: (a ** 3).sum(), x, create_graph=True)
    (gg,) = jg.autograd.grad(g.sum(), x)
    assert np.allclose(gg.numpy(), 6 * X)
