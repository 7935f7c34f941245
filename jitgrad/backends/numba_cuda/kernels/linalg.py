"""Matrix products: ``gemm``/``batched_gemm`` as one tiled shared-memory kernel, ``gemv``/``dot`` as a
block per output element.

The tiled kernel gives each block a ``TILE`` x ``TILE`` square of one output matrix and ``SIDE`` x
``SIDE`` threads: the block walks along ``k`` ``SIDE`` columns of A and rows of B at a time, copied to
shared memory, and each thread keeps ``PER`` x ``PER`` output elements in registers (rows ``ty``,
``ty + SIDE``...), so that each value read from shared memory serves ``PER`` products instead of one.
Each output element sums its products in ``k`` order (deterministic, no atomics).
Batches (``blockIdx.z``, grid-stride) and any strides come from element steps (``strided.py``): a
broadcast batch dimension has step 0, a vector operand is a matrix with a step-0 dimension, so numpy's
``matmul`` rules need no copies. A matrix-vector product would leave all but one column of each tile
idle; it gets a block per row instead, folding the row with ``block_reduce.block_sum``.
"""
from __future__ import annotations

import functools
from typing import Any

import numpy as np
from numba import cuda, from_dtype, types

from ..launch import GRID_LIMIT, MAX_BLOCKS, THREADS, launch
from ..simulator import is_simulator
from .block_reduce import WARPS, block_sum
from .strided import at_least_one, span, steps

SIDE = 4 if is_simulator() else 16    # threads along each side of a block
PER = 2 if is_simulator() else 4      # output rows (and columns) per thread
TILE = SIDE * PER                                  # a block's square of the output


@cuda.jit(device=True)
def _batch_offsets(z, sizes, a_steps, b_steps, out_steps):
    """Where matrix ``z`` of the output (C order over the batch ``sizes``) and its operands start."""
    a = 0
    b = 0
    out = 0
    for d in range(len(sizes) - 1, -1, -1):
        i = z % sizes[d]
        z //= sizes[d]
        a += i * a_steps[d]
        b += i * b_steps[d]
        out += i * out_steps[d]
    return a, b, out


@functools.cache
def _gemm_kernel(dtype: np.dtype) -> tuple[Any, Any]:
    """(python function, compiled kernel) of the tiled product for ``dtype``: shared memory is declared
    with a type fixed at compile time, so one kernel per dtype."""
    zero = dtype.type(0)

    def batched_gemm_tiles(a, a_batch, a_row, a_col, b, b_batch, b_row, b_col, out, out_batch, out_row, out_col,
                           sizes, batches, n, k, m):
        tile_a = cuda.shared.array((TILE, SIDE), dtype)  # rows of A's tile, SIDE of its columns
        tile_b = cuda.shared.array((SIDE, TILE), dtype)
        total = cuda.local.array((PER, PER), dtype)
        column_a = cuda.local.array(PER, dtype)
        row_b = cuda.local.array(PER, dtype)
        tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
        thread = ty * SIDE + tx
        first_row, first_col = cuda.blockIdx.y * TILE, cuda.blockIdx.x * TILE
        z = cuda.blockIdx.z
        while z < batches:
            a_at, b_at, out_at = _batch_offsets(z, sizes, a_batch, b_batch, out_batch)
            for i in range(PER):
                for j in range(PER):
                    total[i, j] = zero
            for start in range(0, k, SIDE):
                for p in range(PER):  # TILE * SIDE elements of each tile, PER per thread, neighbours side by side
                    e = thread + p * SIDE * SIDE
                    r, c = first_row + e // SIDE, start + e % SIDE
                    tile_a[e // SIDE, e % SIDE] = a[a_at + r * a_row + c * a_col] if r < n and c < k else zero
                    r, c = start + e // TILE, first_col + e % TILE
                    tile_b[e // TILE, e % TILE] = b[b_at + r * b_row + c * b_col] if r < k and c < m else zero
                cuda.syncthreads()
                for d in range(SIDE):
                    for i in range(PER):
                        column_a[i] = tile_a[ty + i * SIDE, d]
                        row_b[i] = tile_b[d, tx + i * SIDE]
                    for i in range(PER):
                        for j in range(PER):
                            total[i, j] += column_a[i] * row_b[j]
                cuda.syncthreads()
            for i in range(PER):
                r = first_row + ty + i * SIDE
                for j in range(PER):
                    c = first_col + tx + j * SIDE
                    if r < n and c < m:
                        out[out_at + r * out_row + c * out_col] = total[i, j]
            z += cuda.gridDim.z
    return batched_gemm_tiles, cuda.jit(batched_gemm_tiles)


@functools.cache
def _row_dot_kernel(dtype: np.dtype) -> tuple[Any, Any]:
    """(python function, compiled kernel) of ``out[i] = a[i, :] @ v`` for ``dtype``, a block per row."""
    zero = dtype.type(0)

    def row_dot(a, a_row, a_col, v, v_step, out, out_step, n, k):
        partials = cuda.shared.array(WARPS, dtype)
        i = cuda.blockIdx.x
        while i < n:
            total = zero
            for j in range(cuda.threadIdx.x, k, THREADS):
                total += a[i * a_row + j * a_col] * v[j * v_step]
            total = block_sum(total, partials)
            if cuda.threadIdx.x == 0:
                out[i * out_step] = total
            i += cuda.gridDim.x
    return row_dot, cuda.jit(row_dot)


def _check(name: str, *arrays: Any) -> np.dtype:
    dtype = np.dtype(arrays[0].dtype)
    if any(np.dtype(x.dtype) != dtype for x in arrays):
        raise TypeError(f"{name}: expected operands and result of one dtype, got "
                        f"{', '.join(str(x.dtype) for x in arrays)}")
    return dtype


def batched_gemm(a: Any, b: Any, out: Any, stream: Any) -> None:
    """``out[...] = a @ b`` with numpy's ``matmul`` rules: a (..., n, k) or (k,), b (..., k, m) or (k,),
    batch dimensions broadcast, ``out`` of the result's shape; device arrays of any strides."""
    dtype = _check("matmul", a, b, out)
    a_steps = (0,) + steps(a) if a.ndim == 1 else steps(a)        # a vector is a row ...
    b_steps = steps(b) + (0,) if b.ndim == 1 else steps(b)        # ... or a column
    a_shape = (1,) + tuple(a.shape) if a.ndim == 1 else tuple(a.shape)
    b_shape = tuple(b.shape) + (1,) if b.ndim == 1 else tuple(b.shape)
    n, k, m = a_shape[-2], a_shape[-1], b_shape[-1]
    batch = tuple(np.broadcast_shapes(a_shape[:-2], b_shape[:-2]))
    out_steps = _result_steps(out, len(batch) + 2 - (a.ndim == 1) - (b.ndim == 1))
    if a.ndim == 1:
        out_steps.insert(len(out_steps) - (b.ndim > 1), 0)
    if b.ndim == 1:
        out_steps.append(0)
    batches = int(np.prod(batch))
    if batches * n * m == 0:
        return
    _, kernel = _gemm_kernel(dtype)
    grid = ((m + TILE - 1) // TILE, (n + TILE - 1) // TILE, min(batches, GRID_LIMIT))
    if grid[1] > GRID_LIMIT:
        raise ValueError(f"matmul: {n} rows is more than this kernel's grid covers ({GRID_LIMIT * TILE})")
    launch(kernel, grid, (SIDE, SIDE), stream,
        span(a), _batch_steps(a_shape, a_steps, batch), a_steps[-2], a_steps[-1],
        span(b), _batch_steps(b_shape, b_steps, batch), b_steps[-2], b_steps[-1],
        span(out), _batch_steps(batch + (n, m), tuple(out_steps), batch), out_steps[-2], out_steps[-1],
        at_least_one(batch, 1), batches, n, k, m)


def _result_steps(out: Any, ndim: int) -> list[int]:
    """The result's steps, for the ``ndim`` dimensions of numpy's result; a 1-element array stands for
    a 0-d result (generated code keeps every value at least 1-d)."""
    if out.ndim == ndim:
        return list(steps(out))
    if out.size == 1:
        return [0] * ndim
    raise ValueError(f"matmul: a result of shape {tuple(out.shape)} does not fit the product's {ndim} dimensions")


def _batch_steps(shape: tuple[int, ...], operand_steps: tuple[int, ...], batch: tuple[int, ...]) -> tuple[int, ...]:
    """An operand's steps over the broadcast ``batch`` dimensions: 0 where it has none or size 1."""
    own = len(shape) - 2
    result = [0] * len(batch)
    for d in range(own):
        if shape[d] != 1:
            result[len(batch) - own + d] = operand_steps[d]
    return at_least_one(result, 0)


def gemm(a: Any, b: Any, out: Any, stream: Any) -> None:
    """``out[...] = a @ b`` for matrices a (n, k), b (k, m)."""
    batched_gemm(a, b, out, stream)


def gemv(a: Any, v: Any, out: Any, stream: Any) -> None:
    """``out[...] = a @ v`` for a matrix a (n, k) and vectors v (k,), out (n,)."""
    dtype = _check("mv", a, v, out)
    n, k = a.shape
    if n == 0:
        return
    (a_row, a_col), (v_step,), (out_step,) = steps(a), steps(v), steps(out)
    _, kernel = _row_dot_kernel(dtype)
    launch(kernel, min(n, MAX_BLOCKS), THREADS, stream,
           span(a), a_row, a_col, span(v), v_step, span(out), out_step, n, k)


def dot(a: Any, b: Any, out: Any, stream: Any) -> None:
    """``out`` (one element, 0-d or 1-element) ``= a @ b`` for vectors a, b (k,)."""
    dtype = _check("dot", a, b, out)
    _, kernel = _row_dot_kernel(dtype)
    launch(kernel, 1, THREADS, stream, span(a), 0, steps(a)[0], span(b), steps(b)[0], span(out), 0, 1, a.shape[0])


def _gemm_types(dtype: np.dtype, batch_rank: int) -> tuple[Any, ...]:
    """A launch's numba types: per operand its span, batch steps and matrix steps; then the batch sizes
    (a tuple of ``batch_rank``, compiled once per length: 1 for mm), the count of matrices, n, k, m."""
    array, number = types.Array(from_dtype(dtype), 1, "C"), types.int64
    batch = types.UniTuple(types.int64, batch_rank)
    operand = (array, batch, number, number)
    return operand * 3 + (batch, number, number, number, number)


def _row_dot_types(dtype: np.dtype) -> tuple[Any, ...]:
    array, number = types.Array(from_dtype(dtype), 1, "C"), types.int64
    return (array, number, number, array, number, array, number, number, number)


# (name, python function, argument types) of every kernel here, for ``numba.cuda.compile_ptx``: mm and a
# product with two batch dimensions, mv and dot.
KERNELS = [entry for dtype in map(np.dtype, ("float32", "float64")) for entry in (
    ("batched_gemm_tiles", _gemm_kernel(dtype)[0], _gemm_types(dtype, 1)),
    ("batched_gemm_tiles", _gemm_kernel(dtype)[0], _gemm_types(dtype, 2)),
    ("row_dot", _row_dot_kernel(dtype)[0], _row_dot_types(dtype)))]
