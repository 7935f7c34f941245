"""Norms and products of ``jitgrad.linalg``: ``vector_norm``, ``matrix_norm``, ``norm``, ``vecdot``,
``multi_dot``, ``cross``, ``diagonal``, composites of jitgrad ops (so they run inside compiled functions
too, except the spectral norms, which take an SVD)."""
from __future__ import annotations

import math
from typing import Sequence

from ..ops.comparisons import scalar_type
from ..ops.linalg import matmul, norm as _vector_norm
from ..ops.products import cross as _cross
from ..ops.shape import diagonal as _diagonal
from ..tensor import Tensor
from .solvers import svdvals


def _floating(op: str, x: Tensor, dtype) -> None:
    """PyTorch's checks: a floating input, and a ``dtype`` it converts to without narrowing."""
    if x._data.dtype.kind != "f":
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got {scalar_type(x)}")
    if dtype is not None and dtype.numpy.itemsize < x._data.dtype.itemsize:
        raise RuntimeError(f"{op}: the dtype of the input ({scalar_type(x)}) should be convertible without "
                           f"narrowing to the specified dtype ({scalar_type(x.to(dtype))})")


def vector_norm(x: Tensor, ord: float = 2, dim: int | Sequence[int] | None = None, keepdim: bool = False, *,
                dtype=None) -> Tensor:
    """The ``ord``-norm of ``x``'s elements over ``dim`` (all of them for ``None``), computed in ``dtype``
    where given: 2, 1, ``inf``, ``-inf``, 0 (the count of nonzeros) or any other number."""
    if isinstance(ord, str):
        raise TypeError("linalg_vector_norm(): argument 'ord' (position 2) must be Number, not str: the matrix "
                        "norms ('fro', 'nuc') are linalg.matrix_norm's")
    _floating("linalg.vector_norm", x, dtype)
    if dim is not None and not isinstance(dim, int):
        dim = tuple(dim)
    return _vector_norm(x, float(ord), dim, keepdim, dtype)


def _matrix_dims(A: Tensor, dim: Sequence[int]) -> tuple[int, int]:
    if len(dim) != 2:
        raise RuntimeError(f"linalg.matrix_norm: dim must be a 2-tuple. Got {' '.join(map(str, dim))}")
    if A.ndim < 2:
        raise RuntimeError("linalg.matrix_norm: The input tensor A must have at least 2 dimensions.")
    rows, cols = (d % A.ndim if -A.ndim <= d < A.ndim else None for d in dim)
    if rows is None or cols is None:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-A.ndim}, {A.ndim - 1}], but got "
                         f"{dim[0] if rows is None else dim[1]})")
    if rows == cols:
        raise RuntimeError(f"linalg.matrix_norm: dims must be different. Got ({dim[0]}, {dim[1]})")
    return rows, cols


def matrix_norm(A: Tensor, ord: float | str = "fro", dim: Sequence[int] = (-2, -1), keepdim: bool = False, *,
                dtype=None) -> Tensor:
    """The matrix norm over the two dimensions ``dim``: ``'fro'``, ``'nuc'`` (the sum of singular values),
    1 / -1 (the largest / smallest column sum of magnitudes), ``inf`` / ``-inf`` (row sums), 2 / -2 (the
    largest / smallest singular value)."""
    _floating("linalg.matrix_norm", A, dtype)
    rows, cols = _matrix_dims(A, tuple(dim))
    if dtype is not None:
        A = A.to(dtype)
    if ord == "fro":
        return _vector_norm(A, 2.0, (rows, cols), keepdim)
    if ord in ("nuc", 2, -2):
        values = svdvals(A.movedim((rows, cols), (-2, -1)))
        result = values.sum(-1) if ord == "nuc" else values.amax(-1) if ord == 2 else values.amin(-1)
        if keepdim:
            for d in sorted((rows, cols)):
                result = result.unsqueeze(d)
        return result
    if ord not in (1, -1, math.inf, -math.inf):
        raise RuntimeError(f"linalg.matrix_norm: Order {ord} not supported.")
    summed, picked = (rows, cols) if abs(ord) == 1 else (cols, rows)
    sums = A.abs().sum(summed, keepdim=True)
    result = sums.amax(picked, keepdim=True) if ord > 0 else sums.amin(picked, keepdim=True)
    return result if keepdim else result.squeeze(max(rows, cols)).squeeze(min(rows, cols))


def norm(A: Tensor, ord: float | str | None = None, dim: int | Sequence[int] | None = None,
         keepdim: bool = False, *, dtype=None) -> Tensor:
    """A vector norm (``dim`` an int, or ``A`` 1-D) or a matrix norm (``dim`` a pair, ``ord`` a string, or
    ``A`` 2-D with ``ord`` given), with PyTorch's rules; the 2-norm of all elements for no ``ord``/``dim``."""
    if dim is not None:
        dims = (dim,) if isinstance(dim, int) else tuple(dim)
        if len(dims) == 2:
            return matrix_norm(A, "fro" if ord is None else ord, dims, keepdim, dtype=dtype)
        return vector_norm(A, 2 if ord is None else ord, dims, keepdim, dtype=dtype)
    if ord is None:
        return vector_norm(A, 2, None, keepdim, dtype=dtype)
    if A.ndim not in (1, 2):
        raise RuntimeError(f"linalg.norm: If dim is not specified but ord is, the input must be 1D or 2D. Got "
                           f"{A.ndim}D.")
    if A.ndim == 2:
        return matrix_norm(A, ord, (-2, -1), keepdim, dtype=dtype)
    return vector_norm(A, ord, None, keepdim, dtype=dtype)


def vecdot(x: Tensor, y: Tensor, *, dim: int = -1) -> Tensor:
    """The dot product of vectors along ``dim`` (the operands broadcast)."""
    if x.dtype != y.dtype:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same dtype, but found x of type "
                           f"{scalar_type(x)} and y of type {scalar_type(y)} instead.")
    if x.shape[dim] != y.shape[dim]:
        raise RuntimeError(f"linalg.vecdot: Expected x and y to have the same size at dim {dim}, but found "
                           f"{x.shape[dim]} and {y.shape[dim]} ({list(x.shape)} and {list(y.shape)})")
    return (x * y).sum(dim)


def cross(input: Tensor, other: Tensor, *, dim: int = -1) -> Tensor:
    """The cross product of 3-vectors along ``dim`` (-1 by default, unlike ``torch.cross``)."""
    return _cross(input, other, dim=dim)


def diagonal(A: Tensor, *, offset: int = 0, dim1: int = -2, dim2: int = -1) -> Tensor:
    """``A``'s diagonals over the last two dimensions by default (``torch.diagonal``'s are the first two)."""
    return _diagonal(A, offset, dim1, dim2)


def _chain_order(sizes: list[int]) -> list[list[int]]:
    """The matrix-chain split points that minimise the multiplications (the textbook dynamic program)."""
    count = len(sizes) - 1
    cost = [[0] * count for _ in range(count)]
    split = [[0] * count for _ in range(count)]
    for length in range(1, count):
        for i in range(count - length):
            j = i + length
            cost[i][j] = math.inf
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + sizes[i] * sizes[k + 1] * sizes[j + 1]
                if c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def multi_dot(tensors: Sequence[Tensor]) -> Tensor:
    """The product of a chain of matrices in the order that needs the fewest multiplications; the first
    (last) may be a vector, taken as a row (column) and dropped from the result's shape, as in PyTorch."""
    tensors = list(tensors)
    if len(tensors) < 2:
        raise RuntimeError(f"multi_dot(): expected at least 2 tensors but got {len(tensors)}")
    first, last = tensors[0], tensors[-1]
    if first.ndim not in (1, 2):
        raise RuntimeError(f"multi_dot(): the first tensor must be 1D or 2D but got {first.ndim}D")
    if last.ndim not in (1, 2):
        raise RuntimeError(f"multi_dot(): the last tensor must be 1D or 2D but got {last.ndim}D")
    for i, t in enumerate(tensors[1:-1], 1):
        if t.ndim != 2:
            raise RuntimeError(f"multi_dot(): tensor {i} must be 2D but got {t.ndim}D")
    chain = [first.unsqueeze(0) if first.ndim == 1 else first, *tensors[1:-1],
             last.unsqueeze(1) if last.ndim == 1 else last]
    for i in range(len(chain) - 1):
        if chain[i].shape[1] != chain[i + 1].shape[0]:
            raise RuntimeError(f"multi_dot(): tensors {i} and {i + 1} with shapes {list(tensors[i].shape)} and "
                               f"{list(tensors[i + 1].shape)} cannot be multiplied")
    split = _chain_order([chain[0].shape[0]] + [t.shape[1] for t in chain])

    def product(i: int, j: int) -> Tensor:
        return chain[i] if i == j else matmul(product(i, split[i][j]), product(split[i][j] + 1, j))
    result = product(0, len(chain) - 1)
    if first.ndim == 1:
        result = result.squeeze(0)
    if last.ndim == 1:
        result = result.squeeze(-1)
    return result
