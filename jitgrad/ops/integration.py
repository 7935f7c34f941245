"""``trapezoid`` (and its older name ``trapz``) and ``cumulative_trapezoid``: the trapezoidal rule along a
dimension, composed of slices, sums and ``cumsum``, so gradients and compiling come from those ops.

Each interval between neighbouring samples adds ``(y[i] + y[i + 1]) / 2`` times its width: ``dx`` (a
number, 1 by default) or the differences of ``x``, a vector with one value per sample along ``dim`` or
a tensor broadcasting against ``y``. As in PyTorch, integer samples give a floating result.
"""
from __future__ import annotations

from numbers import Number

from ..shapes import wrap_dim
from ..tensor import Tensor
from .public import public
from .reductions import sum
from .sorting import cumsum


def _areas(y: Tensor, x: Tensor | None, dx: Number | None, dim: int, op: str) -> tuple[Tensor, int]:
    """Twice each interval's area along ``dim``, and ``dim`` wrapped."""
    if y.ndim == 0:
        raise IndexError(f"Dimension specified as {dim} but tensor has no dimensions")
    if x is not None and dx is not None:
        raise TypeError(f"{op}() takes either x or dx, not both")
    dim = wrap_dim(dim, y.ndim, op)
    n = y.shape[dim]
    heights = y.narrow(dim, 0, max(n - 1, 0)) + y.narrow(dim, min(1, n), max(n - 1, 0))
    if x is None:
        return heights * (1 if dx is None else dx), dim
    if x.ndim == 1:
        if x.shape[0] != n:
            raise RuntimeError(f"{op}: There must be one `x` value for each sample point")
        x = x.reshape([n if d == dim else 1 for d in range(y.ndim)])
        widths = x.narrow(dim, 1, max(n - 1, 0)) - x.narrow(dim, 0, max(n - 1, 0))
    else:
        along = wrap_dim(dim - y.ndim, x.ndim, op)  # the same dimension counted from the end
        widths = x.diff(dim=along)
    return heights * widths, dim


@public("function")
def trapezoid(y: Tensor, x: Tensor | None = None, *, dx: Number | None = None, dim: int = -1) -> Tensor:
    """The integral of the samples ``y`` along ``dim`` by the trapezoidal rule (0 for fewer than two)."""
    areas, dim = _areas(y, x, dx, dim, "trapezoid")
    return sum(areas, dim) / 2


@public("function")
def trapz(y: Tensor, x: Tensor | None = None, *, dx: Number | None = None, dim: int = -1) -> Tensor:
    """``trapezoid``'s older name."""
    return trapezoid(y, x, dx=dx, dim=dim)


@public("function")
def cumulative_trapezoid(y: Tensor, x: Tensor | None = None, *, dx: Number | None = None, dim: int = -1) -> Tensor:
    """The running integral of ``y`` along ``dim``: one value per interval, so ``dim`` is one shorter."""
    areas, dim = _areas(y, x, dx, dim, "cumulative_trapezoid")
    return cumsum(areas, dim) / 2
