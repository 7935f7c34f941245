"""``jitgrad.func``'s derivatives against central finite differences in float64, with no PyTorch needed:
``grad``, ``jacrev``, ``jacfwd``, ``jvp``, ``vjp`` and ``hessian`` (a second derivative: differences of
the exact gradient), and ``vmap(grad(f))`` against a loop of ``grad(f)``."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg
import jitgrad.func as jf
from helpers import numerical_gradient

X = np.array([0.3, -1.2, 0.7])


def f(x):
    return (x.sin() * x.exp()).sum() + (x[0] * x[2]) ** 2


def g(x):
    return x.tanh() * x.sum()


def t(a: np.ndarray) -> jg.Tensor:
    return jg.tensor(a, dtype=jg.float64)


def numerical_jacobian(fn, a: np.ndarray) -> np.ndarray:
    rows = [numerical_gradient(lambda arrays: fn(t(arrays[0])).numpy()[i], [a], [0])[0] for i in range(a.size)]
    return np.stack(rows)


def test_grad() -> None:
    want = numerical_gradient(lambda arrays: f(t(arrays[0])).item(), [X], [0])[0]
    np.testing.assert_allclose(jf.grad(f)(t(X)).numpy(), want, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("transform", ["jacrev", "jacfwd"])
def test_jacobians(transform: str) -> None:
    got = getattr(jf, transform)(g)(t(X)).numpy()
    np.testing.assert_allclose(got, numerical_jacobian(g, X), rtol=1e-7, atol=1e-9)


def test_jvp_and_vjp() -> None:
    jac = numerical_jacobian(g, X)
    v = np.array([1.0, -2.0, 0.5])
    _, jv = jf.jvp(g, (t(X),), (t(v),))
    _, vjp_fn = jf.vjp(g, t(X))
    np.testing.assert_allclose(jv.numpy(), jac @ v, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(vjp_fn(t(v))[0].numpy(), v @ jac, rtol=1e-7, atol=1e-9)


def test_hessian_and_grad_of_grad() -> None:
    want = numerical_jacobian(lambda x: jf.grad(f)(x), X)
    np.testing.assert_allclose(jf.hessian(f)(t(X)).numpy(), want, rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(jf.grad(lambda x: jf.grad(f)(x)[1])(t(X)).numpy(), want[1], rtol=1e-7, atol=1e-8)


def test_vmap_grad_is_a_loop_of_grads() -> None:
    batch = np.stack([X, X[::-1], X * 2])
    got = jf.vmap(jf.grad(f))(t(batch)).numpy()
    np.testing.assert_allclose(got, np.stack([jf.grad(f)(t(row)).numpy() for row in batch]), rtol=1e-12)
