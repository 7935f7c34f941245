"""Gathers and scatters by flat positions: ``getitem`` with an advanced index, ``index_scatter`` (its
backward, which sums where an index repeats), ``index_put`` and ``copy_slices``.

The positions are C-order positions in the indexed array, computed when lowering (``ctx.positions``),
so they are known on the host before any kernel runs. A scatter is made deterministic there: the host
inverts the positions once (``scatter_plan``), CSR-style, into the distinct destinations, and for each
the sources that land on it in their original order. A thread then owns one destination and sums its
sources in that order, as ``np.add.at`` does, with no atomics and the same bits on every run. A put
(``out[index] = values``) keeps numpy's rule that the last write wins: each destination takes only its
last source (``put_plan``).
"""
from __future__ import annotations

import numbers
from typing import Any

import numpy as np
from numba import cuda, types

from .copy import copy, fill_layout, raw_scalar
from ..launch import THREADS, blocks_for, launch
from .strided import RAW_TYPES, Layout, coalesced, layout_of, memory_type, tuple_type


@cuda.jit
def gather(out, out_start, out_strides, out_shape, src, src_start, src_strides, src_shape, positions, size):
    """``out`` at C-order position ``i`` = ``src`` at C-order position ``positions[i]``. (Unravelling is
    written out in each kernel: see ``copy.strided_copy``.)"""
    for flat in range(cuda.grid(1), size, cuda.gridsize(1)):
        rest, to = flat, out_start
        for d in range(len(out_shape) - 1, -1, -1):
            to += (rest % out_shape[d]) * out_strides[d]
            rest //= out_shape[d]
        rest, frm = positions[flat], src_start
        for d in range(len(src_shape) - 1, -1, -1):
            frm += (rest % src_shape[d]) * src_strides[d]
            rest //= src_shape[d]
        out[to] = src[frm]


@cuda.jit
def scatter_sum(out, out_start, out_strides, out_shape, src, src_start, src_strides, src_shape,
                destinations, bounds, sources, count):
    """For each of the ``count`` destinations ``j``: ``out`` at C-order position ``destinations[j]``
    gains, one after another, ``src`` at C-order positions ``sources[bounds[j]:bounds[j + 1]]``."""
    for j in range(cuda.grid(1), count, cuda.gridsize(1)):
        rest, to = destinations[j], out_start
        for d in range(len(out_shape) - 1, -1, -1):
            to += (rest % out_shape[d]) * out_strides[d]
            rest //= out_shape[d]
        total = out[to]
        for k in range(bounds[j], bounds[j + 1]):
            rest, frm = sources[k], src_start
            for d in range(len(src_shape) - 1, -1, -1):
                frm += (rest % src_shape[d]) * src_strides[d]
                rest //= src_shape[d]
            total += src[frm]
        out[to] = total


@cuda.jit
def put(out, out_start, out_strides, out_shape, src, src_start, src_strides, src_shape, destinations, sources,
        count):
    """``out`` at C-order position ``destinations[j]`` = ``src`` at C-order position ``sources[j]``
    (each destination once: no two threads write one element)."""
    for j in range(cuda.grid(1), count, cuda.gridsize(1)):
        rest, to = destinations[j], out_start
        for d in range(len(out_shape) - 1, -1, -1):
            to += (rest % out_shape[d]) * out_strides[d]
            rest //= out_shape[d]
        rest, frm = sources[j], src_start
        for d in range(len(src_shape) - 1, -1, -1):
            frm += (rest % src_shape[d]) * src_strides[d]
            rest //= src_shape[d]
        out[to] = src[frm]


@cuda.jit
def put_number(out, out_start, out_strides, out_shape, destinations, count, value):
    """``out`` at C-order position ``destinations[j]`` = ``value``."""
    for j in range(cuda.grid(1), count, cuda.gridsize(1)):
        rest, to = destinations[j], out_start
        for d in range(len(out_shape) - 1, -1, -1):
            to += (rest % out_shape[d]) * out_strides[d]
            rest //= out_shape[d]
        out[to] = value


def scatter_plan(positions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(destinations, bounds, sources)``: the distinct flat ``positions`` in increasing order, and for
    destination ``j`` the indices into ``positions`` that name it, ``sources[bounds[j]:bounds[j + 1]]``,
    in their original order (a stable sort keeps it). Run on the host when lowering."""
    flat = np.asarray(positions, dtype=np.int64).reshape(-1)
    sources = np.argsort(flat, kind="stable")
    destinations, first = np.unique(flat[sources], return_index=True)
    bounds = np.append(first, flat.size)
    return destinations.astype(np.int64), bounds.astype(np.int64), sources.astype(np.int64)


def put_plan(positions: np.ndarray, taken: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(destinations, sources)`` of a put at flat ``positions``: each distinct position once, with
    the value its last write takes, ``taken[i]`` for the i-th write (``i`` itself when ``taken`` is
    None), which numpy's ``out[index] = values`` leaves there."""
    destinations, bounds, sources = scatter_plan(positions)
    last = sources[bounds[1:] - 1]
    values = last if taken is None else np.asarray(taken, dtype=np.int64).reshape(-1)[last]
    return destinations, values.astype(np.int64)


def _operand(layout: Layout) -> tuple:
    """A layout as a kernel's four arguments, coalesced (C-order positions are unchanged by it)."""
    shape, (strides,) = coalesced(layout.shape, layout.strides)
    return layout.memory, layout.start, strides, shape


def getitem_gather(src: Any, positions: Any, out: Any, stream: Any = 0) -> None:
    """``out`` (C order) = the elements of ``src`` at flat ``positions`` (an int64 device array with one
    position per element of ``out``): ``x[index]`` for an advanced index."""
    target = layout_of(out, raw=True)
    if target.size == 0:
        return
    launch(gather, blocks_for(target.size), THREADS, stream,
           *_operand(target), *_operand(layout_of(src, raw=True)), positions, target.size)


def gathered(src: Any, positions: Any, shape: tuple[int, ...], stream: Any = 0) -> Any:
    """A new C-contiguous device array of ``shape`` holding the elements of ``src`` at flat
    ``positions`` (``getitem_gather``): a view op's result that cannot be a view has no buffer of the
    memory plan, so it is allocated here."""
    out = cuda.device_array(shape, src.dtype, stream=stream)
    getitem_gather(src, positions, out, stream)
    return out


def index_scatter(grad: Any, destinations: Any, bounds: Any, sources: Any, out: Any, stream: Any = 0) -> None:
    """``out`` = zeros, with the elements of ``grad`` added at the positions ``scatter_plan`` inverted
    (device arrays of its three results), each destination summing its sources in order."""
    if np.dtype(grad.dtype) != np.dtype(out.dtype) or np.dtype(out.dtype) == np.bool_:
        raise TypeError(f"index_scatter: sums a gradient of dtype {np.dtype(grad.dtype)} into an output of "
                        f"dtype {np.dtype(out.dtype)}; both must be the same numeric dtype")
    target = layout_of(out)
    fill_layout(layout_of(out, raw=True), raw_scalar(0, out.dtype), stream)
    count = destinations.shape[0]
    if count == 0:
        return
    launch(scatter_sum, blocks_for(count), THREADS, stream,
           *_operand(target), *_operand(layout_of(grad)), destinations, bounds, sources, count)


def index_put(self: Any, values: Any, destinations: Any, sources: Any | None, out: Any, stream: Any = 0) -> None:
    """``out`` = ``self`` with ``values`` written at ``destinations``: the element of ``values`` at flat
    position ``sources[j]`` at flat position ``destinations[j]`` (``put_plan``'s results, on the
    device), or the Python number ``values`` at each (``sources`` None). ``index_put`` and
    ``copy_slices``."""
    copy(self, out, stream)
    count = destinations.shape[0]
    if count == 0:
        return
    target = layout_of(out, raw=True)
    if isinstance(values, (numbers.Number, np.generic)):
        launch(put_number, blocks_for(count), THREADS, stream,
               *_operand(target), destinations, count, raw_scalar(values, out.dtype))
        return
    if np.dtype(values.dtype) != np.dtype(out.dtype):  # converted once, so that the put moves raw bits
        converted = cuda.device_array(values.shape, out.dtype, stream=stream)
        copy(values, converted, stream)
        values = converted
    launch(put, blocks_for(count), THREADS, stream,
           *_operand(target), *_operand(layout_of(values, raw=True)), destinations, sources, count)


_POSITIONS = types.Array(types.int64, 1, "C")
SOURCE_RANKS = (1, 2, 3)
"""Ranks of the indexed operand listed for the PTX check: outputs are allocated contiguous, so they
coalesce to rank 1; any rank compiles alike."""
SUMMED_DTYPES = ("uint8", "int8", "int16", "int32", "int64", "float16", "float32", "float64")


def _operand_types(dtype: Any, rank: int) -> list:
    return [memory_type(dtype), types.int64, tuple_type(rank), tuple_type(rank)]


KERNELS = (
    [("gather", gather.py_func, (*_operand_types(raw, 1), *_operand_types(raw, rank), _POSITIONS, types.int64))
     for raw in RAW_TYPES.values() for rank in SOURCE_RANKS]
    + [("scatter_sum", scatter_sum.py_func, (*_operand_types(dtype, 1), *_operand_types(dtype, rank), _POSITIONS,
                                             _POSITIONS, _POSITIONS, types.int64))
       for dtype in SUMMED_DTYPES for rank in SOURCE_RANKS]
    + [("put", put.py_func, (*_operand_types(raw, 1), *_operand_types(raw, rank), _POSITIONS, _POSITIONS, types.int64))
       for raw in RAW_TYPES.values() for rank in SOURCE_RANKS]
    + [("put_number", put_number.py_func, (*_operand_types(raw, 1), _POSITIONS, types.int64, memory_type(raw).dtype))
       for raw in RAW_TYPES.values()])
"""Each kernel with the argument types it is compiled with: raw gathers and puts per element width,
sums per numeric dtype, for an output of rank 1 and an indexed operand of each listed rank."""

__all__ = ["KERNELS", "gathered", "getitem_gather", "index_put", "index_scatter", "put_plan", "scatter_plan"]
