"""``jitgrad.func``'s transforms against ``torch.func``: each case is one program written once over a
library (``jitgrad`` and ``jitgrad.func``, or ``torch`` and ``torch.func``), run on both with the same
float64 inputs; the results must have the same tree structure, shapes, values and ``requires_grad``.
Errors must be PyTorch's type and message."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg
import jitgrad.func as jf

torch = pytest.importorskip("torch")
import torch.func as tf  # noqa: E402

X = np.array([0.3, -1.2, 0.7])
W = np.array([[1.5, 0.2, -0.3], [-0.4, 0.9, 0.1]])


class Lib:
    """A library's tensor maker and function transforms, so one program runs on both."""

    def __init__(self, m, func) -> None:
        self.m, self.F = m, func

    def t(self, a: np.ndarray, requires_grad: bool = False):
        return self.m.tensor(a.copy(), dtype=self.m.float64, requires_grad=requires_grad)


JG, TORCH = Lib(jg, jf), Lib(torch, tf)


def f_scalar(x):
    return (x.sin() * x).sum()


def f_two(x, w):
    return ((w @ x).tanh() ** 2).sum() + x.exp().sum()


def f_vector(x, w):
    return (w @ x).sin() * x[0]


CASES = {
    "grad": lambda L: L.F.grad(f_scalar)(L.t(X)),
    "grad_argnums_tuple": lambda L: L.F.grad(f_two, argnums=(0, 1))(L.t(X), L.t(W)),
    "grad_argnums_negative": lambda L: L.F.grad(f_two, argnums=-1)(L.t(X), L.t(W)),
    "grad_has_aux": lambda L: L.F.grad(lambda x: (f_scalar(x), {"sq": x * x}), has_aux=True)(L.t(X)),
    "grad_dict_input": lambda L: L.F.grad(lambda p: f_two(p["x"], p["w"]))({"x": L.t(X), "w": L.t(W)}),
    "grad_list_input": lambda L: L.F.grad(lambda p: f_two(*p))([L.t(X), L.t(W)]),
    "grad_unused_input_is_zeros": lambda L: L.F.grad(lambda x, y: f_scalar(x), argnums=(0, 1))(L.t(X), L.t(W)),
    "grad_of_constant_is_zeros": lambda L: L.F.grad(lambda x: L.t(np.array(2.0)))(L.t(X)),
    "grad_and_value": lambda L: L.F.grad_and_value(f_two, argnums=1)(L.t(X), L.t(W)),
    "grad_and_value_has_aux": lambda L: L.F.grad_and_value(lambda x: (f_scalar(x), x.cos()), has_aux=True)(L.t(X)),
    "grad_grad": lambda L: L.F.grad(lambda x: L.F.grad(f_scalar)(x).sum())(L.t(X)),
    "grad_grad_closure": lambda L: L.F.grad(lambda x: L.F.grad(lambda y: (x * y.sin()).sum())(L.t(W[0])).sum())(L.t(X)),
    "vjp": lambda L: (lambda out, fn: (out, fn(L.t(np.ones(2)))))(*L.F.vjp(f_vector, L.t(X), L.t(W))),
    "vjp_tree_output": lambda L: (lambda out, fn: (out, fn({"a": L.t(np.ones(3)), "b": L.t(np.full(3, 2.0))})))(
        *L.F.vjp(lambda x: {"a": x.sin(), "b": x * x}, L.t(X))),
    "vjp_has_aux": lambda L: (lambda out, fn, aux: (out, fn(L.t(np.ones(3))), aux))(
        *L.F.vjp(lambda x: (x.exp(), x.sum()), L.t(X), has_aux=True)),
    "jvp": lambda L: L.F.jvp(f_vector, (L.t(X), L.t(W)), (L.t(np.ones(3)), L.t(np.ones((2, 3))))),
    "jvp_tuple_output": lambda L: L.F.jvp(lambda x: (x.sin(), (x * x).sum()), (L.t(X),), (L.t(np.arange(3.0)),)),
    "jacrev": lambda L: L.F.jacrev(f_vector)(L.t(X), L.t(W)),
    "jacrev_argnums_tuple": lambda L: L.F.jacrev(f_vector, argnums=(0, 1))(L.t(X), L.t(W)),
    "jacrev_tree_output": lambda L: L.F.jacrev(lambda x: {"s": x.sin(), "t": (x.exp().sum(),)})(L.t(X)),
    "jacfwd": lambda L: L.F.jacfwd(f_vector, argnums=1)(L.t(X), L.t(W)),
    "jacfwd_has_aux": lambda L: L.F.jacfwd(lambda x: (x.tanh(), x.sum()), has_aux=True)(L.t(X)),
    "hessian": lambda L: L.F.hessian(f_scalar)(L.t(X)),
    "hessian_two_args": lambda L: L.F.hessian(f_two, argnums=(0, 1))(L.t(X), L.t(W)),
    "jacrev_jacfwd": lambda L: L.F.jacrev(L.F.jacfwd(f_vector))(L.t(X), L.t(W)),
    "jacfwd_jacfwd": lambda L: L.F.jacfwd(L.F.jacfwd(lambda x: x.sin() * x.sum()))(L.t(X)),
}


def assert_same_tree(got, want, where: str = "result") -> None:
    if isinstance(want, torch.Tensor):
        assert isinstance(got, jg.Tensor), f"{where}: {type(got).__name__}, expected a Tensor"
        assert tuple(got.shape) == tuple(want.shape), f"{where}: shape {tuple(got.shape)} != {tuple(want.shape)}"
        assert got.requires_grad == want.requires_grad, f"{where}: requires_grad {got.requires_grad}"
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-10, atol=1e-12, err_msg=where)
        return
    assert type(got) is type(want), f"{where}: {type(got).__name__} != {type(want).__name__}"
    if isinstance(want, dict):
        assert list(got) == list(want), f"{where}: keys {list(got)} != {list(want)}"
        for k in want:
            assert_same_tree(got[k], want[k], f"{where}[{k!r}]")
    else:
        assert len(got) == len(want), f"{where}: {len(got)} entries != {len(want)}"
        for i, (g, w) in enumerate(zip(got, want)):
            assert_same_tree(g, w, f"{where}[{i}]")


@pytest.mark.parametrize("case", CASES)
def test_transform_matches_torch_func(case: str) -> None:
    assert_same_tree(CASES[case](JG), CASES[case](TORCH))


@pytest.mark.parametrize("transform", ["grad", "jacrev", "jacfwd", "hessian"])
def test_inputs_that_require_grad_outside_keep_the_graph(transform: str) -> None:
    """As torch.func: a derivative of inputs that require grad is itself differentiable back to them."""
    def run(L):
        x = L.t(X, requires_grad=True)
        result = getattr(L.F, transform)(f_scalar if transform in ("grad", "hessian") else lambda x: x.sin() * x)(x)
        (result * result).sum().backward()
        return x.grad
    assert_same_tree(run(JG), run(TORCH))


ERRORS = {
    "grad_of_vector": lambda L: L.F.grad(lambda x: x)(L.t(X)),
    "grad_of_tuple": lambda L: L.F.grad(lambda x: (x.sum(), 1))(L.t(X)),
    "grad_has_aux_not_pair": lambda L: L.F.grad(lambda x: x.sum(), has_aux=True)(L.t(X)),
    "grad_of_number": lambda L: L.F.grad(lambda x: 3)(L.t(X)),
    "grad_argnums_out_of_range": lambda L: L.F.grad(lambda x: x.sum(), argnums=2)(L.t(X)),
    "grad_of_float_input": lambda L: L.F.grad(lambda x: x)(3.0),
    "jvp_primals_not_tuple": lambda L: L.F.jvp(lambda a: a, L.t(X), L.t(X)),
    "jvp_tangent_shape": lambda L: L.F.jvp(lambda a: a, (L.t(X),), (L.t(np.ones(2)),)),
    "vjp_cotangent_shape": lambda L: L.F.vjp(lambda a: a, L.t(X))[1](L.t(np.ones(2))),
}


@pytest.mark.parametrize("case", ERRORS)
def test_errors_are_torch_funcs(case: str) -> None:
    with pytest.raises(Exception) as want:
        ERRORS[case](TORCH)
    with pytest.raises(type(want.value)) as got:
        ERRORS[case](JG)
    expected = str(want.value).replace("torch.Size", "jitgrad.Size")
    assert str(got.value) == expected
