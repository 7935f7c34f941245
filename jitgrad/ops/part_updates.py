"""A tensor with a part of it replaced, out of place: ``select_scatter``, ``slice_scatter``,
``diagonal_scatter`` (the part a view op picks), ``index_put`` (the elements an index picks, or with
``accumulate`` added to) and ``masked_scatter`` (the elements a mask picks, from a source in order).

The view scatters are ``copy_slices``, the op an in-place write through a view records (``inplace.py``),
given the flat positions of the view's elements, found by running the view on an array of positions;
the others are ``setitem`` of a copy, ``scatter_add`` and ``where``. So gradients (none to the replaced
elements), forward mode and lowerings come from those ops."""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from ..tensor import Tensor
from . import shape
from .arithmetic import where
from .combining import constant
from .comparisons import scalar_type
from .gathering import gather, scatter_add
from .host_reads import host_values
from .inplace import _copy_slices, apply_inplace
from .public import public
from .sorting import cumsum


def _replaced(input: Tensor, src: Tensor, view: Callable[[np.ndarray], np.ndarray]) -> Tensor:
    """``input`` with the elements ``view`` picks (a view function of an array) replaced by ``src``."""
    positions = view(np.arange(input.numel()).reshape(tuple(input.shape)))
    if tuple(src.shape) != positions.shape:
        raise RuntimeError(f"expected src to have a size equal to the slice of self. src size = {list(src.shape)}, "
                           f"slice size = {list(positions.shape)}")
    return _copy_slices(input, src, positions=positions)


@public("function", "method")
def select_scatter(input: Tensor, src: Tensor, dim: int, index: int) -> Tensor:
    """``input`` with ``input.select(dim, index)`` replaced by ``src``."""
    size = input.shape[dim]
    if not -size <= index < size:
        raise IndexError(f"select(): index {index} out of range for tensor of size {list(input.shape)} at "
                         f"dimension {dim % input.ndim}")
    return _replaced(input, src, lambda p: np.take(p, index, axis=dim))


@public("function", "method")
def slice_scatter(input: Tensor, src: Tensor, dim: int = 0, start: int | None = None, end: int | None = None,
                  step: int = 1) -> Tensor:
    """``input`` with the slice ``start:end:step`` along ``dim`` replaced by ``src``."""
    dim = dim % input.ndim
    return _replaced(input, src, lambda p: p[(slice(None),) * dim + (slice(start, end, step),)])


@public("function", "method")
def diagonal_scatter(input: Tensor, src: Tensor, offset: int = 0, dim1: int = 0, dim2: int = 1) -> Tensor:
    """``input`` with ``input.diagonal(offset, dim1, dim2)`` replaced by ``src`` (the diagonal last)."""
    return _replaced(input, src, lambda p: np.diagonal(p, offset, dim1, dim2))


@public("function", "method")
def index_put(input: Tensor, indices: Sequence[Tensor], values: Tensor, accumulate: bool = False) -> Tensor:
    """``input`` with ``values`` written at ``input[indices]``; with ``accumulate``, added there, every
    value of a repeated index counted (``scatter_add`` at the flat positions the index picks)."""
    if values._data.dtype != input._data.dtype:
        raise RuntimeError(f"Index put requires the source and destination dtypes match, got {scalar_type(input)} "
                           f"for the destination and {scalar_type(values)} for the source.")
    index = tuple(indices)
    if not accumulate:
        out = input.clone()
        out[index] = values
        return out
    positions = constant(np.arange(input.numel()).reshape(tuple(input.shape)), input)[index]
    added = shape.broadcast_to(values, tuple(positions.shape)).reshape(-1)
    return scatter_add(input.reshape(-1), 0, positions.reshape(-1), added).reshape(tuple(input.shape))


@public("function", "method")
def index_put_(self: Tensor, indices: Sequence[Tensor], values: Tensor, accumulate: bool = False) -> Tensor:
    return apply_inplace("index_put_", self, index_put, indices, values, accumulate)


@public("function", "method")
def masked_scatter(input: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    """``input`` with the elements where ``mask`` holds (broadcast) replaced by ``source``'s first
    elements, in row-major order."""
    if not isinstance(mask, Tensor) or mask._data.dtype != np.bool_:
        dtype = scalar_type(mask) if isinstance(mask, Tensor) else type(mask).__name__
        raise RuntimeError(f"masked_scatter_ only supports boolean masks, but got mask with dtype {dtype}")
    size = tuple(np.broadcast_shapes(tuple(input.shape), tuple(mask.shape)))
    chosen = shape.broadcast_to(mask, size).reshape(-1)
    if host_values(chosen).sum() > source.numel():   # checked on the values a trace sees when it is made
        raise RuntimeError("Number of elements of source < number of ones in mask")
    order = (cumsum(chosen, 0) - 1).clamp(0, max(source.numel() - 1, 0))
    picked = gather(source.reshape(-1), 0, order)
    return where(chosen, picked, shape.broadcast_to(input, size).reshape(-1)).reshape(size)


@public("method")
def masked_scatter_(self: Tensor, mask: Tensor, source: Tensor) -> Tensor:
    return apply_inplace("masked_scatter_", self, masked_scatter, mask, source)

