"""Shapes and dimensions: ``Size``, dimension wrapping and broadcasting, with PyTorch's error texts."""
from __future__ import annotations

from typing import Iterable, Sequence


class Size(tuple):
    """A tensor's shape: a tuple that prints as ``jitgrad.Size([2, 3])``."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"jitgrad.Size({list(self)})"

    def numel(self) -> int:
        n = 1
        for d in self:
            n *= d
        return n


def wrap_dim(dim: int, ndim: int, op: str) -> int:
    """A dimension index in ``[0, ndim)``; negative ones count from the end, as in PyTorch."""
    rank = max(ndim, 1)
    if not -rank <= dim < rank:
        raise IndexError(f"{op}: Dimension out of range (expected to be in range of "
                         f"[{-rank}, {rank - 1}], but got {dim})")
    return dim + rank if dim < 0 else dim


def wrap_dims(dim: int | Sequence[int] | None, ndim: int, op: str) -> tuple[int, ...]:
    """All dimensions for ``None`` (or an empty tuple, as PyTorch's reductions take it), else the
    sorted, wrapped, duplicate-free dimensions named.

    A 0-d tensor takes ``dim`` 0 or -1, as in PyTorch, but its array has no axis 0: the dimensions to
    reduce are none, ``()``, which every reduction (and its derivative) reads as "nothing to fold"."""
    if dim is None:
        return tuple(range(ndim))
    dims = (dim,) if isinstance(dim, int) else tuple(dim)
    if not dims:
        return tuple(range(ndim))
    wrapped = tuple(sorted(wrap_dim(d, ndim, op) for d in dims))
    if len(set(wrapped)) != len(wrapped):
        raise RuntimeError(f"{op}: dim {dims} appears multiple times in the list of dims")
    return wrapped if ndim else ()


def check_not_0d(ndim: int, op: str, action: str, error: type[Exception] = RuntimeError) -> None:
    """A 0-d tensor takes dim 0 or -1, but an op that cuts or joins along a dimension (narrow, split,
    cat, select...) has nothing to work on there: PyTorch refuses it (a RuntimeError, an IndexError
    for select), and so does jitgrad, saying what to do, rather than let numpy fail on a missing axis."""
    if ndim == 0:
        raise error(f"{op}(): a 0-d tensor has no dimension to {action}")


def broadcast_shapes(op: str, shapes: Iterable[tuple[int, ...]]) -> tuple[int, ...]:
    """The broadcast of ``shapes``, or a RuntimeError that names the op, the shapes and the clash."""
    shapes = [tuple(s) for s in shapes]
    rank = max((len(s) for s in shapes), default=0)
    out = [1] * rank
    for s in shapes:
        for i, d in enumerate(s, start=rank - len(s)):
            if out[i] == 1:
                out[i] = d
            elif d != 1 and d != out[i]:
                a, b = out[i], d
                raise RuntimeError(
                    f"{op}: shapes {' and '.join(str(x) for x in shapes)} cannot be broadcast together: "
                    f"The size of tensor a ({a}) must match the size of tensor b ({b}) at non-singleton "
                    f"dimension {i}")
    return tuple(out)
