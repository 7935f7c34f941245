"""In-place ops (``add_``, ``x += y``, ``x[i] = v``...): the out-of-place op's result written back.

Autograd sees an in-place op as its out-of-place op followed by a rebase: the tensor's ``grad_fn``
becomes the new node, whose input edge is the tensor's old history (recorded through a snapshot of
the old value, so the new node never reads overwritten memory). The version counter is bumped, so a
node that saved the old value refuses to run. What jitgrad cannot do correctly it refuses: in-place on
a leaf that requires grad (PyTorch's rule), and a recorded in-place change to a view
(PyTorch rebuilds the base's history there, with CopySlices; jitgrad does not yet).
"""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..autograd import grad_mode
from ..autograd.forward_ad import tangent_or_zeros
from ..autograd.versions import increment_version
from ..tensor import Tensor
from . import arithmetic
from .indexing import normalize_index
from .registry import defop, note_alias

_LEAF_ERROR = "a leaf Variable that requires grad is being used in an in-place operation."


def _involves_grad(self: Tensor, args: tuple) -> bool:
    return grad_mode.state.grad_enabled and (
        self._requires_grad or any(isinstance(a, Tensor) and a._requires_grad for a in args))


def _snapshot(tensor: Tensor) -> Tensor:
    """The tensor's value now, as a separate tensor with the same place in the graph."""
    snapshot = Tensor._make(tensor._data.copy(), tensor._requires_grad)
    snapshot._grad_fn, snapshot._output_nr = tensor._grad_fn, tensor._output_nr
    return snapshot


def apply_inplace(name: str, self: Tensor, op: Callable[..., Tensor], *args: Any, **kwargs: Any) -> Tensor:
    """Runs ``op(self, *args)`` and writes the result into ``self``'s memory."""
    recording = _involves_grad(self, args)
    if recording:
        if self._grad_fn is None and self._requires_grad:
            raise RuntimeError(_LEAF_ERROR)
        if self._view is not None:
            raise RuntimeError(f"{name}: recording an in-place change to a view is not supported by jitgrad "
                               "yet: its base's history would have to be rebuilt (PyTorch's CopySlices). "
                               "Apply the op out of place, or to the base tensor")
        snapshot = _snapshot(self)
        note_alias(snapshot, self)
        result = op(snapshot, *args, **kwargs)
    else:
        result = op(self, *args, **kwargs)
    if result._data.shape != self._data.shape:
        raise RuntimeError(f"{name}: output with shape {list(self._data.shape)} doesn't match the broadcast "
                           f"shape {list(result._data.shape)}")
    if not np.can_cast(result._data.dtype, self._data.dtype, casting="same_kind"):
        raise RuntimeError(f"{name}: result type {result._data.dtype.name} can't be cast to the desired "
                           f"output type {self._data.dtype.name}")
    if not self._data.flags.writeable:
        raise RuntimeError(f"{name}: this tensor's memory is read-only (an expanded view); clone() it first")
    np.copyto(self._data, result._data, casting="same_kind")
    increment_version(self)
    note_alias(self, result)
    if recording and result._grad_fn is not None:
        self._grad_fn, self._output_nr, self._requires_grad = result._grad_fn, result._output_nr, True
    return self


_fill = defop("fill", ("self",), lambda a, value, zero: np.full_like(a, value),
              lambda args, attrs: "ZeroBackward0" if attrs["zero"] else "FillBackward2",
              jvp=lambda self_t: self_t * 0.0,
              self=lambda grad: grad * 0.0)

_copy = defop("copy", ("self", "src"),
              lambda a, src: np.array(np.broadcast_to(src, a.shape), dtype=a.dtype),
              "CopyBackwards",
              jvp=lambda self_t, src_t: self_t * 0.0 if src_t is None else src_t,
              self=lambda grad: grad * 0.0,
              src=lambda grad: grad)


def _index_put_forward(a, values, index):
    out = a.copy()
    out[index] = values
    return out


_index_put = defop("index_put", ("self", "values"), _index_put_forward, "IndexPutBackward0",
                   jvp=lambda self_t, values_t, self, index: _index_put(
                       tangent_or_zeros(self_t, self), 0.0 if values_t is None else values_t, index=index),
                   self=lambda grad, index: _index_put(grad, 0.0, index=index),
                   values=lambda grad, index: grad[index])


def add_(self: Tensor, other: Any, *, alpha: float = 1) -> Tensor:
    return apply_inplace("add_", self, arithmetic.add, other if alpha == 1 else other * alpha)


def sub_(self: Tensor, other: Any, *, alpha: float = 1) -> Tensor:
    return apply_inplace("sub_", self, arithmetic.sub, other if alpha == 1 else other * alpha)


def mul_(self: Tensor, other: Any) -> Tensor:
    return apply_inplace("mul_", self, arithmetic.mul, other)


def div_(self: Tensor, other: Any) -> Tensor:
    return apply_inplace("div_", self, arithmetic.div, other)


def pow_(self: Tensor, exponent: Any) -> Tensor:
    return apply_inplace("pow_", self, arithmetic.pow, exponent)


def clamp_(self: Tensor, min: float | None = None, max: float | None = None) -> Tensor:  # noqa: A002
    return apply_inplace("clamp_", self, arithmetic.clamp, min, max)


def fill_(self: Tensor, value: float) -> Tensor:
    return apply_inplace("fill_", self, _fill, value=value, zero=False)


def zero_(self: Tensor) -> Tensor:
    return apply_inplace("zero_", self, _fill, value=0, zero=True)


def copy_(self: Tensor, src: Any) -> Tensor:
    """Writes ``src`` (broadcast, cast) into ``self``; the gradient flows to ``src``."""
    return apply_inplace("copy_", self, _copy, src)


def setitem(self: Tensor, index: Any, value: Any) -> None:
    """``self[index] = value``: the gradient of ``value`` is the indexed gradient; the overwritten
    elements of ``self`` get none."""
    apply_inplace("__setitem__", self, _index_put, value, index=normalize_index(index))
