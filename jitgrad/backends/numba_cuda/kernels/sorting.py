"""``topk`` (``sort`` too) and ``cumsum`` along a dimension, the input made C-contiguous and read as
(outer, n, inner).

Sorting is a rank per element, with no scratch memory and no atomics: a thread per element counts the
elements of its row that come before it (better, or equal and earlier: a stable order, as the eager op's
and the CPU kernel's, NaN above every number), and writes it at that rank when the rank is below ``k``.
That is n comparisons per element, fine for the rows of a model (class scores, a sequence), not a sort
of millions. ``cumsum`` is a thread per row, adding in order: the eager op's sums, in the output's
dtype (integers add up as int64).
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import cuda, types

from ..launch import THREADS, blocks_for, launch
from .copy import reshaped
from .strided import memory_type


@cuda.jit
def rank_select(values, indices, src, count, n, inner, k, largest):
    for e in range(cuda.grid(1), count, cuda.gridsize(1)):
        q = e % inner
        i = (e // inner) % n
        p = e // (inner * n)
        x = src[e]
        rank = 0
        for j in range(n):
            y = src[(p * n + j) * inner + q]
            if largest:
                before = y > x or (y != y and x == x)
            else:
                before = y < x or (x != x and y == y)
            tie = y == x or (y != y and x != x)
            if before or (tie and j < i):
                rank += 1
        if rank < k:
            at = (p * k + rank) * inner + q
            values[at] = x
            indices[at] = i


@cuda.jit
def running_sum(out, src, rows, n, inner):
    for r in range(cuda.grid(1), rows, cuda.gridsize(1)):
        base = (r // inner) * n * inner + r % inner
        if n > 0:
            out[base] = src[base]
        for k in range(1, n):
            out[base + k * inner] = out[base + (k - 1) * inner] + src[base + k * inner]


def _along(shape: tuple[int, ...], dim: int) -> tuple[int, int, int]:
    if not shape:
        return 1, 1, 1
    return math.prod(shape[:dim]), shape[dim], math.prod(shape[dim + 1:])


def topk(src: Any, k: int, dim: int, largest: bool, stream: Any = 0) -> tuple[Any, Any]:
    """New device arrays of the first ``k`` elements along ``dim`` in (stable) sorted order, largest
    first with ``largest``, and their int64 indices; ``dim`` becomes ``k`` long (at least 1-d)."""
    shape = tuple(int(n) for n in src.shape)
    outer, n, inner = _along(shape, dim)
    result = list(shape) or [1]
    result[dim if shape else 0] = k
    values = cuda.device_array(tuple(result), src.dtype, stream=stream)
    indices = cuda.device_array(tuple(result), np.int64, stream=stream)
    count = outer * n * inner
    if count and k:
        flat = reshaped(src, (count,), stream)
        launch(rank_select, blocks_for(count), THREADS, stream, values.reshape(outer * k * inner),
               indices.reshape(outer * k * inner), flat, count, n, inner, k, bool(largest))
    return values, indices


def cumsum(src: Any, out: Any, dim: int, stream: Any = 0) -> None:
    """``out`` (C-contiguous, the input's shape) = the running sums of ``src`` along ``dim``."""
    shape = tuple(int(n) for n in src.shape) if src.ndim else ()
    outer, n, inner = _along(shape, dim)
    if outer * n * inner == 0:
        return
    launch(running_sum, blocks_for(outer * inner), THREADS, stream, out.reshape(outer * n * inner),
           reshaped(src, (outer * n * inner,), stream), outer * inner, n, inner)


_N = types.int64
KERNELS = ([("rank_select", rank_select.py_func, (memory_type(d), memory_type(np.int64), memory_type(d), _N, _N, _N,
                                                  _N, types.boolean)) for d in ("float32", "float64", "int64")]
           + [("running_sum", running_sum.py_func, (memory_type(d), memory_type(d), _N, _N, _N))
              for d in ("float32", "float64", "int64")])
"""Each kernel with the argument types it is compiled with, for the PTX check."""

__all__ = ["KERNELS", "cumsum", "topk"]
