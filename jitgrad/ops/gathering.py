"""Indexing by an integer tensor: ``gather``, ``scatter_add``, ``embedding`` and its backward.

Unlike ``x[index]`` (``indexing.py``), whose index is an attribute read when tracing, these take their
indices as an input of the op, an integer tensor: a compiled model takes a new batch of token ids or
labels as an argument, and its kernel reads them at run time. Every gradient is a scatter-add of the
incoming gradient (``scatter_add``, an op of its own whose gradient is ``gather`` again; for
``embedding``, ``embedding_dense_backward``, which adds whole rows and whose gradient is ``embedding``
again), so gradients of any order need nothing more. Indices outside the indexed dimension are
PyTorch's errors eagerly; the CPU kernels raise the same way, the CUDA ones cannot raise and read or
add nothing there.
"""
from __future__ import annotations

import numpy as np

from ..shapes import wrap_dim
from ..tensor import Tensor
from .lowering import intrinsic
from .meta_rules import TensorMeta, given
from .arithmetic import ne, where
from .public import public
from .registry import defop
from .shape import unsqueeze


def _coordinates(index: np.ndarray, dim: int) -> tuple[np.ndarray, ...]:
    """For each element of ``index``, its own position with ``dim`` replaced by its value: where
    ``gather`` reads and ``scatter_add`` writes."""
    grid = list(np.indices(index.shape, sparse=True))
    grid[dim] = index
    return tuple(grid)


def _check_index(op: str, shape: tuple[int, ...], index: np.ndarray, dim: int) -> None:
    """PyTorch's checks of an index along ``dim`` of an array of ``shape``, with its exception types
    (all RuntimeError, an index out of bounds included)."""
    if index.dtype.kind not in "iu":
        raise RuntimeError(f"{op}(): Expected dtype int32/int64 for index")
    if index.ndim != len(shape):
        raise RuntimeError("Index tensor must have the same number of dimensions as input tensor")
    for d, (n, m) in enumerate(zip(index.shape, shape)):
        if d != dim and n > m:
            raise RuntimeError(f"Size does not match at dimension {d} expected index {list(index.shape)} to be no "
                             f"larger than self {list(shape)} apart from dimension {dim}")
    outside = (index < 0) | (index >= shape[dim])
    if outside.any():
        raise RuntimeError(f"index {int(index[outside][0])} is out of bounds for dimension {dim} with size {shape[dim]}")


def _gather_forward(self: np.ndarray, index: np.ndarray, dim: int) -> np.ndarray:
    _check_index("gather", self.shape, index, dim)
    return self[_coordinates(index, dim)]


def _scatter_add_forward(src: np.ndarray, index: np.ndarray, dim: int, shape: tuple[int, ...]) -> np.ndarray:
    _check_index("scatter_add", shape, index, dim)
    if src.shape != index.shape:
        raise ValueError(f"scatter_add: expected src of the index's shape {list(index.shape)}, got {list(src.shape)}")
    out = np.zeros(shape, src.dtype)
    np.add.at(out, _coordinates(index, dim), src)
    return out


def _gather_meta(self, index, dim):
    return TensorMeta(index.shape, self.dtype)


def _scatter_add_meta(src, index, dim, shape):
    return TensorMeta(tuple(shape), src.dtype)


_gather = defop("gather", ("self", "index"), _gather_forward, "GatherBackward0",
                meta=_gather_meta, lower=intrinsic("gather"),
                self=lambda grad, index, dim, self_shape: _scatter_add(grad, index, dim=dim, shape=self_shape),
                jvp=lambda self_t, index, dim: _gather(self_t, index, dim=dim))

# zeros of ``shape`` with ``src`` added at ``index`` along ``dim`` (repeated indices add up): gather's
# backward, and what ``torch.scatter_add`` adds to its input
_scatter_add = defop("scatter_add", ("src", "index"), _scatter_add_forward, "ScatterAddBackward0",
                     meta=_scatter_add_meta, lower=intrinsic("scatter_add"),
                     src=lambda grad, index, dim: _gather(grad, index, dim=dim),
                     jvp=lambda src_t, index, dim, shape: _scatter_add(src_t, index, dim=dim, shape=shape))


@public("function", "method")
def gather(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """``out[i][j][k] = input[index[i][j][k]][j][k]`` for ``dim`` 0 (and likewise for the others): the
    result has the index's shape. A 0-d input takes a 0-d index, as in PyTorch."""
    dim = wrap_dim(dim, input.ndim, "gather")
    if input.ndim == 0:
        return _gather(input.reshape(1), index.reshape(1) if index.ndim == 0 else index, dim=0).reshape(index.shape)
    return _gather(input, index, dim=dim)


@public("function", "method")
def scatter_add(input: Tensor, dim: int, index: Tensor, src: Tensor) -> Tensor:
    """``input`` with ``src[i][j][k]`` added at ``[index[i][j][k]][j][k]`` (``dim`` 0): where indices
    repeat, every value is added. Only the part of ``src`` the index covers is read, as in PyTorch."""
    if input.dtype != src.dtype:
        raise RuntimeError("scatter(): Expected self.dtype to be equal to src.dtype")
    if input.ndim == 0:
        return scatter_add(input.reshape(1), 0, index.reshape(1), src.reshape(1)).reshape(())
    dim = wrap_dim(dim, input.ndim, "scatter_add")
    if src.ndim != index.ndim or any(n > m for n, m in zip(index.shape, src.shape)):
        raise RuntimeError(f"Expected index {list(index.shape)} to be no larger than src {list(src.shape)}")
    if tuple(src.shape) != tuple(index.shape):
        src = src[tuple(slice(0, n) for n in index.shape)]
    return input + _scatter_add(src, index, dim=dim, shape=tuple(input.shape))


def _check_indices_dtype(indices: np.ndarray) -> None:
    if indices.dtype.kind not in "iu":
        raise RuntimeError(f"Expected tensor for argument #1 'indices' to have one of the following scalar types: "
                           f"Long, Int; but got {indices.dtype} instead (while checking arguments for embedding)")


def _check_indices_range(indices: np.ndarray, rows: int) -> None:
    if ((indices < 0) | (indices >= rows)).any():
        raise IndexError("index out of range in self")


def _embedding_forward(weight: np.ndarray, indices: np.ndarray, padding_idx: int | None) -> np.ndarray:
    _check_indices_dtype(indices)
    if weight.ndim != 2:
        raise RuntimeError(f"'weight' must be 2-D, got shape {list(weight.shape)}")
    if weight.shape[0] == 0 and indices.size:
        raise RuntimeError("index_select(): self indexing axis dim should be positive")
    _check_indices_range(indices, weight.shape[0])
    return weight[indices]


def _embedding_backward_forward(grad: np.ndarray, indices: np.ndarray, shape: tuple[int, int],
                                padding_idx: int | None) -> np.ndarray:
    """Zeros of the weight's ``shape``, each row of ``grad`` added into the row its index names (none
    into ``padding_idx``'s): row after row in the indices' order, so each element sums in the order
    of a ``scatter_add`` over the index expanded to every column, on every backend."""
    _check_indices_dtype(indices)
    _check_indices_range(indices, shape[0])
    rows = grad.reshape(indices.size, shape[1])
    flat = indices.reshape(indices.size)
    if padding_idx is not None:
        kept = flat != padding_idx
        rows, flat = rows[kept], flat[kept]
    out = np.zeros(shape, grad.dtype)
    # one flat position per element: numpy's 1-d ``add.at`` is about 3x faster than adding rows
    positions = (flat[:, None] * shape[1] + np.arange(shape[1])).reshape(-1)
    np.add.at(out.reshape(-1), positions, rows.reshape(-1))
    return out


def _embedding_meta(weight, indices, padding_idx):
    return TensorMeta(tuple(indices.shape) + tuple(weight.shape[1:]), weight.dtype)


def _embedding_backward_grad(grad: Tensor, indices: Tensor, padding_idx: int | None) -> Tensor:
    """The rows of ``grad`` at the indices: zeros where the index is ``padding_idx``, whose row got nothing."""
    rows = _embedding(grad, indices, padding_idx=padding_idx)
    return rows if padding_idx is None else where(unsqueeze(ne(indices, padding_idx), -1), rows, 0.0)


_embedding = defop("embedding", ("weight", "indices"), _embedding_forward, "EmbeddingBackward0",
                   meta=_embedding_meta, lower=intrinsic("embedding"),
                   weight=lambda grad, indices, weight_shape, padding_idx: _embedding_dense_backward(
                       grad, indices, shape=tuple(weight_shape), padding_idx=padding_idx),
                   jvp=lambda weight_t, indices, padding_idx: _embedding(weight_t, indices, padding_idx=padding_idx))

# embedding's backward: one row added per index, where a ``scatter_add`` would read an index expanded
# to every element of the rows (8 bytes read and a bounds check per element, PyTorch's op of this name)
_embedding_dense_backward = defop("embedding_dense_backward", ("grad", "indices"), _embedding_backward_forward,
                                  "EmbeddingDenseBackwardBackward0", meta=given("shape", 0),
                                  lower=intrinsic("embedding_dense_backward"),
                                  grad=_embedding_backward_grad,
                                  jvp=lambda grad_t, indices, shape, padding_idx: _embedding_dense_backward(
                                      grad_t, indices, shape=shape, padding_idx=padding_idx))


def embedding(input: Tensor, weight: Tensor, padding_idx: int | None = None) -> Tensor:
    """``weight``'s rows at the integer tensor ``input``, ``nn.functional.embedding`` (which is public
    there: ``torch.embedding`` takes the same arguments the other way round). The row ``padding_idx``
    gets no gradient; a negative one counts from the end."""
    if padding_idx is not None:
        rows = weight.shape[0]
        if not -rows <= padding_idx < rows:
            raise AssertionError("Padding_idx must be within num_embeddings")
        padding_idx = padding_idx + rows if padding_idx < 0 else padding_idx
    return _embedding(weight, input, padding_idx=padding_idx)


def _described(value) -> str:
    if isinstance(value, Tensor):
        return f"a {value._data.ndim}-D {value._data.dtype.name} tensor"
    return type(value).__name__


@public("function", "method")
def index_select(input: Tensor, dim: int, index: Tensor) -> Tensor:
    """The slices of ``input`` along ``dim`` at the positions of the integer vector ``index`` (a copy);
    its gradient adds into those slices (``GatherBackward0``, PyTorch's: ``IndexSelectBackward0``)."""
    if not isinstance(index, Tensor) or index._data.dtype.kind not in "iu" or index._data.ndim > 1:
        raise RuntimeError("index_select(): Index is supposed to be a vector of integers (int64 or int32), "
                           f"got {_described(index)}")
    ndim = input._data.ndim
    dim = wrap_dim(dim, ndim, "index_select")
    if not ndim:
        return input[index.reshape(-1)].reshape(index._data.shape)
    # a gather of the index broadcast along the other dimensions: the index is an input the compiled
    # kernel reads at run time (x[index] takes it as an attribute, read when tracing)
    count = index._data.size
    along = [1] * ndim
    along[dim] = count
    shape = list(input._data.shape)
    shape[dim] = count
    return gather(input, dim, index.reshape(along).expand(shape))
