"""Shapes and dimensions: ``Size``, dimension wrapping and broadcasting, with PyTorch's error texts, and the
layout of a copy that preserves a view's order of dimensions."""
from __future__ import annotations

from typing import Any, Iterable, Sequence

import numpy as np


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


def dense_order(shape: Sequence[int], strides: Sequence[int]) -> list[int]:
    """The dimensions, outermost first, of a gapless copy that keeps a strided layout's order of
    dimensions (PyTorch's ``preserve_format`` for a view with gaps or repeats): sorted by stride, a
    dimension of stride 0 (expanded) left where it is among the others, as PyTorch's inference does; numpy's
    order ``"K"`` makes an expanded dimension the innermost instead (``x[:1].expand(3, 4).clone()`` was
    column-major, so its ``view(-1)`` raised)."""
    order = list(range(len(shape)))[::-1]   # innermost first while sorting

    def outer(d0: int, d1: int) -> int:  # 1: d0 lies outside d1, -1: inside, 0: either
        s0, s1 = abs(strides[d0]), abs(strides[d1])
        if s0 == 0 or s1 == 0 or (s0 == s1 and shape[d0] <= shape[d1]):
            return 0
        return 1 if s0 >= s1 else -1
    for i in range(1, len(order)):
        moving = i
        for before in range(i - 1, -1, -1):
            verdict = outer(order[before], order[moving])
            if verdict > 0:
                order[before], order[moving] = order[moving], order[before]
                moving = before
            elif verdict < 0:
                break
    return order[::-1]


def preserved_copy(array: np.ndarray, dtype: Any = None) -> np.ndarray:
    """A copy of ``array`` (cast to ``dtype``) in PyTorch's ``preserve_format``: a gapless array keeps
    its strides (a transpose stays one), any other gets gapless ones in its order of dimensions
    (``dense_order``): a stepped slice of a row-major array is row-major, as PyTorch's copies are."""
    if array.flags.c_contiguous or is_dense(array):
        return np.array(array, dtype=dtype, copy=True, order="K")
    order = dense_order(array.shape, array.strides)
    target = array.dtype if dtype is None else dtype
    copy = np.empty([array.shape[d] for d in order], target).transpose(np.argsort(order))
    np.copyto(copy, array, casting="unsafe")
    return copy


def is_dense(array: np.ndarray) -> bool:
    """Whether an array's elements fill their memory without gaps or repeats, in any order of
    dimensions (a transpose or a permute is; a stepped slice or an expanded view is not)."""
    step = array.dtype.itemsize
    for stride, size in sorted((abs(s), n) for s, n in zip(array.strides, array.shape) if n != 1):
        if stride != step:
            return False
        step *= size
    return True
