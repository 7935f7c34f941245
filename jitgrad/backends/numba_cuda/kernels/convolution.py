"""``im2col``, ``col2im`` and ``convolution`` on the GPU, from the kernels that exist and one more.

The window positions of one image (``ops.convolution.window_positions``) are known when lowering, so
both layouts are a scatter by positions inverted on the host (``plans``): ``im2col`` gives every
column element its one source (none on the padding: it stays zero), ``col2im`` every image element
the column elements that land on it, in order: ``indexing.index_scatter``'s deterministic sums, no
atomics. A convolution is then the columns (a scratch array), one tiled batched product per image and
group (``linalg.batched_gemm``), and the bias added per channel (``add_channel_bias``, here).
"""
from __future__ import annotations

from typing import Any

import numpy as np
from numba import cuda, types

from ..launch import THREADS, blocks_for, launch
from .copy import reshaped
from .indexing import index_scatter, scatter_plan
from .linalg import batched_gemm
from .strided import memory_type, span, steps


def _batched(positions: np.ndarray, batch: int, image_size: int) -> np.ndarray:
    """One image's window positions repeated for each image of the batch, as flat positions in the
    batch (-1 kept on the padding)."""
    offsets = (np.arange(batch, dtype=np.int64) * image_size)[:, None]
    flat = positions.reshape(1, -1)
    return np.where(flat >= 0, flat + offsets, -1).reshape(-1)


def im2col_plan(positions: np.ndarray, batch: int, image_size: int) -> tuple[np.ndarray, ...]:
    """``index_scatter``'s (destinations, bounds, sources) filling the columns: each column element
    inside the image takes its one image element."""
    flat = _batched(positions, batch, image_size)
    inside = np.flatnonzero(flat >= 0)
    return inside.astype(np.int64), np.arange(inside.size + 1, dtype=np.int64), flat[inside]


def col2im_plan(positions: np.ndarray, batch: int, image_size: int) -> tuple[np.ndarray, ...]:
    """``index_scatter``'s plan summing the columns into the image: each image element gains the
    column elements that name it, in the columns' order."""
    flat = _batched(positions, batch, image_size)
    inside = np.flatnonzero(flat >= 0)
    destinations, bounds, sources = scatter_plan(flat[inside])
    return destinations, bounds, inside[sources].astype(np.int64)


@cuda.jit
def add_channel_bias(out, bias, bias_step, channels, inner, size):
    """``out`` (C order, channels second) += ``bias`` of each element's channel."""
    for i in range(cuda.grid(1), size, cuda.gridsize(1)):
        out[i] += bias[((i // inner) % channels) * bias_step]


def convolution(input: Any, weight: Any, bias: Any | None, destinations: Any, bounds: Any, sources: Any,
                groups: int, out: Any, stream: Any = 0) -> None:
    """``out`` (N, O, *spatial) = the convolution of ``input`` with ``weight`` (O, C / groups, *kernel),
    plus ``bias``, the columns laid out by ``im2col_plan``'s arrays."""
    n, o = out.shape[:2]
    length = int(np.prod(out.shape[2:]))
    per_group = int(np.prod(weight.shape[1:]))
    columns = cuda.device_array((n, groups, per_group, length), out.dtype, stream=stream)
    index_scatter(input, destinations, bounds, sources, columns, stream)
    planes = out.reshape((n, groups, o // groups, length))
    batched_gemm(reshaped(weight, (groups, o // groups, per_group), stream), columns, planes, stream)
    if bias is not None and out.size:
        launch(add_channel_bias, blocks_for(out.size), THREADS, stream, out.reshape(out.size), span(bias),
               steps(bias)[0], o, length, out.size)


# (name, python function, argument types) of every kernel here, for ``numba.cuda.compile_ptx``.
KERNELS = [("add_channel_bias", add_channel_bias.py_func,
            (memory_type(dtype), memory_type(dtype), types.int64, types.int64, types.int64, types.int64))
           for dtype in ("float32", "float64")]
