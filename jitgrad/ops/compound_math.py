"""Elementwise maths PyTorch names that the registry's ops already spell: ``addcmul``, ``logaddexp``,
``logit``, ``xlogy``, ``sinc``... Composites, so their gradients of any
order, forward mode and lowerings come from their parts. Each is written so that the branch a ``where``
drops cannot overflow or divide by zero (its gradient there is then 0, not ``0 * inf``), and so that
the values and gradients at the edges (zeros, ties, infinities) are PyTorch's; the exceptions are listed
in docs/ops.md."""
from __future__ import annotations

import math

import numpy as np

from .. import dtypes
from ..tensor import Tensor
from . import arithmetic, inplace, math_functions
from .arithmetic import where
from . import comparisons
from .public import PUBLIC, declare_public, public


def _is_integral(value: Tensor | float) -> bool:
    if isinstance(value, Tensor):
        return value._data.dtype.kind in "iub"
    return isinstance(value, (bool, int))


def _floating(value: Tensor | float, *others: Tensor | float) -> Tensor | float:
    """``value`` in the dtype a floating op of ``value`` and ``others`` computes in (PyTorch's promotion,
    then the default float for integers)."""
    if not isinstance(value, Tensor):
        return float(value)
    stand_ins = [np.empty((1,) * o._data.ndim, o._data.dtype) if isinstance(o, Tensor) else o for o in (value, *others)]
    dtype = dtypes.result_type(*stand_ins)
    if dtype.kind != "f":
        dtype = dtypes.get_default_dtype().numpy
    return value if value._data.dtype == dtype else arithmetic.to_dtype(value, dtype)


@public("function", "method")
def addcmul(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: float = 1) -> Tensor:
    """``input + value * tensor1 * tensor2``."""
    return input + value * tensor1 * tensor2


@public("function", "method")
def addcdiv(input: Tensor, tensor1: Tensor, tensor2: Tensor, *, value: float = 1) -> Tensor:
    """``input + value * tensor1 / tensor2``; two integer tensors are refused, as in PyTorch."""
    if _is_integral(tensor1) and _is_integral(tensor2):
        raise RuntimeError("Integer division with addcdiv is no longer supported, and in a future release addcdiv "
                           "will perform a true division of tensor1 and tensor2. The historic addcdiv behavior can "
                           "be implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for "
                           "integer inputs and as (input + value * tensor1 / tensor2) for float inputs. The future "
                           "addcdiv behavior is just the latter implementation: (input + value * tensor1 / tensor2), "
                           "for all dtypes.")
    return input + value * (tensor1 / tensor2)


@public("function", "method")
def logaddexp(input: Tensor, other: Tensor) -> Tensor:
    """``log(exp(input) + exp(other))`` as ``max + log1p(exp(-|input - other|))``: no overflow, and
    two equal infinities give that infinity; at a tie each input's gradient is 1/2."""
    if _is_integral(input) and _is_integral(other):
        raise RuntimeError("logaddexp: not implemented for integer tensors (\"logaddexp_cpu\" not implemented for "
                           "'Long'): convert to a floating dtype first")
    equal = input == other   # inf - inf never computed (NaN, and numpy's warning)
    difference = where(equal, 0.0, input) - where(equal, 0.0, other)
    return arithmetic.maximum(input, other) + math_functions.log1p(math_functions.exp(-arithmetic.abs(difference)))


@public("function", "method")
def logaddexp2(input: Tensor, other: Tensor) -> Tensor:
    """``log2(2**input + 2**other)``: ``logaddexp`` in base 2, with its edge values."""
    if _is_integral(input) and _is_integral(other):
        raise RuntimeError("logaddexp2: not implemented for integer tensors (\"logaddexp2_cpu\" not implemented for "
                           "'Long'): convert to a floating dtype first")
    return logaddexp(input * math.log(2.0), other * math.log(2.0)) / math.log(2.0)


@public("function", "method")
def logical_xor(input: Tensor, other: Tensor) -> Tensor:
    """Where exactly one of the two is non-zero (bools)."""
    return arithmetic.ne(arithmetic.ne(input, 0), arithmetic.ne(other, 0))


@public("function", "method")
def isposinf(input: Tensor) -> Tensor:
    """Where the element is +inf (bools; never for integers)."""
    return arithmetic.eq(input, math.inf)


@public("function", "method")
def isneginf(input: Tensor) -> Tensor:
    """Where the element is -inf (bools; never for integers)."""
    return arithmetic.eq(input, -math.inf)


@public("function", "method")
def logit(input: Tensor, eps: float | None = None) -> Tensor:
    """``log(p / (1 - p))``; with ``eps``, ``p`` clamped to [eps, 1 - eps] first (zero gradient
    outside)."""
    p = _floating(input)
    if eps is not None:
        p = arithmetic.clamp(p, eps, 1.0 - eps)
    return math_functions.log(p / (1.0 - p))


def _log_number(y: float) -> float:
    return math.log(y) if y > 0 else (-math.inf if y == 0 else math.nan)


@public("function", "method")
def xlogy(input: Tensor | float, other: Tensor | float) -> Tensor:
    """``input * log(other)``, 0 where ``input`` is 0 (unless ``other`` is NaN), as PyTorch."""
    x, y = _floating(input, other), _floating(other, input)
    if not isinstance(y, Tensor):
        log_y = _log_number(y)
        return x * log_y if math.isfinite(log_y) else where(x == 0.0, 0.0 if log_y == log_y else math.nan, x * log_y)
    if not isinstance(x, Tensor):   # a number: as a tensor of y's shape and dtype
        x = arithmetic.to_dtype(where(y.isnan(), x, x), y._data.dtype)
    # where x is 0 (and y no NaN) the result is 0: y replaced by 1 where log(y) is not finite, so that
    # 0 * log(y) is 0 and x's gradient is log(y) where that is finite, 0 elsewhere, as PyTorch's
    zero = arithmetic.logical_and(x == 0.0, arithmetic.logical_not(arithmetic.isnan(y)))
    unsafe = arithmetic.logical_or(y <= 0.0, arithmetic.isinf(y))
    return x * math_functions.log(where(arithmetic.logical_and(zero, unsafe), 1.0, y))


@public("function", "method")
def sinc(input: Tensor) -> Tensor:
    """``sin(pi x) / (pi x)``, 1 at 0 (where the gradient is 0)."""
    x = _floating(input)
    at_zero = x == 0.0
    scaled = where(at_zero, 1.0, x) * math.pi
    return where(at_zero, 1.0, math_functions.sin(scaled) / scaled)


@public("function", "method")
def deg2rad(input: Tensor) -> Tensor:
    return _floating(input) * (math.pi / 180.0)


@public("function", "method")
def rad2deg(input: Tensor) -> Tensor:
    return _floating(input) * (180.0 / math.pi)


@public("function", "method")
def float_power(input: Tensor | float, exponent: Tensor | float) -> Tensor:
    """``input ** exponent`` computed in float64, as PyTorch's."""
    def as_double(value):
        return value.double() if isinstance(value, Tensor) else float(value)
    return arithmetic.pow(as_double(input), as_double(exponent))


def float_power_(self: Tensor, exponent: Tensor | float) -> Tensor:
    """``float_power`` written into a float64 ``self`` (any other dtype is PyTorch's error)."""
    if self._data.dtype != np.float64:
        raise RuntimeError(f"the base given to float_power_ has dtype {comparisons.scalar_type(self)} but the "
                           "operation's result requires dtype Double")
    return inplace.apply_inplace("float_power_", self, float_power, exponent)


# The in-place forms PyTorch has (``x.addcmul_(a, b)``): the result written back, as the registry
# ops' in-place forms are (``inplace.py``)
for _fn in (addcmul, addcdiv, logit, xlogy, sinc, deg2rad, rad2deg, comparisons.heaviside,
            comparisons.negative, comparisons.absolute, comparisons.true_divide, comparisons.sgn):
    declare_public(f"{_fn.__name__}_", inplace._written_back(_fn.__name__, _fn), ("method",))
for _name in ("hypot", "copysign"):   # registry ops (math_functions)
    declare_public(f"{_name}_", inplace._written_back(_name, PUBLIC[_name].value), ("method",))
declare_public("float_power_", float_power_, ("method",))
