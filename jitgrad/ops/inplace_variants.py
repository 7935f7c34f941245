"""PyTorch's in-place variants of the ops that are not elementwise (``cumsum_``, ``tril_``, ``addmm_``),
of the comparisons (``eq_``), and of the view ops (``unsqueeze_``, ``t_``): each the out-of-place op
run through ``inplace.apply_inplace`` (or ``apply_view_inplace``), so its version counter, its
refusals (a leaf that requires grad, an inference tensor) and its gradient are the ones every in-place
op has."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..tensor import Tensor
from . import arithmetic, shape
from .combining import constant
from .inplace import apply_inplace, apply_view_inplace, fill, _written_back
from .public import PUBLIC, declare_public, public

# The ops whose in-place form is their result written back (``_write`` refuses a float result of an
# integer tensor, as PyTorch).
_WRITTEN_BACK = ("cumsum", "cumprod", "tril", "triu", "floor_divide", "scatter_add", "addmm", "addmv", "addr", "addbmm",
                 "baddbmm", "renorm")
for _name in _WRITTEN_BACK:
    declare_public(f"{_name}_", _written_back(_name, PUBLIC[_name].value), ("method",))


def _as_self(test: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """``test`` (a comparison, a logical op) giving 1 and 0 in ``self``'s dtype: what PyTorch's
    ``eq_`` writes. Both come from ``fill`` of ``self``, so the gradient to ``self`` is zeros, as
    PyTorch's (the history before the write never receives the incoming gradient)."""
    def op(self: Tensor, *args: Any) -> Tensor:
        return arithmetic.where(test(self, *args), fill(self, 1), fill(self, 0))
    return op


_COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "logical_not")
for _name in _COMPARISONS:
    declare_public(f"{_name}_", _written_back(_name, _as_self(PUBLIC[_name].value)), ("method",))


# ---- the view ops in place: the tensor's shape changes, its memory does not ---------------------------
@public("method")
def unsqueeze_(self: Tensor, dim: int) -> Tensor:
    return apply_view_inplace("unsqueeze_", self, shape.unsqueeze, dim)


@public("method")
def squeeze_(self: Tensor, dim: Any = None) -> Tensor:
    return apply_view_inplace("squeeze_", self, shape.squeeze, dim)


@public("method")
def transpose_(self: Tensor, dim0: int, dim1: int) -> Tensor:
    return apply_view_inplace("transpose_", self, shape.transpose, dim0, dim1)


@public("method")
def t_(self: Tensor) -> Tensor:
    """``t()`` in place: a matrix transposed, a vector or a 0-d tensor as it is."""
    return apply_view_inplace("t_", self, Tensor.t)


# ---- fill_diagonal_ ---------------------------------------------------------------------------------
def _diagonal_mask(shape_: tuple[int, ...], wrap: bool) -> np.ndarray:
    """Where ``fill_diagonal_`` writes: the elements whose indices are all equal; for a tall matrix
    with ``wrap``, the diagonal again every ``columns + 1`` rows, as PyTorch (and numpy) do."""
    mask = np.zeros(shape_, np.bool_)
    flat = mask.reshape(-1)
    if len(shape_) == 2:
        rows, columns = shape_
        end = rows * columns if wrap else min(rows, columns) * columns
        flat[:end:columns + 1] = True
    else:
        flat[::sum(mask.strides) // mask.itemsize] = True
    return mask


@public("method")
def fill_diagonal_(self: Tensor, fill_value: float, wrap: bool = False) -> Tensor:
    """``fill_value`` written on the main diagonal (of every dimension at once), PyTorch's checks."""
    if self.ndim < 2:
        raise RuntimeError("dimensions must larger than 1")
    if self.ndim > 2 and len(set(self.shape)) != 1:
        raise RuntimeError("all dimensions of input must be of equal length")
    mask = constant(_diagonal_mask(tuple(self.shape), wrap), self)
    return apply_inplace("fill_diagonal_", self, PUBLIC["masked_fill"].value, mask, fill_value)
