"""Products PyTorch names beyond ``matmul``: ``dot``, ``vdot``, ``inner``, ``ger``, ``addmv``, ``addr``,
``addbmm``, ``tensordot``, ``kron``, ``trace``, ``cross``, ``cdist``, ``dist`` and ``renorm``. Composites of ``matmul``,
elementwise ops and reductions, so their gradients, forward mode and lowerings come from their parts."""
from __future__ import annotations

import builtins
import math
import warnings
from typing import Sequence

import numpy as np

from ..shapes import wrap_dim
from ..tensor import Tensor
from . import linalg, shape
from .arithmetic import where
from .comparisons import scalar_type
from .math_functions import isfinite
from .public import public


def _check_vectors(op: str, input: Tensor, other: Tensor) -> None:
    if input._data.ndim != 1 or other._data.ndim != 1:
        raise RuntimeError(f"1D tensors expected, but got {input._data.ndim}D and {other._data.ndim}D tensors")
    if input._data.dtype != other._data.dtype:
        raise RuntimeError(f"{op} : expected both vectors to have same dtype, but found {scalar_type(input)} and "
                           f"{scalar_type(other)}")
    if input._data.size != other._data.size:
        raise RuntimeError(f"inconsistent tensor size, expected tensor [{input._data.size}] and src "
                           f"[{other._data.size}] to have the same number of elements, but got {input._data.size} and "
                           f"{other._data.size} elements respectively")


@public("function", "method")
def dot(input: Tensor, other: Tensor) -> Tensor:
    """The sum of the products of two vectors of one size and dtype (``DotBackward0``)."""
    _check_vectors("dot", input, other)
    return linalg.matmul(input, other)


@public("function", "method")
def vdot(input: Tensor, other: Tensor) -> Tensor:
    """``dot`` (the first vector's conjugate is itself: jitgrad has no complex dtype)."""
    _check_vectors("vdot", input, other)
    return linalg.matmul(input, other)


@public("function", "method")
def inner(input: Tensor, other: Tensor) -> Tensor:
    """Sums of products over the last dimension of both: shape ``input.shape[:-1] + other.shape[:-1]``;
    a 0-d operand multiplies."""
    if input._data.ndim == 0 or other._data.ndim == 0:
        return input * other
    n, m = input.shape[-1], other.shape[-1]
    if n != m:
        raise RuntimeError(f"inner() the last dimension must match on both input tensors but got shapes "
                           f"{list(input.shape)} and {list(other.shape)}")
    if input._data.ndim == 1 and other._data.ndim == 1:
        return linalg.matmul(input, other)
    product = linalg.matmul(input.reshape(-1, n), other.reshape(-1, n).transpose(0, 1))
    return product.reshape(input.shape[:-1] + other.shape[:-1])


@public("function", "method")
def ger(input: Tensor, vec2: Tensor) -> Tensor:
    """``outer``'s old name."""
    return linalg.outer(input, vec2)


@public("function", "method")
def addmv(input: Tensor, mat: Tensor, vec: Tensor, *, beta: float = 1, alpha: float = 1) -> Tensor:
    """``beta * input + alpha * (mat @ vec)``."""
    if mat._data.ndim != 2 or vec._data.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got {input._data.ndim}, {mat._data.ndim}, "
                           f"{vec._data.ndim}")
    return linalg._scaled_sum("addmv", input, linalg.matmul(mat, vec), beta, alpha)


@public("function", "method")
def addr(input: Tensor, vec1: Tensor, vec2: Tensor, *, beta: float = 1, alpha: float = 1) -> Tensor:
    """``beta * input + alpha * outer(vec1, vec2)``."""
    return linalg._scaled_sum("addr", input, linalg.outer(vec1, vec2), beta, alpha)


@public("function", "method")
def addbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: float = 1, alpha: float = 1) -> Tensor:
    """``beta * input + alpha * sum_i batch1[i] @ batch2[i]``."""
    return linalg._scaled_sum("addbmm", input, linalg.bmm(batch1, batch2).sum(0), beta, alpha)


@public("function")
def tensordot(a: Tensor, b: Tensor, dims: int | Sequence = 2) -> Tensor:
    """Sums of products over ``dims``: the last ``dims`` dimensions of ``a`` with the first of ``b`` (an
    int), or the dimensions listed (``([1, 0], [0, 1])``); the free dimensions of ``a`` then ``b``'s. The
    contracted dimensions are moved together and merged, and one ``matmul`` does the sums."""
    if isinstance(dims, Tensor):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > builtins.min(a._data.ndim, b._data.ndim):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        dims_a, dims_b = list(range(a._data.ndim - dims, a._data.ndim)), list(range(dims))
    else:
        dims_a, dims_b = ([d] if isinstance(d, int) else list(d) for d in dims)
    if len(dims_a) != len(dims_b):
        raise RuntimeError(f"both dimension lists should have same length, but got {len(dims_a)} and {len(dims_b)}")
    dims_a = [wrap_dim(d, a._data.ndim, "tensordot") for d in dims_a]
    dims_b = [wrap_dim(d, b._data.ndim, "tensordot") for d in dims_b]
    for da, db in zip(dims_a, dims_b):
        if a.shape[da] != b.shape[db]:
            raise RuntimeError(f"contracted dimensions need to match, but first has size {a.shape[da]} in dim "
                               f"{da} and second has size {b.shape[db]} in dim {db}")
    free_a = [d for d in range(a._data.ndim) if d not in dims_a]
    free_b = [d for d in range(b._data.ndim) if d not in dims_b]
    size = math.prod(a.shape[d] for d in dims_a)
    left = a.permute(free_a + dims_a).reshape(-1, size)
    right = b.permute(dims_b + free_b).reshape(size, -1)
    out_shape = tuple(a.shape[d] for d in free_a) + tuple(b.shape[d] for d in free_b)
    return linalg.matmul(left, right).reshape(out_shape)


@public("function", "method")
def kron(input: Tensor, other: Tensor) -> Tensor:
    """The Kronecker product: block ``i`` is ``input[i] * other``; the two padded with leading 1s to one
    number of dimensions, their dimensions interleaved, multiplied (broadcast) and merged."""
    ndim = builtins.max(input._data.ndim, other._data.ndim)
    a_shape = (1,) * (ndim - input._data.ndim) + input.shape
    b_shape = (1,) * (ndim - other._data.ndim) + other.shape
    a = input.reshape(tuple(s for size in a_shape for s in (size, 1)))
    b = other.reshape(tuple(s for size in b_shape for s in (1, size)))
    return (a * b).reshape(tuple(x * y for x, y in zip(a_shape, b_shape)))


@public("function", "method")
def trace(input: Tensor) -> Tensor:
    """The sum of a matrix's diagonal (int64 for integers, as ``sum``)."""
    if input._data.ndim != 2:
        raise RuntimeError(f"trace: expected a matrix, but got tensor with dim {input._data.ndim}")
    return shape.diagonal(input).sum()


@public("function", "method")
def cross(input: Tensor, other: Tensor, dim: int | None = None) -> Tensor:
    """The cross product of 3-vectors along ``dim`` (by default the first dimension of size 3, with
    PyTorch's warning), the two broadcast against each other."""
    if input._data.ndim != other._data.ndim:
        raise RuntimeError("linalg.cross: inputs must have the same number of dimensions.")
    size = tuple(np.broadcast_shapes(input.shape, other.shape))
    if dim is None:
        warnings.warn("Using torch.cross without specifying the dim arg is deprecated.\nPlease either pass the dim "
                      "explicitly or simply use torch.linalg.cross.\nThe default value of dim will change to agree "
                      "with that of linalg.cross in a future release.", UserWarning, stacklevel=2)
        dim = next((d for d, s in enumerate(size) if s == 3), None)
        if dim is None:
            raise RuntimeError(f"no dimension of size 3 in input: shapes {list(input.shape)}, {list(other.shape)}")
    dim = wrap_dim(dim, len(size), "cross")
    if size[dim] != 3:
        raise RuntimeError(f"linalg.cross: inputs dimension {dim} must have length 3. Got {input.shape[dim]} "
                           f"and {other.shape[dim]}")
    a, b = input.expand(size), other.expand(size)
    a1, a2, a3 = (a.narrow(dim, i, 1) for i in range(3))
    b1, b2, b3 = (b.narrow(dim, i, 1) for i in range(3))
    return shape.cat([a2 * b3 - a3 * b2, a3 * b1 - a1 * b3, a1 * b2 - a2 * b1], dim)


@public("function")
def cdist(x1: Tensor, x2: Tensor, p: float = 2.0, compute_mode: str | None = None) -> Tensor:  # noqa: ARG001
    """The ``p``-norm distance between each row of ``x1`` (..., P, M) and each of ``x2`` (..., R, M):
    (..., P, R). Computed from the differences (``norm`` of them), never as PyTorch's matrix-product
    shortcut for p = 2, so it is exact for near points too; a zero distance has a zero gradient, as in
    PyTorch. ``compute_mode`` is accepted and has no effect."""
    if x1._data.ndim < 2 or x2._data.ndim < 2:
        raise RuntimeError(f"cdist only supports at least 2D tensors, X1 got: {x1._data.ndim}D")
    if x1.shape[-1] != x2.shape[-1]:
        raise RuntimeError(f"X1 and X2 must have the same number of columns. X1: {x1.shape[-1]} X2: "
                           f"{x2.shape[-1]}")
    if p < 0:
        raise RuntimeError(f"cdist only supports non-negative p values, got {p}")
    if x1._data.dtype.kind != "f" or x2._data.dtype.kind != "f":
        raise RuntimeError(f"cdist only supports floating-point dtypes, X1 got: {scalar_type(x1)}")
    return distance_norm(x1.unsqueeze(-2) - x2.unsqueeze(-3), p)


def distance_norm(differences: Tensor, p: float) -> Tensor:
    """``norm(differences, p, dim=-1)``, cdist's and pdist's distance. For p = 0 the count of nonzero
    differences has no gradient (``norm``'s node gives its input None, as PyTorch's), where PyTorch's
    cdist and pdist give zeros: a zero that reads the differences (their finite values times 0) is added."""
    distance = linalg.norm(differences, p, dim=-1)
    if p != 0:
        return distance
    return distance + (where(isfinite(differences), differences, 0.0) * 0.0).sum(-1)


@public("function", "method")
def dist(input: Tensor, other: Tensor, p: float = 2) -> Tensor:
    """The ``p``-norm of ``input - other`` (broadcast), as one number; a zero distance has a zero gradient."""
    return linalg.norm(input - other, p)


@public("function", "method")
def renorm(input: Tensor, p: float, dim: int, maxnorm: float) -> Tensor:
    """Each slice along ``dim`` whose ``p``-norm exceeds ``maxnorm`` scaled down to norm ``maxnorm``
    (PyTorch's ``maxnorm / (norm + 1e-7)``); the others as they are. The scale is differentiated too."""
    if p <= 0:
        raise RuntimeError(f"renorm: non-positive-norm not supported (p = {p})")
    if maxnorm < 0:
        raise RuntimeError(f"renorm: expected maxnorm to be >= 0 but got {maxnorm}")
    if input.ndim <= 1:
        raise RuntimeError(f"renorm: input needs at least 2 dimensions, got {input.ndim} dimensions")
    dim = wrap_dim(dim, input.ndim, "renorm")
    others = tuple(d for d in range(input.ndim) if d != dim)
    norms = linalg.norm(input, p, others, keepdim=True)
    return input * where(norms > maxnorm, maxnorm / (norms + 1e-7), 1.0)
