"""Custom differentiable operations with ``jitgrad.autograd.Function``, checked with ``gradcheck``.

Three functions, each for a reason one writes a custom Function:

1. ``ScaledSoftplus``: forward and backward written in jitgrad ops. Since its backward is made of
   differentiable ops, gradients of gradients work too (``gradgradcheck``), and a ``jvp`` gives it
   forward mode.
2. ``Solve``: wraps a numpy routine jitgrad has no op for (``np.linalg.solve``); forward and backward
   compute in numpy, so the backward is marked ``once_differentiable``.
3. ``RoundThrough``: a gradient that is deliberately not the derivative (a straight-through
   estimator, for training through rounding); ``gradcheck`` says so.

    python examples/custom_function.py [--quick]
"""
from __future__ import annotations

import argparse

import numpy as np

import jitgrad
import jitgrad.autograd.forward_ad as fwAD
from jitgrad.autograd import Function, gradcheck, gradgradcheck, once_differentiable


class ScaledSoftplus(Function):
    """``log(1 + exp(beta * x)) / beta``; its derivative is ``sigmoid(beta * x)``."""

    @staticmethod
    def forward(ctx, x: jitgrad.Tensor, beta: float) -> jitgrad.Tensor:  # noqa: ANN001 - ctx as autograd gives it
        ctx.save_for_backward(x)
        ctx.beta = beta  # a number: kept on ctx, not saved as a tensor
        return (beta * x).exp().log1p() / beta

    @staticmethod
    def backward(ctx, grad: jitgrad.Tensor) -> tuple[jitgrad.Tensor, None]:  # noqa: ANN001
        (x,) = ctx.saved_tensors
        return grad * (ctx.beta * x).sigmoid(), None  # one gradient per forward argument; beta has none

    @staticmethod
    def jvp(ctx, x_tangent: jitgrad.Tensor, beta_tangent: None) -> jitgrad.Tensor:  # noqa: ANN001
        (x,) = ctx.saved_tensors
        return x_tangent * (ctx.beta * x).sigmoid()


class Solve(Function):
    """``x = A⁻¹ b`` by numpy. With ``g`` the gradient of ``x``: ``grad_b = A⁻ᵀ g`` and ``grad_A = -grad_b xᵀ``."""

    @staticmethod
    def forward(ctx, a: jitgrad.Tensor, b: jitgrad.Tensor) -> jitgrad.Tensor:  # noqa: ANN001
        x = jitgrad.from_numpy(np.linalg.solve(a.detach().numpy(), b.detach().numpy()))
        ctx.save_for_backward(a, x)
        return x

    @staticmethod
    @once_differentiable
    def backward(ctx, grad: jitgrad.Tensor) -> tuple[jitgrad.Tensor | None, jitgrad.Tensor]:  # noqa: ANN001
        a, x = ctx.saved_tensors
        grad_b = np.linalg.solve(a.detach().numpy().T, grad.detach().numpy())
        grad_a = -np.outer(grad_b, x.detach().numpy()) if ctx.needs_input_grad[0] else None
        return (None if grad_a is None else jitgrad.from_numpy(grad_a)), jitgrad.from_numpy(grad_b)


class RoundThrough(Function):
    """Rounds in the forward pass; the backward passes the gradient through unchanged."""

    @staticmethod
    def forward(ctx, x: jitgrad.Tensor) -> jitgrad.Tensor:  # noqa: ANN001
        return jitgrad.from_numpy(np.round(x.detach().numpy()))

    @staticmethod
    def backward(ctx, grad: jitgrad.Tensor) -> jitgrad.Tensor:  # noqa: ANN001
        return grad


def softplus_section(size: int) -> None:
    print("1. ScaledSoftplus: forward and backward in jitgrad ops")
    x = jitgrad.tensor(np.linspace(-3, 3, size), requires_grad=True)
    y = ScaledSoftplus.apply(x, 2.0)
    print(f"   y.grad_fn = {y.grad_fn.name()}")
    y.sum().backward()
    expected = (2.0 * x.detach()).sigmoid()
    print(f"   x.grad equals sigmoid(beta * x): {np.allclose(x.grad.numpy(), expected.numpy())}")
    print(f"   gradcheck: {gradcheck(lambda t: ScaledSoftplus.apply(t, 2.0), (x,))}")
    print(f"   gradgradcheck: {gradgradcheck(lambda t: ScaledSoftplus.apply(t, 2.0), (x,))}")
    v = jitgrad.ones_like(x.detach())
    with fwAD.dual_level():
        tangent = fwAD.unpack_dual(ScaledSoftplus.apply(fwAD.make_dual(x.detach(), v), 2.0)).tangent
    print(f"   forward mode (jvp) equals the gradient: {np.allclose(tangent.numpy(), expected.numpy())}")


def solve_section(size: int) -> None:
    print("2. Solve: numpy inside, once_differentiable")
    rng = np.random.default_rng(0)
    a = jitgrad.from_numpy(rng.normal(size=(size, size)) + size * np.eye(size)).requires_grad_()
    b = jitgrad.from_numpy(rng.normal(size=size)).requires_grad_()
    x = Solve.apply(a, b)
    residual = (a.detach() @ x.detach() - b.detach()).abs().max().item()
    print(f"   |A x - b| = {residual:.1e}")
    print(f"   gradcheck: {gradcheck(Solve.apply, (a, b))}")
    (x * x).sum().backward()
    print(f"   grad_A shape {tuple(a.grad.shape)}, grad_b shape {tuple(b.grad.shape)}")
    try:
        (grad_b,) = jitgrad.autograd.grad((Solve.apply(a, b) ** 2).sum(), b, create_graph=True)
        grad_b.sum().backward()
    except RuntimeError as error:
        print(f"   a second derivative is refused: {str(error).splitlines()[0]}")


def round_section(size: int) -> None:
    print("3. RoundThrough: a straight-through gradient")
    x = jitgrad.tensor(np.linspace(-1.3, 1.3, size), requires_grad=True)
    y = RoundThrough.apply(x)
    (y * y).sum().backward()
    print(f"   y = {y.detach().tolist()}")
    print(f"   x.grad = 2 * round(x): {np.allclose(x.grad.numpy(), 2 * y.detach().numpy())}")
    agrees = gradcheck(RoundThrough.apply, (x,), raise_exception=False)
    print(f"   gradcheck: {agrees} (rounding's derivative is 0 almost everywhere; this gradient is 1)")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller inputs (the script takes a second anyway)")
    args = parser.parse_args(argv)
    size = 4 if args.quick else 8
    softplus_section(size)
    solve_section(size)
    round_section(size)


if __name__ == "__main__":
    main()
