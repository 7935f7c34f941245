"""``tap_sum`` on the GPU: a thread owns one output element and sums the taps of its row, each input
element scaled by its weight, read through the tables (device arrays, as the op's inputs are); a tap
naming the position past the end (a short row's padding) reads nothing, so an ``inf`` or NaN reaches
only the outputs whose taps read it. Operands are flat and C-contiguous (``copy.reshaped``), read as
(outer, n, inner) around ``dim``."""
from __future__ import annotations

import math
from typing import Any

import numpy as np
from numba import cuda, types

from ..launch import THREADS, blocks_for, launch
from .copy import reshaped
from .strided import memory_type


@cuda.jit
def tap_sum_rows(out, src, index, weight, count, n_out, n_src, taps, inner):
    """``out[p, i, q] = sum_t weight[i, t] * src[p, index[i, t], q]`` over flat (outer, n_out, inner)
    positions, the taps with ``index >= n_src`` left out."""
    for e in range(cuda.grid(1), count, cuda.gridsize(1)):
        q = e % inner
        i = (e // inner) % n_out
        p = e // (inner * n_out)
        out[e] = 0
        for t in range(taps):
            j = index[i * taps + t]
            if j < n_src:
                out[e] += weight[i * taps + t] * src[(p * n_src + j) * inner + q]


def _flat(array: Any, stream: Any) -> Any:
    return reshaped(array, (max(int(array.size), 1),), stream)


def tap_sum(src: Any, index: Any, weight: Any, out: Any, dim: int, stream: Any = 0) -> None:
    """``out`` (C-contiguous) = the tap sums of ``src`` along ``dim``."""
    count = int(out.size)
    if count == 0:
        return
    shape = tuple(int(n) for n in src.shape)
    inner = math.prod(shape[dim + 1:])
    launch(tap_sum_rows, blocks_for(count), THREADS, stream, out.reshape(count), _flat(src, stream),
           _flat(index, stream), _flat(weight, stream), count, int(out.shape[dim]), shape[dim],
           int(index.shape[1]), inner)


_INDEX, _N = memory_type(np.int64), types.int64
DTYPES = ("float32", "float64", "int64")
KERNELS = [("tap_sum_rows", tap_sum_rows.py_func,
            (memory_type(d), memory_type(d), _INDEX, memory_type(d), _N, _N, _N, _N, _N)) for d in DTYPES]
"""Each kernel with the argument types it is compiled with: flat operands and weights of each listed
dtype, int64 tables."""

__all__ = ["KERNELS", "tap_sum"]
