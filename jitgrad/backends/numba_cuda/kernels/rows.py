"""Kernels over the rows along one dimension: ``softmax``, ``log_softmax`` and their backwards,
``argmax`` and ``argmin`` (with or without the best values, for ``max(dim)``/``min(dim)``).

A row is the set of elements that differ only in the index along ``dim``; a block takes one row at a
time (grid-stride over the rows), its threads fold a strided part of the row into registers and
``block_reduce`` joins them in a fixed order. Arrays arrive as ``strided.span`` with their steps, so
any layout is read in place; a row's first element is found by unravelling the row number over the
other dimensions (``row_offsets``).
"""
from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
from numba import cuda, from_dtype, types

from ..launch import MAX_BLOCKS, THREADS, launch
from .block_reduce import WARPS, beats, block_best, block_max, block_sum
from .strided import at_least_one, span, steps



@cuda.jit(device=True)
def row_offsets(row, sizes, first_steps, second_steps):
    """Where row ``row`` (numbered in C order over ``sizes``) starts in two arrays with these steps."""
    first = 0
    second = 0
    for d in range(len(sizes) - 1, -1, -1):
        i = row % sizes[d]
        row //= sizes[d]
        first += i * first_steps[d]
        second += i * second_steps[d]
    return first, second


@functools.cache
def _softmax_kernel(dtype: np.dtype) -> tuple[Any, Any]:
    """(python function, compiled kernel) of the softmax of ``dtype``'s rows; ``log`` picks log_softmax.
    Made per dtype: shared memory is declared with a type fixed at compile time."""
    scalar = dtype.type
    lowest, zero, one = scalar(-math.inf), scalar(0), scalar(1)

    def softmax_rows(x, x_rows, x_step, out, out_rows, out_step, sizes, rows, n, log):
        partials = cuda.shared.array(WARPS, dtype)
        row = cuda.blockIdx.x
        while row < rows:
            x_at, out_at = row_offsets(row, sizes, x_rows, out_rows)
            peak = lowest
            for k in range(cuda.threadIdx.x, n, THREADS):
                peak = max(peak, x[x_at + k * x_step])
            peak = block_max(peak, partials)
            total = zero
            for k in range(cuda.threadIdx.x, n, THREADS):
                e = math.exp(x[x_at + k * x_step] - peak)
                total += e
                if not log:
                    out[out_at + k * out_step] = e
            total = block_sum(total, partials)
            if log:
                shift = peak + math.log(total)
                for k in range(cuda.threadIdx.x, n, THREADS):
                    out[out_at + k * out_step] = x[x_at + k * x_step] - shift
            else:
                scale = one / total
                for k in range(cuda.threadIdx.x, n, THREADS):
                    out[out_at + k * out_step] *= scale
            row += cuda.gridDim.x
    return softmax_rows, cuda.jit(softmax_rows)


@functools.cache
def _softmax_backward_kernel(dtype: np.dtype) -> tuple[Any, Any]:
    """(python function, compiled kernel) of softmax's backward over ``dtype``'s rows, ``y * (g -
    sum(g * y))``; ``log`` picks log_softmax's, ``g - exp(y) * sum(g)``. ``g`` and ``y`` share one
    layout (``row_offsets`` of the pair), ``out`` has its own."""
    scalar = dtype.type
    zero = scalar(0)

    def softmax_backward_rows(g, y, g_rows, g_step, y_rows, y_step, out, out_rows, out_step, sizes, rows, n,
                              log):
        partials = cuda.shared.array(WARPS, dtype)
        row = cuda.blockIdx.x
        while row < rows:
            g_at, y_at = row_offsets(row, sizes, g_rows, y_rows)
            out_at, _ = row_offsets(row, sizes, out_rows, out_rows)
            total = zero
            for k in range(cuda.threadIdx.x, n, THREADS):
                term = g[g_at + k * g_step]
                total += term if log else term * y[y_at + k * y_step]
            total = block_sum(total, partials)
            for k in range(cuda.threadIdx.x, n, THREADS):
                gk, yk = g[g_at + k * g_step], y[y_at + k * y_step]
                out[out_at + k * out_step] = gk - math.exp(yk) * total if log else yk * (gk - total)
            row += cuda.gridDim.x
    return softmax_backward_rows, cuda.jit(softmax_backward_rows)


# Keys the shuffles can carry: other dtypes are compared as a wider type holding them exactly.
_KEY_TYPES = {np.dtype(np.float16): np.dtype(np.float32), np.dtype(np.bool_): np.dtype(np.int32),
              np.dtype(np.uint8): np.dtype(np.int32), np.dtype(np.int8): np.dtype(np.int32),
              np.dtype(np.int16): np.dtype(np.int32)}


@functools.cache
def _select_kernel(dtype: np.dtype) -> tuple[Any, Any]:
    """(python function, compiled kernel) finding each row's first best element of ``dtype``: its index
    and, with ``keep_values``, its value. (Without them ``values`` is the index array again, unwritten.)"""
    key_dtype = _KEY_TYPES.get(dtype, dtype)
    key_of = key_dtype.type

    def select_rows(x, x_rows, x_step, indices, index_rows, values, value_rows, sizes, rows, n, largest,
                    keep_values):
        keys = cuda.shared.array(WARPS, key_dtype)
        positions = cuda.shared.array(WARPS, np.int64)
        row = cuda.blockIdx.x
        while row < rows:
            x_at, index_at = row_offsets(row, sizes, x_rows, index_rows)
            best = key_of(x[x_at])
            best_at = -1
            for k in range(cuda.threadIdx.x, n, THREADS):
                key = key_of(x[x_at + k * x_step])
                if beats(key, k, best, best_at, largest):
                    best, best_at = key, k
            best, best_at = block_best(best, best_at, keys, positions, largest)
            if cuda.threadIdx.x == 0:
                indices[index_at] = best_at
                if keep_values:
                    value_at, _ = row_offsets(row, sizes, value_rows, value_rows)
                    values[value_at] = x[x_at + best_at * x_step]
            row += cuda.gridDim.x
    return select_rows, cuda.jit(select_rows)


def _rows(x: Any, dim: int) -> tuple[tuple[int, ...], tuple[int, ...], int, int]:
    """The rows of ``x`` along ``dim``: the other dimensions' sizes and steps, the row length and step.
    A 0-d array is one row of one element."""
    if x.ndim == 0:
        return (), (), 1, 0
    sizes, strides = list(x.shape), list(steps(x))
    n, step = sizes.pop(dim), strides.pop(dim)
    return tuple(sizes), tuple(strides), n, step


def softmax(x: Any, out: Any, dim: int, stream: Any, log: bool = False) -> None:
    """``out[...] = softmax(x, dim)`` (``log_softmax`` with ``log``), both device arrays of one shape and
    a floating dtype, any strides; a row's max, then its sum of exps, then the output."""
    sizes, x_rows, n, x_step = _rows(x, dim)
    _, out_rows, _, out_step = _rows(out, dim)
    rows = int(np.prod(sizes))
    if rows == 0 or n == 0:
        return
    _, kernel = _softmax_kernel(np.dtype(x.dtype))
    launch(kernel, min(rows, MAX_BLOCKS), THREADS, stream,
           span(x), at_least_one(x_rows, 0), x_step, span(out), at_least_one(out_rows, 0), out_step,
           at_least_one(sizes, 1), rows, n, log)


def log_softmax(x: Any, out: Any, dim: int, stream: Any) -> None:
    softmax(x, out, dim, stream, log=True)


def softmax_backward(g: Any, y: Any, out: Any, dim: int, stream: Any, log: bool = False) -> None:
    """``out[...] = y * (g - sum(g * y, dim))`` (``g - exp(y) * sum(g, dim)`` with ``log``): the gradient
    of softmax (log_softmax) for its output ``y`` and that output's gradient ``g``, device arrays of one
    shape and dtype (the statement refuses others), any strides."""
    sizes, g_rows, n, g_step = _rows(g, dim)
    _, y_rows, _, y_step = _rows(y, dim)
    _, out_rows, _, out_step = _rows(out, dim)
    rows = int(np.prod(sizes))
    if rows == 0 or n == 0:
        return
    _, kernel = _softmax_backward_kernel(np.dtype(out.dtype))
    launch(kernel, min(rows, MAX_BLOCKS), THREADS, stream,
           span(g), span(y), at_least_one(g_rows, 0), g_step, at_least_one(y_rows, 0), y_step,
           span(out), at_least_one(out_rows, 0), out_step, at_least_one(sizes, 1), rows, n, log)


def log_softmax_backward(g: Any, y: Any, out: Any, dim: int, stream: Any) -> None:
    softmax_backward(g, y, out, dim, stream, log=True)


def select(x: Any, dim: int, indices: Any, values: Any | None, stream: Any, largest: bool) -> None:
    """``indices[...]`` = the index along ``dim`` of each row's first largest (or smallest) element of
    ``x``, and with ``values`` that element: ``indices`` and ``values`` have the shape of ``x`` without
    ``dim`` (or with it as size 1, ``keepdim``); a NaN is the largest and the smallest, as in numpy."""
    sizes, x_rows, n, x_step = _rows(x, dim)
    if n == 0:
        raise ValueError(f"{'argmax' if largest else 'argmin'}: expected a non-empty dimension {dim}, "
                         f"got shape {tuple(x.shape)}")
    rows = int(np.prod(sizes))
    if rows == 0:
        return
    index_rows = _reduced_steps(indices, x.ndim, dim)
    value_rows = _reduced_steps(values, x.ndim, dim) if values is not None else index_rows
    _, kernel = _select_kernel(np.dtype(x.dtype))
    launch(kernel, min(rows, MAX_BLOCKS), THREADS, stream,
           span(x), at_least_one(x_rows, 0), x_step, span(indices), index_rows,
           span(indices if values is None else values), value_rows, at_least_one(sizes, 1), rows, n, largest,
           values is not None)


def values_and_indices(x: Any, dim: int, keepdim: bool, largest: bool, stream: Any) -> tuple[Any, Any]:
    """``max(x, dim)``/``min(x, dim)``: new device arrays of each row's first best value and its int64
    index, of the reduced shape (``dim`` dropped, or kept as size 1 with ``keepdim``; at least 1-d, as
    every value in generated code)."""
    sizes = list(x.shape)
    if sizes:
        if keepdim:
            sizes[dim] = 1
        else:
            sizes.pop(dim)
    shape = tuple(sizes) or (1,)
    values = cuda.device_array(shape, x.dtype, stream=stream)
    indices = cuda.device_array(shape, np.int64, stream=stream)
    select(x, dim, indices, values, stream, largest)
    return values, indices


def _reduced_steps(result: Any, ndim: int, dim: int) -> tuple[int, ...]:
    """The steps of a reduction's result over the input's other dimensions: ``dim`` dropped, or kept as
    size 1 (``keepdim``). A row of a 1-d input has no other dimension: one step of 0 (a 0-d result may
    arrive as a 1-element array)."""
    if ndim <= 1:
        return (0,)
    result_steps = list(steps(result))
    if result.ndim == ndim:
        result_steps.pop(dim)
    return tuple(result_steps)


def _kernel_types(dtype: np.dtype, rank: int) -> tuple[Any, ...]:
    """What a launch passes, as numba types: spans, the steps and sizes of the other dimensions of a
    ``rank + 1``-d input (a tuple, compiled once per length), numbers."""
    return types.Array(from_dtype(dtype), 1, "C"), types.UniTuple(types.int64, rank), types.int64


def _softmax_types(dtype: np.dtype, rank: int) -> tuple[Any, ...]:
    array, shape, number = _kernel_types(dtype, rank)
    return (array, shape, number, array, shape, number, shape, number, number, types.boolean)


def _softmax_backward_types(dtype: np.dtype, rank: int) -> tuple[Any, ...]:
    array, shape, number = _kernel_types(dtype, rank)
    return (array, array, shape, number, shape, number, array, shape, number, shape, number, number, types.boolean)


def _select_types(dtype: np.dtype, rank: int, values: bool) -> tuple[Any, ...]:
    """With ``values`` (max/min(dim)) the values array has the input's dtype; without, the launch passes
    the int64 indices in its place."""
    array, shape, number = _kernel_types(dtype, rank)
    index = types.Array(types.int64, 1, "C")
    return (array, shape, number, index, shape, array if values else index, shape, shape, number, number,
            types.boolean, types.boolean)


# (name, python function, argument types) of every kernel here, for ``numba.cuda.compile_ptx``: rows of
# 2-d and 3-d inputs, argmax/argmin with and without their values.
KERNELS = [entry for dtype in map(np.dtype, ("float32", "float64")) for rank in (1, 2) for entry in (
    ("softmax_rows", _softmax_kernel(dtype)[0], _softmax_types(dtype, rank)),
    ("select_rows", _select_kernel(dtype)[0], _select_types(dtype, rank, True)),
    ("select_rows", _select_kernel(dtype)[0], _select_types(dtype, rank, False)))]
# softmax's backward reads rows as softmax does: its rows of 2-d inputs only (each compile costs the tests ~0.7 s).
KERNELS += [("softmax_backward_rows", _softmax_backward_kernel(dtype)[0], _softmax_backward_types(dtype, 1))
            for dtype in map(np.dtype, ("float32", "float64"))]
