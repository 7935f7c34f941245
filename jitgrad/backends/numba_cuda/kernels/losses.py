"""``nll_loss`` and its backward, as PyTorch's ``nll_loss`` with ``reduction`` "none", "sum" or "mean"
and ``ignore_index`` (the op entry has no class weights): an ignored target adds nothing, gets no
gradient and is not counted by "mean".

The forward picks ``-log_probs[i, target[i]]`` per row; a reduced loss then sums the picks in one block
(``block_reduce.block_sum``, a fixed order: the same total every run). The backward writes every
element of the (N, C) gradient once, a thread per element (zero, or the row's gradient at its target),
so it needs no separate zero fill and no atomics; ``cross_entropy_backward`` (log_softmax's backward of
that gradient) writes each element from the row's target and the log-probabilities the same way. A
target outside the classes cannot raise in a kernel: it picks nothing and adds NaN, so the loss shows
it (the eager op checks targets before this runs).
"""
from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np
from numba import cuda, from_dtype, types

from ..launch import MAX_BLOCKS, THREADS, launch
from .block_reduce import WARPS, block_sum
from .strided import span, steps

REDUCTIONS = ("none", "sum", "mean")


@functools.cache
def _loss_kernel(dtype: np.dtype) -> tuple[Any, Any]:
    """(python function, compiled kernel) of the per-row losses (``reduce`` 0) or their sum (1) or mean
    (2) into ``out[0]``, for ``dtype``: one block for a reduced loss, any grid otherwise."""
    zero, one, nan = dtype.type(0), dtype.type(1), dtype.type(math.nan)

    def nll_rows(log_probs, row_step, class_step, target, target_step, out, out_step, n, classes, reduce, ignore):
        partials = cuda.shared.array(WARPS, dtype)
        counts = cuda.shared.array(WARPS, dtype)
        total, kept = zero, zero
        for i in range(cuda.blockIdx.x * THREADS + cuda.threadIdx.x, n, THREADS * cuda.gridDim.x):
            t = target[i * target_step]
            picked = zero
            if t != ignore:
                picked = -log_probs[i * row_step + t * class_step] if 0 <= t < classes else nan
                kept += one
            if reduce == 0:
                out[i * out_step] = picked
            else:
                total += picked
        if reduce != 0:
            total = block_sum(total, partials)
            kept = block_sum(kept, counts)
            if cuda.threadIdx.x == 0:
                out[0] = total / kept if reduce == 2 else total
    return nll_rows, cuda.jit(nll_rows)


@functools.cache
def _backward_kernel(dtype: np.dtype) -> tuple[Any, Any]:
    """(python function, compiled kernel) writing the gradient of ``nll_loss`` for ``dtype``: a thread
    per element of the (N, C) result (grid-stride)."""
    zero = dtype.type(0)

    def nll_backward_elements(grad, grad_step, target, target_step, out, row_step, class_step, n, classes, reduce,
                              ignore, count):
        for e in range(cuda.grid(1), n * classes, cuda.gridsize(1)):
            i, c = e // classes, e % classes
            t = target[i * target_step]
            if t != c or t == ignore:
                out[i * row_step + c * class_step] = zero
            elif reduce == 0:
                out[i * row_step + c * class_step] = -grad[i * grad_step]
            elif reduce == 2:
                out[i * row_step + c * class_step] = -grad[0] / count[0]
            else:
                out[i * row_step + c * class_step] = -grad[0]
    return nll_backward_elements, cuda.jit(nll_backward_elements)


@functools.cache
def _cross_entropy_backward_kernel(dtype: np.dtype) -> tuple[Any, Any]:
    """(python function, compiled kernel) writing ``g - exp(y) * sum(g)`` for the one-hot gradient g of
    ``nll_loss``, a thread per element: ``v - exp(y) * v`` at a row's target, ``0 - exp(y) * v``
    elsewhere, v the row's value (0 where its target is ignored)."""
    zero = dtype.type(0)

    def cross_entropy_backward_elements(grad, grad_step, target, target_step, y, y_row, y_class, out, row_step,
                                        class_step, n, classes, reduce, ignore, count):
        for e in range(cuda.grid(1), n * classes, cuda.gridsize(1)):
            i, c = e // classes, e % classes
            t = target[i * target_step]
            value = zero
            if t != ignore:
                if reduce == 0:
                    value = -grad[i * grad_step]
                elif reduce == 2:
                    value = -grad[0] / count[0]
                else:
                    value = -grad[0]
            first = value if t == c else zero
            out[i * row_step + c * class_step] = first - math.exp(y[i * y_row + c * y_class]) * value
    return cross_entropy_backward_elements, cuda.jit(cross_entropy_backward_elements)


@functools.cache
def _count_kernel(dtype: np.dtype) -> tuple[Any, Any]:
    """(python function, compiled kernel) counting, in one block, the targets not ignored, as ``dtype``
    into ``count[0]``: the divisor of the "mean" backward, on the device (no copy to the host)."""
    zero, one = dtype.type(0), dtype.type(1)

    def kept_count(target, target_step, n, ignore, count):
        partials = cuda.shared.array(WARPS, dtype)
        kept = zero
        for i in range(cuda.threadIdx.x, n, THREADS):
            if target[i * target_step] != ignore:
                kept += one
        kept = block_sum(kept, partials)
        if cuda.threadIdx.x == 0:
            count[0] = kept
    return kept_count, cuda.jit(kept_count)


def _reduce_code(reduction: str) -> int:
    if reduction not in REDUCTIONS:
        raise ValueError(f"nll_loss: reduction {reduction!r} is not one of {REDUCTIONS}")
    return REDUCTIONS.index(reduction)


def _targets_counted(target: Any, n: int, ignore_index: int, dtype: np.dtype, reduce: int, stream: Any) -> Any:
    """A one-element device array for a backward kernel's "mean" divisor: the rows whose target is not
    ``ignore_index``, counted on the device for ``reduce`` 2 ("mean"), left unset otherwise."""
    count = cuda.device_array(1, dtype, stream=stream)
    if reduce == 2:
        launch(_count_kernel(dtype)[1], 1, THREADS, stream, span(target), steps(target)[0], n, ignore_index, count)
    return count


def nll_loss(log_probs: Any, target: Any, out: Any, reduction: str, stream: Any, ignore_index: int = -100) -> None:
    """``out`` = PyTorch's ``nll_loss(log_probs, target, reduction=reduction)``: log_probs (N, C) of a
    floating dtype, target (N,) integers, out (N,) for "none", else one element (0-d or (1,))."""
    reduce = _reduce_code(reduction)
    n, classes = log_probs.shape
    row_step, class_step = steps(log_probs)
    out_step = steps(out)[0] if out.ndim else 0
    _, kernel = _loss_kernel(np.dtype(log_probs.dtype))
    blocks = 1 if reduce else min(max(1, -(-n // THREADS)), MAX_BLOCKS)
    if reduce == 0 and n == 0:
        return
    launch(kernel, blocks, THREADS, stream,
           span(log_probs), row_step, class_step, span(target), steps(target)[0], span(out), out_step, n, classes,
           reduce, ignore_index)


def nll_loss_backward(grad: Any, target: Any, out: Any, reduction: str, stream: Any,
                      ignore_index: int = -100) -> None:
    """``out`` (N, C) = the gradient of ``nll_loss`` for the incoming ``grad`` ((N,) for "none", else
    one element): ``-grad`` (divided by N for "mean") at each row's target, zero elsewhere."""
    reduce = _reduce_code(reduction)
    n, classes = out.shape
    if n * classes == 0:
        return
    row_step, class_step = steps(out)
    grad_step = steps(grad)[0] if grad.ndim else 0
    dtype = np.dtype(out.dtype)
    count = _targets_counted(target, n, ignore_index, dtype, reduce, stream)
    _, kernel = _backward_kernel(dtype)
    blocks = min(-(-(n * classes) // THREADS), MAX_BLOCKS)
    launch(kernel, blocks, THREADS, stream,
           span(grad), grad_step, span(target), steps(target)[0], span(out), row_step, class_step, n, classes, reduce,
           ignore_index, count)


def cross_entropy_backward(grad: Any, target: Any, y: Any, out: Any, reduction: str, stream: Any,
                           ignore_index: int = -100) -> None:
    """``out`` (N, C) = ``log_softmax_backward(nll_loss_backward(grad, target), y, dim=1)`` for the
    log-probabilities ``y`` (N, C) of ``out``'s dtype, written once per element."""
    reduce = _reduce_code(reduction)
    n, classes = out.shape
    if n * classes == 0:
        return
    row_step, class_step = steps(out)
    y_row, y_class = steps(y)
    grad_step = steps(grad)[0] if grad.ndim else 0
    dtype = np.dtype(out.dtype)
    count = _targets_counted(target, n, ignore_index, dtype, reduce, stream)
    _, kernel = _cross_entropy_backward_kernel(dtype)
    blocks = min(-(-(n * classes) // THREADS), MAX_BLOCKS)
    launch(kernel, blocks, THREADS, stream,
           span(grad), grad_step, span(target), steps(target)[0], span(y), y_row, y_class, span(out), row_step,
           class_step, n, classes, reduce, ignore_index, count)


def _kernel_types(dtype: str) -> tuple[Any, Any, Any]:
    """What a launch passes, as numba types: spans of ``dtype`` and of int64 targets, and numbers."""
    return types.Array(from_dtype(np.dtype(dtype)), 1, "C"), types.Array(types.int64, 1, "C"), types.int64


def _loss_types(dtype: str) -> tuple[Any, ...]:
    array, index, number = _kernel_types(dtype)
    return (array, number, number, index, number, array, number, number, number, number, number)


def _backward_types(dtype: str) -> tuple[Any, ...]:
    array, index, number = _kernel_types(dtype)
    return (array, number, index, number, array, number, number, number, number, number, number, array)


def _count_types(dtype: str) -> tuple[Any, ...]:
    array, index, number = _kernel_types(dtype)
    return (index, number, number, number, array)


def _cross_entropy_backward_types(dtype: str) -> tuple[Any, ...]:
    array, index, number = _kernel_types(dtype)
    return (array, number, index, number, array, number, number, array, number, number, number, number, number,
            number, array)


# (name, python function, argument types) of every kernel here, for ``numba.cuda.compile_ptx``.
KERNELS = [entry for dtype in ("float32", "float64") for entry in (
    ("nll_rows", _loss_kernel(np.dtype(dtype))[0], _loss_types(dtype)),
    ("nll_backward_elements", _backward_kernel(np.dtype(dtype))[0], _backward_types(dtype)),
    ("kept_count", _count_kernel(np.dtype(dtype))[0], _count_types(dtype)))]
# The fused gradient differs from nll_backward_elements by its exp: float32 only (each compile costs the tests ~0.7 s).
KERNELS.append(("cross_entropy_backward_elements", _cross_entropy_backward_kernel(np.dtype("float32"))[0],
                _cross_entropy_backward_types("float32")))
