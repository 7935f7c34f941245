"""Integer tensors built from sizes or from values: ``tril_indices``/``triu_indices`` (the coordinates of
a triangle, from sizes alone), ``bincount`` and ``isin`` (read their inputs' values on the host, so a
compiled function calling one runs eagerly, with a warning naming it), as PyTorch's."""
from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes
from ..tensor import Tensor
from .device_copy import to
from .host_reads import from_host, host_values, refuse_when_traced
from .public import public


def _triangle(row: int, col: int, offset: int, lower: bool, dtype: Any, device: Any) -> Tensor:
    mask = np.tri(row, col, offset, dtype=bool) if lower else ~np.tri(row, col, offset - 1, dtype=bool)
    coordinates = np.stack(np.nonzero(mask)).astype(dtypes.as_numpy_dtype(dtype) or np.int64)
    return to(from_host(coordinates), "cpu" if device is None else device)


@public("function")
def tril_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None) -> Tensor:
    """The (2, n) coordinates, row by row, of the lower triangle of a ``row`` x ``col`` matrix on and
    below diagonal ``offset``."""
    return _triangle(row, col, offset, True, dtype, device)


@public("function")
def triu_indices(row: int, col: int, offset: int = 0, *, dtype: Any = None, device: Any = None) -> Tensor:
    """The (2, n) coordinates, row by row, of the upper triangle on and above diagonal ``offset``."""
    return _triangle(row, col, offset, False, dtype, device)


@public("function", "method")
def bincount(input: Tensor, weights: Tensor | None = None, minlength: int = 0) -> Tensor:
    """How often each value 0..max occurs in the 1-d non-negative integer ``input`` (at least
    ``minlength`` counts), or the sums of ``weights`` at each value (float64 for integer or float64
    weights, else the weights' dtype, as PyTorch's)."""
    refuse_when_traced("bincount")
    values = host_values(input)
    if values.ndim != 1 or values.dtype.kind not in "iu" or (values.size and values.min() < 0):
        raise RuntimeError("bincount only supports 1-d non-negative integral inputs.")
    if weights is None:
        return to(from_host(np.bincount(values, minlength=minlength).astype(np.int64)), input.device)
    amounts = host_values(weights)
    if amounts.shape != values.shape:
        raise RuntimeError("weights should be 1-d and have the same length as input")
    dtype = amounts.dtype if amounts.dtype.kind == "f" else np.dtype(np.float64)
    return to(from_host(np.bincount(values, amounts, minlength).astype(dtype)), input.device)


@public("function")
def isin(elements: Tensor | Any, test_elements: Tensor | Any, *, assume_unique: bool = False,
         invert: bool = False) -> Tensor:
    """Whether each of ``elements`` is among ``test_elements`` (either may be a number), elementwise."""
    refuse_when_traced("isin")
    source = next(v for v in (elements, test_elements) if isinstance(v, Tensor))
    found = np.isin(*(host_values(v) if isinstance(v, Tensor) else np.asarray(v) for v in (elements, test_elements)),
                    assume_unique=assume_unique, invert=invert)
    return to(from_host(np.asarray(found)), source.device)
