"""``sum_to``: the sum that undoes broadcasting (the engine's, for a gradient wider than its input), on
tensors and, for the engine's fast path, on arrays."""
from __future__ import annotations

import numpy as np

from ..tensor import Tensor
from .reductions import sum  # noqa: A004 - the op, as jitgrad.sum


def sum_to(tensor: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Sums ``tensor`` down to ``shape``, which it was broadcast from: the inverse of ``expand``."""
    current = tensor._data.shape
    if current == tuple(shape):
        return tensor
    dims = _broadcast_dims(current, shape)
    reduced = sum(tensor, dims, keepdim=True) if dims else tensor
    return reduced.reshape(tuple(shape)) if reduced._data.shape != tuple(shape) else reduced


def sum_to_array(array: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """``sum_to`` on an array, through the very numpy calls the ops make (so the same bits), for the
    engine's fast path: two op calls cost more than the sum of a bias's gradient."""
    shape = tuple(shape)
    if array.shape == shape:
        return array
    dims = summed_dims(array.shape, shape)
    reduced = np.add.reduce(array, dims, None, None, True) if dims else array  # _sum_forward's call, inline
    return reduced.reshape(shape) if reduced.shape != shape else reduced


def summed_dims(current: tuple[int, ...], shape: tuple[int, ...]) -> tuple[int, ...]:
    """The dimensions ``sum_to_array`` sums (with keepdim) to take an array of shape ``current`` back
    to ``shape``, kept by shapes; a replay program writes that call out (``backward_replay``)."""
    key = (current, shape)
    dims = _SUMMED_DIMS.get(key)
    if dims is None:
        if len(_SUMMED_DIMS) > 4096:
            _SUMMED_DIMS.clear()
        dims = _SUMMED_DIMS[key] = _broadcast_dims(current, shape)
    return dims


# The dimensions sum_to_array sums, by (shape, target): a bias's gradient asks the same every step.
_SUMMED_DIMS: dict[tuple, tuple[int, ...]] = {}


def _broadcast_dims(current: tuple[int, ...], shape: tuple[int, ...]) -> tuple[int, ...]:
    """The dimensions of ``current`` that broadcasting ``shape`` to it added or stretched."""
    lead = len(current) - len(shape)
    return tuple(range(lead)) + tuple(lead + i for i, s in enumerate(shape) if s == 1 and current[lead + i] != 1)


__all__ = ["sum_to", "sum_to_array", "summed_dims"]
