"""Copying between device arrays of any strides: what a reshape that cannot be a view does (its input a
transposed or sliced view), what a graph's output that is a view of another value needs (the caller
owns its outputs), and what an in-place op's write-back is (``x.add_(y)`` copies the result into
``x``'s memory, which may be a view).

numba's ``copy_to_device`` handles contiguous arrays only, so each rank has a small kernel: a thread
per element of the destination, the index unravelled over its shape, the source read at the same
index with its own strides; a source of size 1 in a dimension is read at 0 there (broadcasting: a
fill or a write-back of a smaller value), and assigning converts the dtype. The kernels are written
from one template per rank, compiled on first use.
"""
from __future__ import annotations

from functools import lru_cache
from typing import Any

import numba
from numba import cuda

from .arrays import is_simulated, reshaped_view
from .launch import blocks_for, threads

MAX_RANK = 8


def _source(rank: int) -> str:
    index = [f"i{k}" for k in range(rank)]
    lines = [f"def copy_rank{rank}(source, destination):",
             "    for flat in range(cuda.grid(1), destination.size, cuda.gridsize(1)):",
             "        rest = flat"]
    for k in reversed(range(1, rank)):
        lines += [f"        i{k} = rest % destination.shape[{k}]", f"        rest = rest // destination.shape[{k}]"]
    lines.append("        i0 = rest")
    read = ", ".join(f"{i} if source.shape[{k}] != 1 else 0" for k, i in enumerate(index))
    lines.append(f"        destination[{', '.join(index)}] = source[{read}]")
    return "\n".join(lines) + "\n"


@lru_cache(maxsize=None)
def copy_kernel(rank: int) -> Any:
    """The ``@cuda.jit`` copy of a rank (its pyfunc is ``.py_func``)."""
    if not 1 <= rank <= MAX_RANK:
        raise NotImplementedError(f"a strided copy of rank {rank} (at most {MAX_RANK})")
    namespace: dict[str, Any] = {"cuda": cuda}
    exec(compile(_source(rank), f"<jitgrad strided copy rank {rank}>", "exec"), namespace)
    return cuda.jit(namespace[f"copy_rank{rank}"])


def _with_rank(array: Any, rank: int) -> Any:
    """``array`` with leading size-1 dimensions up to ``rank`` (a view: stride 0 there)."""
    missing = rank - len(array.shape)
    if missing <= 0:
        return array
    if is_simulated(array):
        return type(array)(array._ary.reshape((1,) * missing + array._ary.shape), stream=array.stream)
    from numba.cuda.cudadrv.devicearray import DeviceNDArray

    return DeviceNDArray((1,) * missing + tuple(array.shape), (0,) * missing + tuple(array.strides), array.dtype,
                         stream=array.stream, gpu_data=array.gpu_data)


def copy_into(source: Any, destination: Any, stream: Any) -> None:
    """``destination[...] = source`` (broadcast, converted), on ``stream``."""
    if destination.size == 0:
        return
    rank = max(len(destination.shape), 1)
    target = destination if len(destination.shape) else destination.reshape(1)
    source = _with_rank(source if len(source.shape) else source.reshape(1), rank)
    copy_kernel(rank)[blocks_for(target.size), threads(), stream](source, target)


def reshaped(array: Any, shape: tuple[int, ...], stream: Any) -> Any:
    """``array`` as ``shape``: a view when it is contiguous, else a contiguous copy (as ``reshape``)."""
    view = reshaped_view(array, shape)
    if view is not None:
        return view
    copy = cuda.device_array(array.shape, array.dtype, stream=stream)
    copy_into(array, copy, stream)
    return copy.reshape(shape)


KERNELS = [(f"copy_rank{rank}", copy_kernel(rank).py_func,
            (numba.types.Array(numba.float32, rank, "A"), numba.types.Array(numba.float32, rank, "A")))
           for rank in range(1, 5)]

__all__ = ["KERNELS", "copy_into", "copy_kernel", "reshaped"]
