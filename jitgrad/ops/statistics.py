"""Statistics PyTorch names: ``cov``, ``corrcoef``, ``quantile``, ``nanquantile``, ``nanmedian``,
``mode``. Composites of ``sort``, ``gather``, ``lerp``, matrix products and reductions, so their
gradients (to the elements a quantile or median is read from), forward mode and lowerings come from
their parts; ``mode`` counts on the host (a compiled function calling it runs eagerly) and ``gather``s
its values, so its gradient goes to the element it names, as PyTorch's."""
from __future__ import annotations

import warnings

import numpy as np

from .. import dtypes
from ..shapes import wrap_dim
from ..tensor import Tensor
from . import arithmetic, shape
from .arithmetic import where
from .combining import constant
from .device_copy import to
from .gathering import gather
from .host_reads import from_host, host_values, refuse_when_traced
from .linalg import matmul
from .math_functions import lerp
from .public import public
from .reductions import ValuesAndIndices
from .sorting import evenly_shared, sort


# ---- covariance and correlation -------------------------------------------------------------------------
@public("function", "method")
def cov(input: Tensor, *, correction: int = 1, fweights: Tensor | None = None,
        aweights: Tensor | None = None) -> Tensor:
    """The covariance matrix of the variables in ``input``'s rows (observations in its columns; a
    vector is one variable), with frequency and/or observation weights and ``correction`` as PyTorch
    (the normaliser, ``sum(w) - correction * sum(w * aweights) / sum(w)``, clamped at 0 with its
    warning)."""
    if input.ndim > 2:
        raise RuntimeError(f"cov(): expected input to have two or fewer dimensions but got an input with "
                           f"{input.ndim} dimensions")
    x = input.reshape(1, -1) if input.ndim < 2 else input
    if x._data.dtype.kind != "f":
        x = arithmetic.to_dtype(x, dtypes.get_default_dtype())
    weights = fweights
    if aweights is not None:
        weights = aweights if weights is None else weights * aweights
    if weights is None:
        total = x.shape[1]
        average = x.mean(1, keepdim=True)
        normaliser = total - correction
    else:
        total = weights.sum()
        average = (x * weights).sum(1, keepdim=True) / total
        normaliser = total - (correction if aweights is None else correction * (weights * aweights).sum() / total)
    if not isinstance(normaliser, Tensor) and normaliser <= 0:
        warnings.warn("cov(): degrees of freedom is <= 0. Correction should be strictly less than the number of "
                      "observations.", stacklevel=2)
        normaliser = 0
    elif isinstance(normaliser, Tensor):
        normaliser = normaliser.clamp(min=0)
    centred = x - average
    product = matmul(centred if weights is None else centred * weights, centred.t())
    return (product / normaliser).squeeze()


@public("function", "method")
def corrcoef(input: Tensor) -> Tensor:
    """Pearson's correlation coefficients of the variables in ``input``'s rows, clipped to [-1, 1]."""
    c = cov(input)
    if c.ndim == 0:
        return c / c
    deviation = c.diagonal().sqrt()
    return (c / deviation.reshape(-1, 1) / deviation.reshape(1, -1)).clamp(-1.0, 1.0)


# ---- quantiles and medians ------------------------------------------------------------------------------
_INTERPOLATIONS = ("linear", "lower", "higher", "midpoint", "nearest")


def _quantile(name: str, input: Tensor, q: float | Tensor, dim: int | None, keepdim: bool, interpolation: str,
              ignore_nan: bool) -> Tensor:
    """``quantile``/``nanquantile``: the sorted values along ``dim`` (NaN last), read at rank
    ``q * (count - 1)`` and interpolated between the two neighbours as ``interpolation`` says; a
    slice holding a NaN (``quantile``) or only NaNs (``nanquantile``) gives NaN."""
    if input._data.dtype.kind != "f":
        raise RuntimeError(f"{name}() input tensor must be either float or double dtype")
    if interpolation not in _INTERPOLATIONS:
        raise RuntimeError(f"{name}() interpolation must be one of linear, lower, higher, midpoint or nearest, "
                           f"but got {interpolation}")
    scalar = not isinstance(q, Tensor)
    levels = np.atleast_1d(np.asarray(q if scalar else host_values(q), input._data.dtype))
    if not scalar and q.ndim > 1:
        raise RuntimeError(f"{name}() q must be a scalar or 1D tensor")
    outside = levels[(levels < 0) | (levels > 1)]
    if outside.size:
        raise RuntimeError(f"{name}() q must be in the range [0, 1] but got {outside[0]:g}")
    flat = dim is None
    values = input.reshape(-1) if flat or input.ndim == 0 else input
    axis = 0 if flat else wrap_dim(dim, max(input.ndim, 1), name)
    values = shape.movedim(values, axis, -1)
    ordered = sort(values, -1).values
    size = values.shape[-1]
    missing = arithmetic.isnan(values)
    count = (size - missing.sum(-1, keepdim=True)) if ignore_nan else size
    ranks = constant(levels, input) * (count - 1)
    ranks = {"lower": ranks.floor(), "higher": ranks.ceil(), "nearest": ranks.round()}.get(interpolation, ranks)
    ranks = shape.expand(ranks, values.shape[:-1] + (len(levels),))
    below = arithmetic.to_dtype(ranks.floor(), np.int64).clamp(0, max(size - 1, 0))
    above = arithmetic.to_dtype(ranks.ceil(), np.int64).clamp(0, max(size - 1, 0))
    low = gather(ordered, -1, below)
    if interpolation in ("lower", "higher", "nearest"):
        result = low
    else:
        weight = 0.5 if interpolation == "midpoint" else ranks - below
        result = lerp(low, gather(ordered, -1, above), weight)
    # NaN: read from the sorted NaN PyTorch reads it from (the first, or the last), which gets the gradient
    if ignore_nan:
        result = where(count == 0, ordered[..., :1], result)
    else:
        result = where(missing.any(-1, keepdim=True), ordered[..., -1:], result)
    result = shape.movedim(result, -1, 0)
    if keepdim:
        kept = (1,) * input.ndim if flat else tuple(1 if d == axis else n for d, n in enumerate(input.shape))
        result = result.reshape((len(levels),) + kept)
    return result[0] if scalar else result


@public("function", "method")
def quantile(input: Tensor, q: float | Tensor, dim: int | None = None, keepdim: bool = False, *,
             interpolation: str = "linear") -> Tensor:
    """The ``q``-th quantiles of ``input`` (along ``dim``; a tensor ``q`` adds a first dimension); NaN
    where a slice holds a NaN."""
    return _quantile("quantile", input, q, dim, keepdim, interpolation, ignore_nan=False)


@public("function", "method")
def nanquantile(input: Tensor, q: float | Tensor, dim: int | None = None, keepdim: bool = False, *,
                interpolation: str = "linear") -> Tensor:
    """``quantile`` of the elements that are not NaN (NaN where a slice has none)."""
    return _quantile("nanquantile", input, q, dim, keepdim, interpolation, ignore_nan=True)


@public("function", "method")
def nanmedian(input: Tensor, dim: int | None = None, keepdim: bool = False) -> Tensor | ValuesAndIndices:
    """The lower median of the elements that are not NaN (NaN where there are none); along ``dim``,
    ``(values, indices)``, as ``median``. Of all elements, the gradient is shared by the elements equal
    to the median, as PyTorch's."""
    if dim is None:
        flat = input.reshape(-1)
        return evenly_shared(flat, nanmedian(flat, 0).values)
    axis = wrap_dim(dim, max(input.ndim, 1), "nanmedian")
    values = input.reshape(1) if input.ndim == 0 else input
    ordered, order = sort(values, axis)
    size = values.shape[axis]
    count = size - arithmetic.isnan(values).sum(axis, keepdim=True)
    middle = where(count > 0, count - 1, size - 1).div(2, rounding_mode="floor")   # all NaN: as median
    picked, indices = gather(ordered, axis, middle), gather(order, axis, middle)
    if not keepdim or input.ndim == 0:
        picked, indices = picked.squeeze(axis), indices.squeeze(axis)
    return ValuesAndIndices(picked, indices)


@public("function", "method")
def mode(input: Tensor, dim: int = -1, keepdim: bool = False) -> ValuesAndIndices:
    """The most frequent value along ``dim`` (the smallest of equally frequent ones) and the index of
    its last occurrence, as PyTorch's CPU kernel; the values are ``gather``ed, so the gradient goes to
    that element."""
    refuse_when_traced("mode")
    axis = wrap_dim(dim, max(input.ndim, 1), "mode")
    values = input.reshape(1) if input.ndim == 0 else input
    rows = np.moveaxis(host_values(values), axis, -1)
    flat = rows.reshape(-1, rows.shape[-1])
    found = np.empty(flat.shape[0], np.int64)
    for r, row in enumerate(flat):
        distinct, counts = np.unique(row, return_counts=True)
        most = distinct[np.argmax(counts)]
        found[r] = np.flatnonzero(row == most)[-1]
    indices = to(from_host(np.moveaxis(found.reshape(rows.shape[:-1] + (1,)), -1, axis)), input.device)
    picked = gather(values, axis, indices)
    if not keepdim or input.ndim == 0:
        picked, indices = picked.squeeze(axis), indices.squeeze(axis)
    return ValuesAndIndices(picked, indices)

