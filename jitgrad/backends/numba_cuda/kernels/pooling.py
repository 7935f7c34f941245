"""``max_pool2d`` and its gradient's scatter and gather on the GPU, over contiguous (planes, elements)
views (a strided input is copied first).

The forward is a thread per output element scanning its window through the positions computed when
lowering (``ops.pooling.pool_positions``, -1 on the padding), keeping the first largest element (a
NaN, once met, stays). The indices the backward scatters by are data, unknown when lowering, so no
plan can invert them: a thread owns a whole plane and adds its gradients in order, which is
deterministic without atomics (planes are many, and each is small).
"""
from __future__ import annotations

import functools
from typing import Any

import numpy as np
from numba import cuda, from_dtype, types

from ..arrays import reshaped_view
from ..launch import THREADS, blocks_for, launch
from .copy import reshaped


@functools.cache
def _kernels(dtype: np.dtype) -> dict[str, tuple[Any, Any]]:
    """(python function, compiled kernel) of each pooling kernel for ``dtype``."""
    zero = dtype.type(0)

    def max_pool_windows(planes, plane_size, positions, windows, length, values, indices, count):
        for e in range(cuda.grid(1), count, cuda.gridsize(1)):
            p, l = e // length, e % length
            best, at = zero, -1
            for k in range(windows):
                q = positions[k * length + l]
                if q >= 0:
                    v = planes[p * plane_size + q]
                    if at < 0 or v > best or (v != v and best == best):
                        best, at = v, q
            values[e] = best
            indices[e] = at

    def max_pool_scatter(grad, indices, length, out, plane_size, planes):
        for p in range(cuda.grid(1), planes, cuda.gridsize(1)):
            for q in range(plane_size):
                out[p * plane_size + q] = zero
            for l in range(length):
                out[p * plane_size + indices[p * length + l]] += grad[p * length + l]

    def max_pool_gather(src, plane_size, indices, length, out, count):
        for e in range(cuda.grid(1), count, cuda.gridsize(1)):
            out[e] = src[(e // length) * plane_size + indices[e]]
    return {f.__name__: (f, cuda.jit(f)) for f in (max_pool_windows, max_pool_scatter, max_pool_gather)}


def _flat(array: Any, stream: Any) -> Any:
    """A contiguous 1-d view of ``array`` (a copy when it is strided)."""
    return reshaped(array, (array.size,), stream)


def _flat_out(out: Any) -> Any:
    view = reshaped_view(out, (out.size,))
    if view is None:
        raise NotImplementedError("max_pool2d: the CUDA kernels write a contiguous output")
    return view


def max_pool2d(input: Any, positions: Any, windows: int, shape: tuple[int, ...], stream: Any = 0) -> tuple:
    """New (values, indices) of ``shape`` (N, C, oh, ow): each window's first largest element of
    ``input`` (N, C, H, W) and its position ``h * W + w``."""
    values = cuda.device_array(shape, input.dtype, stream=stream)
    indices = cuda.device_array(shape, np.int64, stream=stream)
    count = values.size
    if count:
        length = shape[2] * shape[3]
        _, kernel = _kernels(np.dtype(input.dtype))["max_pool_windows"]
        launch(kernel, blocks_for(count), THREADS, stream, _flat(input, stream), input.shape[2] * input.shape[3],
               positions, windows, length, values.reshape(count), indices.reshape(count), count)
    return values, indices


def max_pool2d_backward(grad: Any, indices: Any, out: Any, stream: Any = 0) -> None:
    """``out`` (N, C, H, W) = zeros with each element of ``grad`` added at its index in its plane."""
    planes = out.shape[0] * out.shape[1]
    if planes == 0:
        return
    _, kernel = _kernels(np.dtype(out.dtype))["max_pool_scatter"]
    launch(kernel, blocks_for(planes), THREADS, stream, _flat(grad, stream), _flat(indices, stream),
           grad.shape[2] * grad.shape[3], _flat_out(out), out.shape[2] * out.shape[3], planes)


def max_pool2d_gather(input: Any, indices: Any, out: Any, stream: Any = 0) -> None:
    """``out`` (N, C, oh, ow) = the elements of ``input`` (N, C, H, W) at ``indices`` in their plane."""
    if out.size == 0:
        return
    _, kernel = _kernels(np.dtype(out.dtype))["max_pool_gather"]
    launch(kernel, blocks_for(out.size), THREADS, stream, _flat(input, stream), input.shape[2] * input.shape[3],
           _flat(indices, stream), out.shape[2] * out.shape[3], _flat_out(out), out.size)


def _types(dtype: str) -> dict[str, tuple]:
    values, index, number = types.Array(from_dtype(np.dtype(dtype)), 1, "C"), types.Array(types.int64, 1, "C"), \
        types.int64
    return {"max_pool_windows": (values, number, index, number, number, values, index, number),
            "max_pool_scatter": (values, index, number, values, number, number),
            "max_pool_gather": (values, number, index, number, values, number)}


# (name, python function, argument types) of every kernel here, for ``numba.cuda.compile_ptx``.
KERNELS = [(name, _kernels(np.dtype(dtype))[name][0], argument_types)
           for dtype in ("float32", "float64") for name, argument_types in _types(dtype).items()]
