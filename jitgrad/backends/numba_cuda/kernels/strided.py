"""Device arrays as flat memory plus a start, a shape and element strides; views by a basic index.

numba's device arrays cannot be reshaped or transposed as views unless they are contiguous, and a
kernel compiled for an N-d array of layout ``A`` is compiled again for every rank. The data kernels
therefore see every operand as a ``Layout``: the 1-D memory from the lowest address the array reaches
to the highest, the offset of its element 0 in it, its shape and its strides in elements (negative for
a reversed view, 0 for a broadcast dimension). Narrowing, selecting and broadcasting a layout is
arithmetic on tuples done on the host, and a kernel reaches element ``(i0, i1, ...)`` at ``start +
i0 * s0 + i1 * s1 + ...``, so one kernel serves every layout of a given rank. The host merges the
dimensions that every operand walks alike (``coalesced``) first: a contiguous copy of any rank is a
rank-1 loop. The maths kernels (linalg, rows, losses) take the simpler form of the same idea: ``span``,
the memory from element 0, indexed with ``steps``.

A copy moves bits: seen ``raw``, memory is the unsigned integer of the element's width, so that one
kernel per width moves every dtype (float16 and bool included) with no conversion.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Sequence

import numpy as np
from numba import types
from numba.np.numpy_support import from_dtype

from ..simulator import is_simulator

RAW_TYPES = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
"""The unsigned integer type of each element width: what a raw (bit-moving) layout's memory holds."""

KERNELS: list = []
"""None: this module describes and views arrays; statements that call ``indexed_view`` list it among their
library modules all the same, and the PTX check reads every such module's ``KERNELS``."""


@dataclass(frozen=True)
class Layout:
    """Where the elements of an array lie: ``memory[start + sum(index[d] * strides[d])]``."""

    memory: Any
    start: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def narrow(self, dim: int, offset: int, length: int) -> Layout:
        """Elements ``offset`` to ``offset + length`` along ``dim`` (a slab of a concatenation)."""
        shape = self.shape[:dim] + (length,) + self.shape[dim + 1:]
        return replace(self, start=self.start + offset * self.strides[dim], shape=shape)

    def select(self, dim: int, index: int) -> Layout:
        """Element ``index`` along ``dim``, that dimension dropped (a slice of a stack)."""
        return Layout(self.memory, self.start + index * self.strides[dim], self.shape[:dim] + self.shape[dim + 1:],
                      self.strides[:dim] + self.strides[dim + 1:])

    def broadcast_to(self, shape: Sequence[int]) -> Layout:
        """numpy's broadcasting: leading dimensions added and size-1 dimensions stretched, stride 0."""
        shape = tuple(shape)
        extra = len(shape) - len(self.shape)
        if extra < 0 or any(n not in (1, m) for n, m in zip(self.shape, shape[extra:])):
            raise ValueError(f"cannot broadcast an array of shape {list(self.shape)} to {list(shape)}")
        strides = (0,) * extra + tuple(s if n == m else 0 for n, m, s in zip(self.shape, shape[extra:], self.strides))
        return Layout(self.memory, self.start, shape, strides)


def _flat_memory(array: Any, lowest: int, extent: int, dtype: np.dtype) -> Any:
    """A 1-D device array of ``extent`` elements of ``dtype`` from element offset ``lowest`` (<= 0)
    relative to ``array``'s element 0, sharing its memory (and its stream)."""
    itemsize = array.dtype.itemsize
    if is_simulator():  # a FakeCUDAArray wraps numpy's: flipping reversed dims reaches the lowest address
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray
        flips = tuple(slice(None, None, -1) if s < 0 else slice(None) for s in array.strides)
        host = array._ary[flips + (Ellipsis,)]  # with ..., a 0-d array gives a view of itself, not a scalar
        flat = np.lib.stride_tricks.as_strided(host, (extent,), (itemsize,))
        return FakeCUDAArray(flat.view(dtype), stream=array.stream)
    from numba.cuda.cudadrv.devicearray import DeviceNDArray
    memory = array.gpu_data.view(lowest * itemsize, (lowest + extent) * itemsize)
    return DeviceNDArray((extent,), (itemsize,), dtype, stream=array.stream, gpu_data=memory)


def steps(array: Any) -> tuple[int, ...]:
    """Each dimension's stride in elements (``array.strides`` counts bytes)."""
    return tuple(int(s) // array.dtype.itemsize for s in array.strides)


def span(array: Any) -> Any:
    """The memory ``array`` reads as a 1-d device array from its element 0, which the maths kernels
    (linalg, rows, losses) index with ``steps(array)``: a ``Layout`` whose start is always 0. A negative
    step (no jitgrad view makes one) is refused rather than read out of bounds."""
    if any(s < 0 for s in array.strides):
        raise NotImplementedError(f"CUDA kernels: an array with negative strides {array.strides} reached a "
                                  f"hand-written kernel; make it contiguous first")
    extent = 1 + sum((n - 1) * s for n, s in zip(array.shape, steps(array))) if array.size else 0
    return _flat_memory(array, 0, extent, array.dtype)


def at_least_one(values: Sequence[int], fill: int) -> tuple[int, ...]:
    """``values`` as a tuple, ``(fill,)`` when empty: a kernel argument is a tuple of at least one
    element (an empty one has no numba type a kernel can take)."""
    return tuple(int(v) for v in values) or (fill,)


def layout_of(array: Any, *, raw: bool = False) -> Layout:
    """The layout of a device array (its memory seen as unsigned integers of its width when ``raw``).
    An empty array has no memory: kernels are not launched for it."""
    itemsize = array.dtype.itemsize
    if any(s % itemsize for s in array.strides):
        raise ValueError(f"an array with strides {array.strides} not a multiple of its {itemsize}-byte elements "
                         f"cannot be used by a CUDA kernel; copy it first")
    shape = tuple(int(n) for n in array.shape)
    strides = steps(array)
    if math.prod(shape) == 0:
        return Layout(None, 0, shape, strides)
    lowest = sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
    highest = sum(max(0, (n - 1) * s) for n, s in zip(shape, strides))
    dtype = np.dtype(RAW_TYPES[itemsize]) if raw else array.dtype
    return Layout(_flat_memory(array, lowest, highest - lowest + 1, dtype), -lowest, shape, strides)


def indexed_view(array: Any, index: tuple) -> Any:
    """``array[index]`` for a basic index (integers, slices, None, ``...``), sharing ``array``'s memory,
    with at least one dimension (a 0-d result is a 1-element array, as every value in generated code).

    numpy itself works out the view's shape, strides and offset, on a stand-in of ``array``'s shape and
    strides over one element (its memory is never read), so every rule of basic indexing (negative
    steps, clamped bounds, ``None``) is numpy's; the device array is then built over that geometry."""
    whole = index if Ellipsis in index else index + (Ellipsis,)  # numpy then gives a 0-d view, not a scalar
    if is_simulator():
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray
        view = array._ary[whole]
        return FakeCUDAArray(view.reshape(1) if view.ndim == 0 else view, stream=array.stream)
    stand_in = np.lib.stride_tricks.as_strided(np.zeros(1, np.uint8), tuple(array.shape), tuple(array.strides))
    view = stand_in[whole]
    offset = view.__array_interface__["data"][0] - stand_in.__array_interface__["data"][0]
    shape, strides = (view.shape, view.strides) if view.ndim else ((1,), (array.dtype.itemsize,))
    from numba.cuda.cudadrv.devicearray import DeviceNDArray
    return DeviceNDArray(shape, strides, array.dtype, stream=array.stream, gpu_data=array.gpu_data.view(offset))


def coalesced(shape: Sequence[int], *strides: Sequence[int]) -> tuple[tuple[int, ...], list[tuple[int, ...]]]:
    """The fewest dimensions that walk the same elements as ``shape`` does for every operand's
    ``strides``: size-1 dimensions dropped, and a dimension merged into the one before it when every
    operand steps over it exactly once per step of the outer one. At least one dimension."""
    kept = [(n, [s[d] for s in strides]) for d, n in enumerate(shape) if n != 1]
    merged: list[tuple[int, list[int]]] = []
    for n, steps in kept:
        if merged and all(outer == inner * n for outer, inner in zip(merged[-1][1], steps)):
            merged[-1] = (merged[-1][0] * n, steps)
        else:
            merged.append((n, steps))
    if not merged:
        return (1,), [(0,) for _ in strides]
    return tuple(n for n, _ in merged), [tuple(steps[k] for _, steps in merged) for k in range(len(strides))]


def memory_type(dtype: Any) -> types.Array:
    """The numba type of a layout's memory of ``dtype``, as kernels receive it."""
    return types.Array(from_dtype(np.dtype(dtype)), 1, "C")


def tuple_type(rank: int) -> types.UniTuple:
    """The numba type of a shape or strides tuple of ``rank`` dimensions."""
    return types.UniTuple(types.int64, rank)


__all__ = ["KERNELS", "Layout", "RAW_TYPES", "at_least_one", "coalesced", "indexed_view", "layout_of",
           "memory_type", "span", "steps", "tuple_type"]
