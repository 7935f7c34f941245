"""Views of device arrays: what a view op (reshape, permute, getitem...) makes of its input, sharing its
memory, on a GPU (``DeviceNDArray``) and under the simulator (``FakeCUDAArray``, a wrapped numpy array).

numba's ``DeviceNDArray`` slices (basic indexing) and reshapes contiguous arrays itself, but cannot
transpose beyond 2-d (and even then copies); a permutation of dimensions is only new strides over the
same memory, so ``permuted`` builds that array. Generated host code calls these functions, never
numba's classes, so one source runs on both.
"""
from __future__ import annotations

from typing import Any, Sequence

import numpy as np


def is_simulated(array: Any) -> bool:
    """Whether ``array`` is the simulator's ``FakeCUDAArray`` (a numpy array inside)."""
    return hasattr(array, "_ary")


def permuted(array: Any, order: Sequence[int]) -> Any:
    """``array`` with its dimensions in ``order``: the same memory, the strides permuted."""
    order = tuple(order)
    if order == tuple(range(len(order))):
        return array
    if is_simulated(array):
        return type(array)(np.transpose(array._ary, order), stream=array.stream)
    from numba.cuda.cudadrv.devicearray import DeviceNDArray

    return DeviceNDArray(tuple(array.shape[k] for k in order), tuple(array.strides[k] for k in order),
                         array.dtype, stream=array.stream, gpu_data=array.gpu_data)


def is_contiguous(array: Any) -> bool:
    return bool(array.is_c_contiguous())


def reshaped_view(array: Any, shape: tuple[int, ...]) -> Any | None:
    """``array`` as ``shape`` sharing its memory, or None when that needs a copy (a reshape of a
    non-contiguous view that merges strided dimensions). A view only when the input is C-contiguous:
    numpy would view some strided reshapes too, but ``DeviceNDArray`` refuses them, and the two must
    agree on whether the result shares memory."""
    if not is_contiguous(array):
        return None
    return array.reshape(shape)




def with_shape(array: Any, shape: tuple[int, ...]) -> Any:
    """``array`` viewed as ``shape``, which differs from its shape only by dimensions of size 1 (an
    integer index removes one, ``None`` adds one): any strides allow that view, where
    ``DeviceNDArray.reshape`` wants a contiguous array."""
    shape = tuple(int(s) for s in shape)
    if tuple(array.shape) == shape:
        return array
    if is_simulated(array):
        return type(array)(array._ary.reshape(shape), stream=array.stream)
    kept = iter([(n, st) for n, st in zip(array.shape, array.strides) if n != 1])
    strides = tuple(next(kept)[1] if n != 1 else 0 for n in shape)
    from numba.cuda.cudadrv.devicearray import DeviceNDArray

    return DeviceNDArray(shape, strides, array.dtype, stream=array.stream, gpu_data=array.gpu_data)


__all__ = ["is_contiguous", "is_simulated", "permuted", "reshaped_view", "with_shape"]
