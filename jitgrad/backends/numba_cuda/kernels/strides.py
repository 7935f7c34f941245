"""Device arrays of any layout as the hand-written kernels read them: the memory an array spans, seen as a
1-d run of elements from its first one, and each dimension's step in elements.

A kernel then reaches an element by adding steps, whatever the layout (a transpose, a slice, a
broadcast view with step 0): no copy to make an operand contiguous, and one compiled kernel per dtype
instead of one per combination of layouts and ranks.
"""
from __future__ import annotations

from typing import Any, Sequence

import numba
import numpy as np


def steps(x: Any) -> tuple[int, ...]:
    """Each dimension's stride in elements (``x.strides`` counts bytes)."""
    return tuple(s // x.dtype.itemsize for s in x.strides)


def span(x: Any) -> Any:
    """A 1-d device array over the memory ``x`` reads, from its first element, sharing that memory.
    Kernels index it with ``steps(x)``; a negative step (no jitgrad view makes one) is refused rather
    than read out of bounds."""
    if any(s < 0 for s in x.strides):
        raise NotImplementedError(f"CUDA kernels: an array with negative strides {x.strides} reached a "
                                  f"hand-written kernel; make it contiguous first")
    extent = 1 + sum((n - 1) * s for n, s in zip(x.shape, steps(x))) if x.size else 0
    itemsize = x.dtype.itemsize
    if numba.config.ENABLE_CUDASIM:  # a FakeCUDAArray wraps a numpy array, its only handle on the memory
        from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray
        ary = np.lib.stride_tricks.as_strided(x._ary, (extent,), (itemsize,))
        return FakeCUDAArray(ary, stream=x.stream)
    from numba.cuda.cudadrv.devicearray import DeviceNDArray
    return DeviceNDArray((extent,), (itemsize,), x.dtype, stream=x.stream, gpu_data=x.gpu_data)


def at_least_one(values: Sequence[int], fill: int) -> tuple[int, ...]:
    """``values`` as a tuple, ``(fill,)`` when empty: a kernel argument is a tuple of at least one
    element (an empty one has no numba type a kernel can take)."""
    return tuple(int(v) for v in values) or (fill,)
