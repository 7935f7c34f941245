"""``gather``, ``scatter_add``, ``embedding`` and its backward, whose indices are a device array read at run time
(``indexing.py``'s gathers and scatters take positions computed when lowering, from an index that is
an attribute of the op; these cannot).

Operands are made C-contiguous and flat first (``copy.reshaped``: a view when they already are), so a
kernel reads a dimension ``dim`` as (outer, n, inner) with plain arithmetic. ``scatter_add`` stays
deterministic without atomics: a thread owns one destination and adds, in the index's order, every
source whose index names it (as ``np.add.at`` does eagerly), at the cost of reading the index's
dimension once per destination (``embedding_dense_backward`` likewise, a destination being an element
of a row it sums, and the indices read whole). A kernel cannot raise: an index outside its dimension reads or adds
nothing (the eager op and the CPU kernel raise PyTorch's ``IndexError``).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import cuda, types

from ..launch import THREADS, blocks_for, launch
from .copy import copy, fill, reshaped
from .strided import indexed_view, memory_type


@cuda.jit
def gather_along(out, src, index, count, n_index, n_src, inner):
    """``out[p, j, q] = src[p, index[p, j, q], q]`` over flat (outer, n_index, inner) positions."""
    for e in range(cuda.grid(1), count, cuda.gridsize(1)):
        q = e % inner
        p = e // (inner * n_index)
        t = index[e]
        if 0 <= t < n_src:
            out[e] = src[(p * n_src + t) * inner + q]
        else:
            out[e] = 0


@cuda.jit
def scatter_add_along(out, src, index, count, n_index, n_out, inner):
    """``out[p, m, q]`` = the sum, in order, of ``src[p, j, q]`` over the ``j`` with ``index[p, j, q] == m``."""
    for e in range(cuda.grid(1), count, cuda.gridsize(1)):
        q = e % inner
        m = (e // inner) % n_out
        p = e // (inner * n_out)
        out[e] = 0
        for j in range(n_index):
            k = (p * n_index + j) * inner + q
            if index[k] == m:
                out[e] += src[k]


@cuda.jit
def embedding_rows(out, weight, indices, count, rows, columns):
    """``out[i, c] = weight[indices[i], c]`` over flat (len(indices), columns) positions."""
    for e in range(cuda.grid(1), count, cuda.gridsize(1)):
        t = indices[e // columns]
        if 0 <= t < rows:
            out[e] = weight[t * columns + e % columns]
        else:
            out[e] = 0


@cuda.jit
def embedding_backward_rows(out, grad, indices, count, n_indices, columns, padding_idx):
    """``out[t, c]`` = the sum, in order, of ``grad[i, c]`` over the ``i`` with ``indices[i] == t``;
    zero for ``t == padding_idx`` (-1 when there is none)."""
    for e in range(cuda.grid(1), count, cuda.gridsize(1)):
        t = e // columns
        c = e % columns
        out[e] = 0
        if t != padding_idx:
            for i in range(n_indices):
                if indices[i] == t:
                    out[e] += grad[i * columns + c]


def _flat(array: Any, stream: Any) -> Any:
    """``array`` as a flat C-contiguous device array (a view when it is contiguous, else a copy)."""
    return reshaped(array, (max(int(array.size), 1),), stream)


def _along(shape: tuple[int, ...], dim: int) -> tuple[int, int, int]:
    """(outer, n, inner) of ``shape`` around ``dim`` (a 1-element array for a 0-d value)."""
    if not shape:
        return 1, 1, 1
    return math.prod(shape[:dim]), shape[dim], math.prod(shape[dim + 1:])


def _covered(array: Any, shape: tuple[int, ...], dim: int) -> Any:
    """``array`` cut down to ``shape`` in every dimension but ``dim`` (an index may be smaller than the
    array it indexes there, as in PyTorch)."""
    if all(d == dim or n == m for d, (n, m) in enumerate(zip(shape, array.shape))):
        return array
    return indexed_view(array, tuple(slice(None) if d == dim else slice(0, n) for d, n in enumerate(shape)))


def gather(src: Any, index: Any, out: Any, dim: int, stream: Any = 0) -> None:
    """``out`` (the index's shape, C-contiguous) = ``src`` gathered along ``dim`` at ``index``."""
    count = int(out.size)
    if count == 0:
        return
    shape = tuple(int(n) for n in index.shape)
    source = _covered(src, shape, dim)
    _, n_index, inner = _along(shape, dim)
    launch(gather_along, blocks_for(count), THREADS, stream, out.reshape(count), _flat(source, stream),
           _flat(index, stream), count, n_index, int(source.shape[dim]) if shape else 1, inner)


def scatter_add(src: Any, index: Any, out: Any, dim: int, stream: Any = 0) -> None:
    """``out`` = zeros with ``src`` (the index's shape) added along ``dim`` at ``index``."""
    fill(out, 0, stream)
    if index.size == 0:
        return
    shape = tuple(int(n) for n in index.shape)
    region_shape = tuple(int(out.shape[d]) if d == dim else n for d, n in enumerate(shape))
    whole = region_shape == tuple(int(n) for n in out.shape)
    region = out if whole else cuda.device_array(region_shape, out.dtype, stream=stream)
    _, n_index, inner = _along(shape, dim)
    count = math.prod(region_shape)
    launch(scatter_add_along, blocks_for(count), THREADS, stream, region.reshape(count), _flat(src, stream),
           _flat(index, stream), count, n_index, region_shape[dim], inner)
    if not whole:
        copy(region, _covered(out, shape, dim), stream)


def embedding(weight: Any, indices: Any, out: Any, stream: Any = 0) -> None:
    """``out`` (the indices' shape and a row's) = the rows of ``weight`` (rows, columns) at ``indices``."""
    count = int(out.size)
    if count == 0:
        return
    rows, columns = (int(n) for n in weight.shape)
    launch(embedding_rows, blocks_for(count), THREADS, stream, out.reshape(count), _flat(weight, stream),
           _flat(indices, stream), count, rows, columns)


def embedding_dense_backward(grad: Any, indices: Any, out: Any, padding_idx: int | None, stream: Any = 0) -> None:
    """``out`` (rows, columns) = zeros with each row of ``grad`` (the indices' shape and a row's) added
    into the row its index names, none into ``padding_idx``'s."""
    count = int(out.size)
    if count == 0:
        return
    columns = int(out.shape[1])
    launch(embedding_backward_rows, blocks_for(count), THREADS, stream, out.reshape(count), _flat(grad, stream),
           _flat(indices, stream), count, int(indices.size), columns, -1 if padding_idx is None else padding_idx)


_INDEX, _N = memory_type(np.int64), types.int64
DTYPES = ("float32", "float64", "int64")
KERNELS = ([("gather_along", gather_along.py_func, (memory_type(d), memory_type(d), _INDEX, _N, _N, _N, _N))
            for d in DTYPES]
           + [("scatter_add_along", scatter_add_along.py_func,
               (memory_type(d), memory_type(d), _INDEX, _N, _N, _N, _N)) for d in DTYPES]
           + [("embedding_rows", embedding_rows.py_func, (memory_type(d), memory_type(d), _INDEX, _N, _N, _N))
              for d in DTYPES]
           + [("embedding_backward_rows", embedding_backward_rows.py_func,
               (memory_type(d), memory_type(d), _INDEX, _N, _N, _N, _N)) for d in DTYPES])
"""Each kernel with the argument types it is compiled with: flat operands of each listed dtype and
int64 indices (an int32 index compiles its own specialization when met)."""

__all__ = ["KERNELS", "embedding", "embedding_dense_backward", "gather", "scatter_add"]
