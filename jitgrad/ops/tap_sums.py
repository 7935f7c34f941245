"""``tap_sum``: each output position along one dimension is a weighted sum of a few input positions
(its taps), the shape of resizing (``interpolate``) and of average pooling over windows.

The taps are two ``(out, taps)`` tables, the input positions and their weights, given as constant
tensors; a row with fewer taps than the table is wide fills the rest with the position ``n`` (the
input's size: no input) and weight 0. The op also takes the transposed tables (for each input
position, the outputs that read it) so that its derivative is the same op with the pairs swapped:
gradients of any order from one op, each a sum over the positions actually read.

That is the point of the op. A resize written as a matrix product with a banded matrix multiplies
every input by the zeros outside its band, so a single ``inf`` or NaN (``0 * inf``) spreads over the
whole output, where PyTorch keeps it to the outputs that read it. The numpy forward still uses the
matrix product when every input is finite (four times faster than numpy's gathers, and the same sums
then); the compiled kernels loop over the taps.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..shapes import wrap_dim
from ..tensor import Tensor
from .combining import constant
from .lowering import intrinsic
from .meta_rules import TensorMeta
from .registry import defop


class TapTables(NamedTuple):
    """What ``tap_sum`` reads: the taps of each output and, transposed, of each input position."""

    index: np.ndarray
    weight: np.ndarray
    index_t: np.ndarray
    weight_t: np.ndarray


def tap_tables(index: np.ndarray, weight: np.ndarray, size: int) -> TapTables:
    """The tables of outputs whose taps are ``index`` and ``weight`` (``(out, taps)``, positions in an
    input dimension of ``size``): computed once per resize by callers that cache them (``tap_sum``
    copies them into the tensors it makes)."""
    index_t, weight_t = _transposed(index, weight, size)
    return TapTables(np.asarray(index, np.int64), np.asarray(weight), index_t, weight_t)


def _transposed(index: np.ndarray, weight: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """For each of ``size`` input positions, the outputs whose taps read it and with what weight, as
    tables of the same form (padded with the position ``len(index)`` and weight 0)."""
    outputs, read = np.nonzero(index < size)
    positions = index[outputs, read]
    order = np.argsort(positions, kind="stable")
    outputs, positions, weights = outputs[order], positions[order], weight[outputs[order], read[order]]
    counts = np.bincount(positions, minlength=size)
    width = int(counts.max(initial=0))
    slots = np.arange(len(positions)) - np.repeat(np.cumsum(counts) - counts, counts)
    index_t = np.full((size, width), len(index), np.int64)
    weight_t = np.zeros((size, width), weight.dtype)
    index_t[positions, slots] = outputs
    weight_t[positions, slots] = weights
    return index_t, weight_t


def _banded_matrix(index: np.ndarray, weight: np.ndarray, size: int, dtype: np.dtype) -> np.ndarray:
    """The (out, size) matrix whose row ``i`` holds output ``i``'s tap weights."""
    matrix = np.zeros((len(index), size + 1), dtype)
    np.add.at(matrix, (np.arange(len(index))[:, None], index), weight)
    return matrix[:, :size]


def _tap_sum_forward(input: np.ndarray, index: np.ndarray, weight: np.ndarray, index_t: np.ndarray,
                     weight_t: np.ndarray, dim: int) -> np.ndarray:
    size, out = input.shape[dim], len(index)
    shape = input.shape[:dim] + (out,) + input.shape[dim + 1:]
    if input.size == 0 or out == 0:
        return np.zeros(shape, input.dtype)
    if input.dtype.kind == "f" and np.isfinite(input).all():
        outer, inner = int(np.prod(input.shape[:dim])), int(np.prod(input.shape[dim + 1:]))
        matrix = _banded_matrix(index, weight, size, input.dtype)
        if inner == 1:
            return (input.reshape(outer, size) @ matrix.T).reshape(shape)
        return np.matmul(matrix, input.reshape(outer, size, inner)).reshape(shape)
    source = input
    if (index >= size).any():  # padded rows read a slab of zeros past the end
        slab = np.zeros(input.shape[:dim] + (1,) + input.shape[dim + 1:], input.dtype)
        source = np.concatenate([input, slab], axis=dim)
    along = [1] * input.ndim
    along[dim] = out
    result = np.zeros(shape, input.dtype)
    with np.errstate(invalid="ignore", over="ignore"):  # inf * 0 is NaN here as in PyTorch, with no warning
        for tap in range(index.shape[1]):
            term = np.take(source, index[:, tap], axis=dim)
            term *= weight[:, tap].reshape(along)
            result += term
    return result


def _tap_sum_meta(input, index, weight, index_t, weight_t, dim):
    shape = list(input.shape)
    shape[dim] = index.shape[0]
    return TensorMeta(tuple(shape), input.dtype)


_tap_sum = defop("tap_sum", ("input", "index", "weight", "index_t", "weight_t"), _tap_sum_forward,
                 "TapSumBackward0", meta=_tap_sum_meta, lower=intrinsic("tap_sum"),
                 input=lambda grad, index, weight, index_t, weight_t, dim: _tap_sum(grad, index_t, weight_t,
                                                                                    index, weight, dim=dim),
                 jvp=lambda input_t, index, weight, index_t, weight_t, dim: _tap_sum(input_t, index, weight,
                                                                                     index_t, weight_t, dim=dim))


def tap_sum(input: Tensor, dim: int, tables: TapTables) -> Tensor:
    """``input`` with dimension ``dim`` replaced by ``len(tables.index)`` positions, output ``i`` being
    ``sum_t weight[i, t] * input[..., index[i, t], ...]`` (a position past the end reads nothing);
    the tables (``tap_tables``) are recorded by a trace as constants."""
    dim = wrap_dim(dim, input.ndim, "tap_sum")
    if len(tables.index_t) != input.shape[dim]:
        raise ValueError(f"tap_sum: tables for an input dimension of {len(tables.index_t)} positions, but dimension "
                         f"{dim} of the input has {input.shape[dim]}")
    dtype = input._data.dtype
    index, weight, index_t, weight_t = (constant(t.astype(np.int64 if t.dtype.kind == "i" else dtype), input)
                                        for t in tables)
    return _tap_sum(input, index, weight, index_t, weight_t, dim=dim)


__all__ = ["TapTables", "tap_sum", "tap_tables"]
