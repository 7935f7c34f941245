"""Comparing tensors, picking elements by a mask, and PyTorch's other names of existing ops
(``absolute``, ``negative``, ``true_divide``, ``sgn``): composites of the registry's ops, so their
gradients, forward mode and lowerings come from their parts (docs/ops.md, "PyTorch's tier-2 ops").

The ops whose output's shape depends on the input's values (``nonzero``) read the values on the host and
refuse inside a traced (compiled) function, whose graph has shapes fixed when it is traced."""
from __future__ import annotations

from typing import Sequence

import numpy as np

from ..autograd import grad_mode
from ..tensor import Tensor
from . import arithmetic, math_functions, reductions, shape
from .arithmetic import where
from .device_copy import to
from .host_reads import from_host, host_values, refuse_when_traced
from .meta_rules import scalar_type_name
from .public import public


def scalar_type(t: Tensor) -> str:
    """PyTorch's name of a tensor's dtype in its error messages (``Float``, ``Long``...)."""
    return scalar_type_name(t._data.dtype)


# ---- other names ------------------------------------------------------------------------------------
@public("function", "method")
def absolute(input: Tensor) -> Tensor:
    """``abs``'s other name."""
    return arithmetic.abs(input)


@public("function", "method")
def negative(input: Tensor) -> Tensor:
    """``neg``'s other name."""
    return arithmetic.neg(input)


@public("function", "method")
def true_divide(input: Tensor, other: Tensor | float) -> Tensor:
    """``div``'s other name (true division, a float for integers)."""
    return arithmetic.div(input, other)


@public("function", "method")
def sgn(input: Tensor) -> Tensor:
    """``sign`` of a real tensor (jitgrad has no complex dtype)."""
    return arithmetic.sign(input)


@public("function", "method")
def signbit(input: Tensor) -> Tensor:
    """Whether each element's sign bit is set: true for -0.0 and -nan, unlike ``input < 0``, as PyTorch
    (``copysign(1, input) < 0``; compiled, a NaN's sign bit is not seen, docs/ops.md)."""
    if input._data.dtype.kind != "f":
        return arithmetic.lt(input, 0)
    return arithmetic.lt(math_functions.copysign(1.0, input.detach()), 0.0)


# ---- comparing --------------------------------------------------------------------------------------
@public("function", "method")
def isclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> Tensor:
    """Where ``|input - other| <= atol + rtol * |other|``, or the two are equal (infinities of one sign),
    or both NaN with ``equal_nan``; the two must have one dtype, as in PyTorch."""
    if not isinstance(other, Tensor):
        raise TypeError(f"isclose(): argument 'other' must be Tensor, not {type(other).__name__}")
    if input._data.dtype != other._data.dtype:
        raise RuntimeError(f"{scalar_type(input)} did not match {scalar_type(other)}: "
                           "isclose compares tensors of one dtype; convert one with .to(other.dtype)")
    if rtol < 0:
        raise RuntimeError(f"rtol must be greater than or equal to zero, but got {rtol}")
    if atol < 0:
        raise RuntimeError(f"atol must be greater than or equal to zero, but got {atol}")
    with grad_mode.no_grad():
        close = arithmetic.eq(input, other)
        if input._data.dtype.kind == "b":
            return close
        if equal_nan:
            close = arithmetic.logical_or(close, arithmetic.logical_and(input.isnan(), other.isnan()))
        a, b = (input, other) if input._data.dtype.kind == "f" else (input.double(), other.double())
        finite = arithmetic.logical_and(math_functions.isfinite(a), math_functions.isfinite(b))
        a, b = where(finite, a, 0.0), where(finite, b, 0.0)   # no inf - inf (numpy warns): equal or not close
        error = (a - b).abs()
        within = arithmetic.logical_and(finite, error <= atol + rtol * b.abs())
        return arithmetic.logical_or(close, within)


@public("function", "method")
def allclose(input: Tensor, other: Tensor, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """Whether ``isclose`` holds for every element (a Python bool)."""
    return bool(isclose(input, other, rtol, atol, equal_nan).all())


@public("function", "method")
def equal(input: Tensor, other: Tensor) -> bool:
    """Whether the two have one shape and equal elements (a Python bool; NaN equals nothing)."""
    if tuple(input.shape) != tuple(other.shape):
        return False
    return bool(arithmetic.eq(input, other).all())


@public("function", "method")
def fmax(input: Tensor, other: Tensor) -> Tensor:
    """``maximum`` that ignores a NaN (NaN only where both are); at a tie the gradient goes to
    ``input``, as PyTorch's."""
    return where(arithmetic.logical_or(arithmetic.ge(input, other), arithmetic.isnan(other)), input, other)


@public("function", "method")
def fmin(input: Tensor, other: Tensor) -> Tensor:
    """``minimum`` that ignores a NaN (NaN only where both are); at a tie the gradient goes to
    ``input``, as PyTorch's."""
    return where(arithmetic.logical_or(arithmetic.le(input, other), arithmetic.isnan(other)), input, other)


@public("function", "method")
def heaviside(input: Tensor, values: Tensor) -> Tensor:
    """0 below zero, 1 above, ``values`` at zero (0 at NaN); the two must have one dtype. Not
    differentiable: the result never requires grad (PyTorch's fails at the backward)."""
    if input._data.dtype != values._data.dtype:
        raise RuntimeError("heaviside is not yet implemented for tensors with different dtypes.")
    with grad_mode.no_grad():
        step = arithmetic.to_dtype(arithmetic.gt(input, 0), input._data.dtype)
        return where(arithmetic.eq(input, 0), values, step)


# ---- counting and selecting -------------------------------------------------------------------------
@public("function", "method")
def count_nonzero(input: Tensor, dim: int | Sequence[int] | None = None) -> Tensor:
    """The number of non-zero elements (over ``dim``), an int64 tensor."""
    return reductions.sum(arithmetic.ne(input, 0), dim)


@public("function", "method")
def nonzero(input: Tensor, *, as_tuple: bool = False) -> Tensor | tuple[Tensor, ...]:
    """The indices of the non-zero elements, one row each (int64, ``(n, input.dim())``), in row-major
    order; ``as_tuple``: one index vector per dimension (a 0-d input read as 1-d, as in PyTorch)."""
    refuse_when_traced("nonzero")
    values = host_values(input)
    if as_tuple:
        return tuple(to(from_host(i.astype(np.int64)), input.device) for i in np.nonzero(np.atleast_1d(values)))
    return to(from_host(np.argwhere(values).astype(np.int64)), input.device)


@public("function", "method")
def masked_select(input: Tensor, mask: Tensor) -> Tensor:
    """The elements where ``mask`` (a bool tensor, broadcast with ``input``) holds, as a 1-d tensor in
    row-major order; the gradient goes back to the selected elements."""
    if not isinstance(mask, Tensor) or mask._data.dtype != np.bool_:
        raise RuntimeError("masked_select: expected BoolTensor for mask")
    size = tuple(np.broadcast_shapes(input.shape, mask.shape))
    values = input if tuple(input.shape) == size else shape.expand(input, size)
    chosen = mask if tuple(mask.shape) == size else shape.expand(mask, size)
    return values[chosen] if size else shape.reshape(values, (1,))[shape.reshape(chosen, (1,))]

