"""Reductions that skip NaN (``nansum``, ``nanmean``), both extremes at once (``aminmax``), running
extremes (``cummax``, ``cummin``) and ``logcumsumexp``, order statistics (``kthvalue``), and the
questions about sorted values (``unique``, ``bucketize``, ``searchsorted``).

The differentiable ones are composites (their gradients come from ``where``, ``sum``, ``amax``,
``sort`` and ``gather``). ``cummax``/``cummin`` find their indices on the host and gather the values
with them, so the gradient goes to the element each running extreme came from, as PyTorch's; they,
and the integer answers of ``unique``, ``bucketize`` and ``searchsorted``, refuse inside a compiled
function, whose graph would keep the values read when it was traced."""
from __future__ import annotations

from collections import namedtuple
from typing import Sequence

import numpy as np

from ..shapes import wrap_dim
from ..tensor import Tensor
from . import arithmetic, reductions, shape, sorting
from .arithmetic import where
from .comparisons import scalar_type
from .compound_math import logaddexp
from .device_copy import to
from .gathering import gather
from .host_reads import from_host, host_values, refuse_when_traced
from .public import public

MinMax = namedtuple("aminmax", ["min", "max"])   # torch.return_types.aminmax's fields


def _floating_only(op: str, input: Tensor) -> None:
    if input._data.dtype.kind != "f":
        raise RuntimeError(f"{op}(): expected input to have floating point or complex dtype but got "
                           f"{scalar_type(input)}")


@public("function", "method")
def nansum(input: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """``sum`` with NaN taken as 0 (and a zero gradient there)."""
    kept = where(arithmetic.isnan(input), 0, input) if input._data.dtype.kind == "f" else input
    return reductions.sum(kept, dim, keepdim, dtype=dtype)


@public("function", "method")
def nanmean(input: Tensor, dim: int | Sequence[int] | None = None, keepdim: bool = False, *, dtype=None) -> Tensor:
    """The mean of the elements that are not NaN (NaN where all are)."""
    _floating_only("nanmean", input)
    if dtype is not None:
        input = input.to(dtype)
    count = reductions.sum(arithmetic.logical_not(arithmetic.isnan(input)), dim, keepdim)
    return nansum(input, dim, keepdim) / count


@public("function", "method")
def aminmax(input: Tensor, *, dim: int | None = None, keepdim: bool = False) -> MinMax:
    """``(amin, amax)`` over ``dim`` (every element without it), the named tuple ``(min, max)``. Of an
    empty tensor over a dimension that is not empty: empty results, as PyTorch (until 2026-11-28 refused
    as if the dimension were empty)."""
    if dim is not None and input._data.size == 0 and input._data.ndim:
        d = wrap_dim(dim, input._data.ndim, "aminmax")
        if input._data.shape[d] == 0:
            raise IndexError(f"aminmax: Expected reduction dim {d} to have non-zero size.")
    elif input._data.size == 0:
        raise RuntimeError("aminmax(): cannot compute aminmax over an empty dimension as the operation has no "
                           "identity.")
    if dim is None:
        return MinMax(reductions.amin(input, tuple(range(input._data.ndim)), keepdim),
                      reductions.amax(input, tuple(range(input._data.ndim)), keepdim))
    return MinMax(reductions.amin(input, dim, keepdim), reductions.amax(input, dim, keepdim))


def _running_extreme(name: str, input: Tensor, dim: int, accumulate: np.ufunc) -> reductions.ValuesAndIndices:
    """The running maximum (``np.maximum``) or minimum along ``dim`` and, for each position, the index of
    the element it came from: the latest of equal values, and of a NaN (which then stays), as PyTorch."""
    refuse_when_traced(name)
    if input._data.ndim == 0:
        return reductions.ValuesAndIndices(input.clone(), from_host(np.zeros((), np.int64)))
    dim = wrap_dim(dim, input._data.ndim, name)
    values = host_values(input)
    running = accumulate.accumulate(values, axis=dim)
    hit = (values == running) | (values != values)
    positions = np.arange(values.shape[dim]).reshape((-1,) + (1,) * (values.ndim - dim - 1))
    indices = np.maximum.accumulate(np.where(hit, positions, 0), axis=dim).astype(np.int64)
    index = to(from_host(indices), input.device)
    return reductions.ValuesAndIndices(gather(input, dim, index), index)


@public("function", "method")
def cummax(input: Tensor, dim: int) -> reductions.ValuesAndIndices:
    """The running maximum along ``dim`` and the index of each's element, ``(values, indices)``."""
    return _running_extreme("cummax", input, dim, np.maximum)


@public("function", "method")
def cummin(input: Tensor, dim: int) -> reductions.ValuesAndIndices:
    """The running minimum along ``dim`` and the index of each's element, ``(values, indices)``."""
    return _running_extreme("cummin", input, dim, np.minimum)


@public("function", "method")
def logcumsumexp(input: Tensor, dim: int) -> Tensor:
    """``log(cumsum(exp(input)))`` along ``dim``, as a running ``logaddexp``: exact where the values span
    more than the float's exponent range (one max shift would underflow the small ones to -inf). Two
    ops per element of ``dim``, so slow over thousands, like ``cumprod``."""
    _floating_only("logcumsumexp", input)
    if input._data.ndim == 0:
        return input.clone()
    dim = wrap_dim(dim, input._data.ndim, "logcumsumexp")
    length = input.shape[dim]
    if length == 0:
        return input.clone()
    running = [input.narrow(dim, 0, 1)]
    for i in range(1, length):
        running.append(logaddexp(running[-1], input.narrow(dim, i, 1)))
    return shape.cat(running, dim)


@public("function", "method")
def kthvalue(input: Tensor, k: int, dim: int = -1, keepdim: bool = False) -> reductions.ValuesAndIndices:
    """The ``k``-th smallest element along ``dim`` and its index, ``(values, indices)`` (sorting is
    stable, so of equal values the first; NaN is the largest); the gradient goes to that element."""
    ndim = input._data.ndim
    dim = wrap_dim(dim, ndim, "kthvalue") if ndim else 0
    length = input.shape[dim] if ndim else 1
    if not 1 <= k <= length:
        raise RuntimeError(f"kthvalue(): selected number k out of range for dimension {dim}")
    if ndim == 0:
        return reductions.ValuesAndIndices(input.clone(), from_host(np.zeros((), np.int64)))
    ordered, order = sorting.sort(input, dim)
    values, indices = ordered.narrow(dim, k - 1, 1), order.narrow(dim, k - 1, 1)
    if not keepdim:
        values, indices = values.squeeze(dim), indices.squeeze(dim)
    return reductions.ValuesAndIndices(values, indices)


@public("function", "method")
def unique(input: Tensor, sorted: bool = True, return_inverse: bool = False,  # noqa: A002 - PyTorch's name
           return_counts: bool = False, dim: int | None = None) -> Tensor | tuple[Tensor, ...]:
    """The distinct elements (sorted; along ``dim``, the distinct slices), with, on request, where each
    element went (``return_inverse``) and how often each occurs (``return_counts``). No gradient: the
    result is new values read from the input."""
    refuse_when_traced("unique")
    values = host_values(input)
    axis = None if dim is None else wrap_dim(dim, values.ndim, "unique")
    found, inverse, counts = np.unique(values, return_inverse=True, return_counts=True, axis=axis)
    if axis is None:
        inverse = inverse.reshape(values.shape)
    device = input.device
    out = [to(from_host(found), device)]
    if return_inverse:
        out.append(to(from_host(inverse.astype(np.int64)), device))
    if return_counts:
        out.append(to(from_host(counts.astype(np.int64)), device))
    return out[0] if len(out) == 1 else tuple(out)


def _positions(op: str, sorted_sequence: np.ndarray, values: np.ndarray, right: bool, out_int32: bool) -> np.ndarray:
    side = "right" if right else "left"
    if sorted_sequence.ndim <= 1:
        found = np.searchsorted(sorted_sequence.reshape(-1), values, side=side)
    else:
        if sorted_sequence.shape[:-1] != values.shape[:-1]:
            raise RuntimeError(f"{op}(): boundaries tensor should be 1 dimension or the first N-1 dimensions of "
                               f"boundaries tensor and input value tensor must match, but we got boundaries tensor "
                               f"{list(sorted_sequence.shape)} and input value tensor {list(values.shape)}")
        rows = sorted_sequence.reshape(-1, sorted_sequence.shape[-1])
        wanted = values.reshape(-1, values.shape[-1])
        found = np.stack([np.searchsorted(r, w, side=side) for r, w in zip(rows, wanted)]).reshape(values.shape)
    return np.asarray(found, np.int32 if out_int32 else np.int64)


@public("function")
def searchsorted(sorted_sequence: Tensor, input: Tensor | float, *, out_int32: bool = False, right: bool = False,
                 side: str | None = None, sorter: Tensor | None = None) -> Tensor:
    """Where each value would be inserted into ``sorted_sequence`` (along its last dimension, row by row
    for a batch of sequences) to keep it sorted: before equal elements, or after them with
    ``right=True`` or ``side="right"``."""
    refuse_when_traced("searchsorted")
    if side is not None:
        if side not in ("left", "right"):
            raise RuntimeError(f"torch.searchsorted(): side can only be 'left' or 'right' but got {side}")
        if right and side == "left":
            raise RuntimeError("torch.searchsorted(): side and right can't be set to opposites, got side of left "
                               "while right was True")
        right = side == "right"
    sequence = host_values(sorted_sequence)
    if sorter is not None:
        sequence = np.take_along_axis(sequence, host_values(sorter), axis=-1)
    values = host_values(input) if isinstance(input, Tensor) else np.asarray(input)
    found = _positions("searchsorted", sequence, values, right, out_int32)
    return to(from_host(found), sorted_sequence.device)


@public("function")
def bucketize(input: Tensor | float, boundaries: Tensor, *, out_int32: bool = False, right: bool = False) -> Tensor:
    """The index of the bucket of each value: ``boundaries[i-1] < x <= boundaries[i]`` (``<=`` and ``<``
    with ``right=True``), for a 1-d ``boundaries``."""
    refuse_when_traced("bucketize")
    if boundaries._data.ndim != 1:
        raise RuntimeError(f"boundaries tensor must be 1 dimension, but got dim({boundaries._data.ndim})")
    values = host_values(input) if isinstance(input, Tensor) else np.asarray(input)
    found = _positions("bucketize", host_values(boundaries), values, right, out_int32)
    return to(from_host(found), boundaries.device)
