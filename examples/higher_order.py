"""Hessian-vector products three ways, then Newton's method on the Rosenbrock function with them.

A Hessian-vector product ``H v`` costs a few gradients, never the ``n x n`` Hessian:

1. double backward: ``g = grad(f(x), x, create_graph=True)``, then ``H v = grad(g · v, x)``;
2. ``jitgrad.autograd.functional.hvp(f, x, v)``, which does the same for you;
3. forward-over-reverse: ``x`` made a dual tensor with tangent ``v`` (``autograd.forward_ad``), the
   gradient computed by reverse mode carries ``H v`` as its tangent, in one pass.

All three are compared with the full Hessian (``autograd.functional.hessian``) and with central
differences of the gradient. Then a truncated Newton method (conjugate gradients on ``H p = -g``,
using only Hessian-vector products) minimises the n-dimensional Rosenbrock function.

    python examples/higher_order.py [--quick]
"""
from __future__ import annotations

import argparse

import numpy as np

import jitgrad
import jitgrad.autograd.forward_ad as fwAD
from jitgrad.autograd.functional import hessian, hvp


def rosenbrock(x: jitgrad.Tensor) -> jitgrad.Tensor:
    """``sum 100 (x[i+1] - x[i]²)² + (1 - x[i])²``: a curved valley with its minimum at all ones."""
    return (100 * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2).sum()


def gradient(f, x: jitgrad.Tensor) -> jitgrad.Tensor:  # noqa: ANN001 - any function of a tensor
    x = x.detach().requires_grad_()
    (g,) = jitgrad.autograd.grad(f(x), x)
    return g


def hvp_double_backward(f, x: jitgrad.Tensor, v: jitgrad.Tensor) -> jitgrad.Tensor:  # noqa: ANN001
    x = x.detach().requires_grad_()
    (g,) = jitgrad.autograd.grad(f(x), x, create_graph=True)  # g is differentiable again
    (hv,) = jitgrad.autograd.grad((g * v).sum(), x)
    return hv


def hvp_forward_over_reverse(f, x: jitgrad.Tensor, v: jitgrad.Tensor) -> jitgrad.Tensor:  # noqa: ANN001
    x = x.detach().requires_grad_()
    with fwAD.dual_level():
        (g,) = jitgrad.autograd.grad(f(fwAD.make_dual(x, v)), x)
        return fwAD.unpack_dual(g).tangent  # the derivative of the gradient along v


def compare_products(n: int) -> None:
    rng = np.random.default_rng(0)
    x = jitgrad.from_numpy(rng.uniform(-1, 1, n))
    v = jitgrad.from_numpy(rng.normal(size=n))
    full = hessian(rosenbrock, x) @ v
    eps = 1e-6
    differences = (gradient(rosenbrock, x + eps * v) - gradient(rosenbrock, x - eps * v)) / (2 * eps)
    print(f"Hessian-vector products of the {n}-dimensional Rosenbrock function, against H @ v")
    for name, product in [("double backward", hvp_double_backward(rosenbrock, x, v)),
                          ("autograd.functional.hvp", hvp(rosenbrock, x, v)[1]),
                          ("forward-over-reverse", hvp_forward_over_reverse(rosenbrock, x, v)),
                          ("central differences", differences)]:
        error = (product - full).abs().max().item() / full.abs().max().item()
        print(f"  {name:24} relative error {error:.1e}")


def conjugate_gradients(product, g: jitgrad.Tensor, steps: int) -> jitgrad.Tensor:  # noqa: ANN001
    """Approximately solves ``H p = -g`` from products ``H v`` alone; stops at negative curvature."""
    p = jitgrad.zeros_like(g)
    r = -g
    d = r
    for _ in range(steps):
        hd = product(d)
        curvature = (d * hd).sum().item()
        if curvature <= 0:
            return p if p.abs().sum().item() > 0 else -g
        rr = (r * r).sum().item()
        alpha = rr / curvature
        p = p + alpha * d
        r = r - alpha * hd
        if (r * r).sum().item() < 1e-20:
            break
        d = r + ((r * r).sum().item() / rr) * d
    return p


def newton(n: int, iterations: int) -> float:
    """Truncated Newton with a backtracking line search, from zero (the classic start (-1.2, 1, -1.2, ...)
    leads to the local minimum near (-1, 1, 1, ...))."""
    x = jitgrad.zeros(n, dtype=jitgrad.float64)
    print(f"\nNewton-CG on the {n}-dimensional Rosenbrock function (each CG step one Hessian-vector product)")
    for it in range(1, iterations + 1):
        value, g = rosenbrock(x).item(), gradient(rosenbrock, x)
        if g.abs().max().item() < 1e-10:
            break
        step = conjugate_gradients(lambda d: hvp_double_backward(rosenbrock, x, d), g, steps=n)
        t = 1.0
        while rosenbrock(x + t * step).item() > value + 1e-4 * t * (g * step).sum().item() and t > 1e-8:
            t /= 2
        x = x + t * step
        if it % 5 == 0 or it == 1:
            print(f"  iteration {it:3d}: f = {rosenbrock(x).item():.3e}, |grad| = {g.abs().max().item():.1e}")
    distance = (x - 1).abs().max().item()
    print(f"  after {it} iterations: f = {rosenbrock(x).item():.3e}, max |x - 1| = {distance:.1e}")
    return distance


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="6 dimensions instead of 30")
    args = parser.parse_args(argv)
    n = 6 if args.quick else 30
    compare_products(n)
    newton(n, iterations=100)


if __name__ == "__main__":
    main()
