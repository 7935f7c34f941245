"""Ordering along a dimension: ``sort``, ``argsort``, ``topk``, and the running sum ``cumsum``.

Sorting is stable everywhere (numpy's, the CPU kernel's and the CUDA kernel's): equal elements keep
their order, which PyTorch guarantees with ``stable=True`` and allows otherwise; ``topk`` returns the
first ``k`` of that order, sorted (PyTorch allows any order for ``sorted=False``). NaN sorts above every
number, as in PyTorch. The gradient of the values goes back to the positions they were taken from, a
``scatter_add`` of the incoming gradient at the indices (``gathering.py``): a permutation, so nothing adds.
"""
from __future__ import annotations

import numpy as np

from ..shapes import wrap_dim
from ..tensor import Tensor
from .arithmetic import add, sub, where
from .gathering import _gather, _scatter_add, gather
from .lowering import intrinsic
from .meta_rules import TensorMeta, accumulated
from .public import public
from .reductions import ValuesAndIndices, _sum, cast_to_accumulate, in_accumulated_dtype
from .registry import defop, note_created
from .shape import stack


def stable_order(a: np.ndarray, dim: int, descending: bool) -> np.ndarray:
    """The indices that sort ``a`` along ``dim``, equal elements in their order; descending sorts the
    reversed array ascending and reverses that back, which keeps ties in order and NaN first."""
    if not descending:
        return np.argsort(a, axis=dim, kind="stable")
    n = a.shape[dim]
    reversed_order = np.argsort(np.flip(a, dim), axis=dim, kind="stable")
    return np.flip(n - 1 - reversed_order, dim)


def _topk_forward(a: np.ndarray, k: int, dim: int, largest: bool, sort: bool = False) -> tuple[np.ndarray, np.ndarray]:
    n = a.shape[dim] if a.ndim else 1
    if not 0 <= k <= n:
        raise ValueError("selected index k out of range")
    if a.ndim == 0:
        return a.copy(), np.zeros((), np.int64)
    order = np.take(stable_order(a, dim, largest), np.arange(k), axis=dim).astype(np.int64)
    return np.take_along_axis(a, order, axis=dim), order


def _sort_meta(self, k, dim, largest):
    shape = list(self.shape)
    if shape:
        shape[dim] = k
    return TensorMeta(tuple(shape), self.dtype), TensorMeta(tuple(shape), np.dtype(np.int64))


def _selected_grad(grads, results, self_shape, dim):
    """The values' gradient, put back where each value came from."""
    if not self_shape:
        return grads[0]
    return _scatter_add(grads[0], results[1], dim=dim, shape=self_shape)


def _selected_jvp(self_t, results, self_shape, dim):
    return (self_t if not self_shape else _gather(self_t, results[1], dim=dim)), None


# sort is topk of every element (k the dimension's size): one op, two PyTorch node names
_topk = defop("topk", ("self",), _topk_forward,
              lambda args, attrs: "SortBackward0" if attrs.get("sort") else "TopkBackward0",
              meta=lambda self, k, dim, largest, sort=False: _sort_meta(self, k, dim, largest),
              lower=intrinsic("topk"),
              self=lambda grads, results, self_shape, dim: _selected_grad(grads, results, self_shape, dim),
              jvp=lambda self_t, results, self_shape, dim: _selected_jvp(self_t, results, self_shape, dim))


@public("function", "method")
def topk(input: Tensor, k: int, dim: int = -1, largest: bool = True,
         sorted: bool = True) -> ValuesAndIndices:  # noqa: A002
    """The ``k`` largest (or smallest) elements along ``dim`` and their indices, always in sorted order."""
    dim = wrap_dim(dim, input.ndim, "topk")
    values, indices = _topk(input, k=int(k), dim=dim, largest=bool(largest))
    return ValuesAndIndices(values, indices)


@public("function", "method")
def sort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> ValuesAndIndices:
    """The elements along ``dim`` in order and where each came from; always stable."""
    dim = wrap_dim(dim, input.ndim, "sort")
    n = input.shape[dim] if input.ndim else 1
    values, indices = _topk(input, k=n, dim=dim, largest=bool(descending), sort=True)
    return ValuesAndIndices(values, indices)


@public("function", "method")
def argsort(input: Tensor, dim: int = -1, descending: bool = False, stable: bool = False) -> Tensor:
    return sort(input, dim, descending, stable).indices


def _cumsum_forward(a: np.ndarray, dim: int) -> np.ndarray:
    """Row-major whatever ``a``'s layout, as PyTorch's (numpy's keeps a transpose's order)."""
    a = np.asarray(a, order="C")
    dtype = np.int64 if a.dtype.kind in "biu" else a.dtype  # PyTorch's: integers and bools add up as int64
    if a.dtype == np.float16 and a.ndim:  # a running float32 sum, as PyTorch's (float16's stalled at 256)
        return np.cumsum(a, axis=dim, dtype=np.float32).astype(np.float16)
    return np.cumsum(a, axis=dim, dtype=dtype) if a.ndim else a.astype(dtype)


def _cumsum_grad(grad, dim, self_shape):
    """Each element's gradient is the sum of the incoming one from its position to the end of ``dim``:
    the total minus the running sum before it."""
    if not self_shape:
        return grad
    return add(sub(_sum(grad, dim=(dim,), keepdim=True), _cumsum(grad, dim=dim)), grad)


_cumsum = defop("cumsum", ("self",), _cumsum_forward, "CumsumBackward0",
                meta=lambda self, dim: TensorMeta(tuple(self.shape), accumulated(self)),
                lower=intrinsic("cumsum"),
                self=_cumsum_grad,
                jvp=lambda self_t, dim: _cumsum(self_t, dim=dim))


@public("function", "method")
def cumsum(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """With ``dtype`` the input is cast before it is summed, as in PyTorch."""
    input = cast_to_accumulate(input, dtype)
    return in_accumulated_dtype(_cumsum(input, dim=wrap_dim(dim, input.ndim, "cumsum")), dtype)


@public("function", "method")
def cumprod(input: Tensor, dim: int, *, dtype=None) -> Tensor:
    """The running products along ``dim`` (integers and bools multiply as int64, as in PyTorch).

    A composite: each slice is the previous one times the next input slice, then the slices are
    stacked, so the gradient is exact at zeros (where ``reverse_cumsum(g * out) / x`` would divide by
    them). It costs two ops per element of ``dim``: fine for the short dimensions cumprod usually runs
    along, slow for thousands."""
    if dtype is not None:
        input = cast_to_accumulate(input, dtype)
    elif input._data.dtype.kind in "biu":
        input = input.to(np.int64)
    ndim = input.ndim
    dim = wrap_dim(dim, ndim, "cumprod")
    if ndim == 0 or input.shape[dim] <= 1:
        return input.clone()
    running = [input.select(dim, 0)]
    for i in range(1, input.shape[dim]):
        running.append(running[-1] * input.select(dim, i))
    return stack(running, dim)


@public("function", "method")
def median(input: Tensor, dim: int | None = None, keepdim: bool = False):
    """The lower of the two middle values (of all elements, or along ``dim`` with their indices, the
    named tuple ``(values, indices)``); NaN where a NaN is present, as in PyTorch. The gradient goes
    to the element chosen. Sorting is stable, so of equal middle values the first in sorted order."""
    if dim is None:
        flat = input.reshape(-1)
        if not flat.shape[0]:
            raise IndexError("median(): Expected reduction dim 0 to have non-zero size.")
        return evenly_shared(flat, _middle(flat, 0)[0].reshape(()))
    ndim = input.ndim
    dim = wrap_dim(dim, ndim, "median")
    if ndim == 0:
        index = Tensor._make(np.zeros((), np.int64))
        note_created(index, 0)   # a constant of a trace, as a factory's tensor is
        return ValuesAndIndices(input.clone(), index)
    if not input.shape[dim]:
        raise IndexError(f"median(): Expected reduction dim {dim} to have non-zero size.")
    values, indices = _middle(input, dim)
    if not keepdim:
        values, indices = values.squeeze(dim), indices.squeeze(dim)
    return ValuesAndIndices(values, indices)


def evenly_shared(flat: Tensor, value: Tensor) -> Tensor:
    """``value`` (an element of the 1-d ``flat`` that a reduction of all elements picked), whose
    gradient goes in equal parts to every element equal to it (NaN: to every NaN), as PyTorch's
    ``median()`` and ``nanmedian()`` share it; the value is ``value``'s, exactly."""
    if flat._data.dtype.kind != "f":   # no gradient to share: the value in the input's dtype (int64's exact)
        return value
    picked = value.detach()
    equal = (flat == picked).logical_or(flat.isnan().logical_and(picked.isnan()))
    return picked + where(equal, flat - picked, 0.0).sum() / equal.sum()


def _middle(input: Tensor, dim: int) -> tuple[Tensor, Tensor]:
    """The median along ``dim`` (kept as size 1) and its index: position ``(n - 1) // 2`` of the sorted
    values, or where a slice holds NaN (sorted last), the first NaN's."""
    n = input.shape[dim]
    ordered, order = sort(input, dim)
    numbers = (~input.isnan()).sum(dim, keepdim=True)
    position = where(numbers < n, numbers, (n - 1) // 2)
    return gather(ordered, dim, position), gather(order, dim, position)
