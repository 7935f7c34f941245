"""Strided copies and fills: ``copy`` (broadcast, and cast when the dtypes differ), ``fill``,
``concatenate``, ``stack``, and every other copy the backend makes: a reshape of a non-contiguous array
(``reshaped``), a graph's output copied into the caller's array, an in-place op's write-back
(``eager.write_into``).

One kernel does the copying: a thread per element of a grid-stride loop, the loop index unravelled by
division over the (coalesced) shape into each operand's offset (``strided.py`` says why operands are
flat memory with strides). A copy between arrays of one dtype moves raw bits, so one compiled kernel per
element width and rank serves every dtype; only a copy that converts is compiled per pair of dtypes.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np
from numba import cuda, types
from numba.np.numpy_support import from_dtype

from ..arrays import reshaped_view
from ..launch import THREADS, blocks_for, launch
from .strided import RAW_TYPES, Layout, coalesced, layout_of, memory_type, tuple_type


@cuda.jit
def strided_copy(out, out_start, out_strides, src, src_start, src_strides, shape, size):
    """``out[i] = src[i]`` for the ``size`` positions of ``shape`` (converting to ``out``'s type). The
    unravelling is written out in each kernel: a device function called from a kernel would need a GPU
    to compile, and the kernels must compile to PTX without one."""
    for flat in range(cuda.grid(1), size, cuda.gridsize(1)):
        rest, to, frm = flat, out_start, src_start
        for d in range(len(shape) - 1, -1, -1):
            i = rest % shape[d]
            rest //= shape[d]
            to += i * out_strides[d]
            frm += i * src_strides[d]
        out[to] = src[frm]


@cuda.jit
def strided_truth(out, out_start, out_strides, src, src_start, src_strides, shape, size):
    """``out[i] = src[i] != 0``: a conversion to bool (NVVM rejects float16 to bool as a plain cast)."""
    for flat in range(cuda.grid(1), size, cuda.gridsize(1)):
        rest, to, frm = flat, out_start, src_start
        for d in range(len(shape) - 1, -1, -1):
            i = rest % shape[d]
            rest //= shape[d]
            to += i * out_strides[d]
            frm += i * src_strides[d]
        out[to] = src[frm] != 0


@cuda.jit
def strided_fill(out, out_start, out_strides, shape, size, value):
    """``out[i] = value`` for the ``size`` positions of ``shape``."""
    for flat in range(cuda.grid(1), size, cuda.gridsize(1)):
        rest, to = flat, out_start
        for d in range(len(shape) - 1, -1, -1):
            to += (rest % shape[d]) * out_strides[d]
            rest //= shape[d]
        out[to] = value


def copy_layout(out: Layout, src: Layout, stream: Any = 0) -> None:
    """Copies ``src`` (broadcast to ``out``'s shape) into ``out``: both raw, or of the types to convert."""
    extra = len(src.shape) - len(out.shape)
    if extra > 0 and all(n == 1 for n in src.shape[:extra]):  # as numpy's ``out[...] = src``: a 1-element
        src = Layout(src.memory, src.start, src.shape[extra:], src.strides[extra:])  # array into a 0-d one
    src = src.broadcast_to(out.shape)
    if out.size == 0:
        return
    shape, (out_strides, src_strides) = coalesced(out.shape, out.strides, src.strides)
    converts_to_bool = out.memory.dtype == np.bool_ and src.memory.dtype != np.bool_
    kernel = strided_truth if converts_to_bool else strided_copy
    launch(kernel, blocks_for(out.size), THREADS, stream,
           out.memory, out.start, out_strides, src.memory, src.start, src_strides, shape, out.size)


def fill_layout(out: Layout, value: Any, stream: Any = 0) -> None:
    """Writes ``value`` (a scalar of ``out.memory``'s type) at every element of ``out``."""
    if out.size == 0:
        return
    shape, (strides,) = coalesced(out.shape, out.strides)
    launch(strided_fill, blocks_for(out.size), THREADS, stream, out.memory, out.start, strides, shape, out.size, value)


def raw_scalar(value: Any, dtype: Any) -> np.unsignedinteger:
    """``value`` converted to ``dtype`` (as numpy assigns it), as the unsigned integer of its bits."""
    return np.asarray(value).astype(dtype).reshape(1).view(RAW_TYPES[np.dtype(dtype).itemsize])[0]


def fill(out: Any, value: Any, stream: Any = 0) -> None:
    """``out[...] = value`` (the ``fill`` op), the Python number converted to ``out``'s dtype."""
    fill_layout(layout_of(out, raw=True), raw_scalar(value, out.dtype), stream)


def _layouts(out: Any, src: Any) -> tuple[Layout, Layout]:
    """The layouts of ``out`` and ``src`` to copy between: raw when their dtypes agree, else typed so
    that the copy converts."""
    raw = np.dtype(src.dtype) == np.dtype(out.dtype)
    return layout_of(out, raw=raw), layout_of(src, raw=raw)


def copy(src: Any, out: Any, stream: Any = 0) -> None:
    """``out[...] = src``, ``src`` broadcast to ``out``'s shape and converted to its dtype as numpy's
    ``astype`` does (the ``copy`` op, and every copy the codegen needs)."""
    copy_layout(*_layouts(out, src), stream)


def reshaped(array: Any, shape: tuple[int, ...], stream: Any = 0) -> Any:
    """``array`` as ``shape``: a view when it is contiguous, else a contiguous copy (as numpy's
    ``reshape``; the ``reshape`` view statement)."""
    view = reshaped_view(array, shape)
    if view is not None:
        return view
    contiguous = cuda.device_array(array.shape, array.dtype, stream=stream)
    copy(array, contiguous, stream)
    return contiguous.reshape(shape)


def concatenate(sources: Sequence[Any], out: Any, dim: int, stream: Any = 0) -> None:
    """``out`` = the ``sources`` one after another along ``dim``, each copied (converted to ``out``'s
    dtype, numpy's promotion of theirs) into its slab of ``out``."""
    dim, offset = dim % len(out.shape), 0
    for src in sources:
        target, source = _layouts(out, src)
        copy_layout(target.narrow(dim, offset, src.shape[dim]), source, stream)
        offset += src.shape[dim]


def stack(sources: Sequence[Any], out: Any, dim: int, stream: Any = 0) -> None:
    """``out`` = the ``sources`` along a new dimension ``dim``, each copied (converted) into its slice."""
    dim = dim % len(out.shape)
    for index, src in enumerate(sources):
        target, source = _layouts(out, src)
        # a 0-d value arrives as a 1-element array of out's rank: its slice keeps the dimension
        place = target.narrow(dim, index, 1) if len(src.shape) == len(out.shape) else target.select(dim, index)
        copy_layout(place, source, stream)


RANKS = (1, 2, 3, 4)
"""Ranks listed for the PTX check: a coalesced copy is rarely of more (any rank compiles alike)."""
CAST_DTYPES = ("bool", "uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64")


def _copy_types(to: Any, frm: Any, rank: int) -> tuple:
    return (memory_type(to), types.int64, tuple_type(rank), memory_type(frm), types.int64, tuple_type(rank),
            tuple_type(rank), types.int64)


KERNELS = (
    [("strided_copy", strided_copy.py_func, _copy_types(raw, raw, rank))
     for raw in RAW_TYPES.values() for rank in RANKS]
    + [("strided_copy", strided_copy.py_func, _copy_types(to, frm, 1))
       for to in CAST_DTYPES if to != "bool" for frm in CAST_DTYPES if frm != to]
    + [("strided_truth", strided_truth.py_func, _copy_types("bool", frm, 1)) for frm in CAST_DTYPES if frm != "bool"]
    + [("strided_fill", strided_fill.py_func, (memory_type(raw), types.int64, tuple_type(rank), tuple_type(rank),
                                               types.int64, from_dtype(np.dtype(raw))))
       for raw in RAW_TYPES.values() for rank in RANKS])
"""Each kernel with the argument types it is compiled with: raw copies and fills per width and rank,
converting copies between every pair of dtypes (rank 1, where a contiguous conversion lands), to bool
through ``strided_truth``."""

__all__ = ["KERNELS", "concatenate", "copy", "copy_layout", "fill", "fill_layout", "raw_scalar", "reshaped", "stack"]
