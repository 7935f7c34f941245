"""PyTorch's extra arguments of the arithmetic functions, composed of registry ops so that gradients,
forward mode and compiling come from theirs: ``add``/``sub``'s ``alpha``, ``div``'s ``rounding_mode``,
``clamp``'s tensor limits, and ``where(condition)``, which is ``nonzero(condition, as_tuple=True)``.

Each public function here takes the common call (no extra argument) straight to its op's caller,
so ``jitgrad.add(a, b)`` costs one Python frame more than ``a + b``, which calls the op directly.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..tensor import Tensor
from .arithmetic import add, div, floor_divide, isnan, logical_and, mul, ne, remainder, sub, where
from .arithmetic import clamp as clamp_numbers
from .comparisons import nonzero
from .math_functions import trunc
from .op_callers import caller
from .public import declare_public, public

_add, _sub, _mul, _div = caller(add), caller(sub), caller(mul), caller(div)
_floor_divide, _remainder, _where = caller(floor_divide), caller(remainder), where
_ABSENT = object()


def _integral(value: Any) -> bool:
    """Whether ``value`` is an integer or bool tensor or Python number (PyTorch's integral types)."""
    if isinstance(value, Tensor):
        return value._data.dtype.kind in "biu"
    return isinstance(value, (bool, int, np.integer, np.bool_))


def _scaled(other: Any, input: Any, alpha: Any) -> Any:
    """``alpha * other``, refusing a float ``alpha`` for integral operands as PyTorch does (it would be
    truncated), and a bool one unless both operands are bools (where it is ``other and alpha``)."""
    if isinstance(alpha, (bool, np.bool_)):
        if not all(isinstance(v, Tensor) and v._data.dtype == np.bool_ for v in (input, other)):
            raise RuntimeError("Boolean alpha only supported for Boolean results.")
        return other if alpha else logical_and(other, False)
    if _integral(input) and _integral(other) and not isinstance(alpha, (int, np.integer)):
        raise RuntimeError("For integral input tensors, argument alpha must not be a floating point number.")
    return _mul(other, alpha) if isinstance(other, Tensor) else other * alpha


def _detached(value: Any) -> Any:
    return value.detach() if isinstance(value, Tensor) else value


def add_with_alpha(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    """``input + alpha * other`` (``AddBackward0``, as PyTorch's)."""
    if alpha == 1 and alpha is not True:
        return _add(input, other)
    return _add(input, _scaled(other, input, alpha))


def sub_with_alpha(input: Any, other: Any, *, alpha: Any = 1) -> Tensor:
    """``input - alpha * other`` (``SubBackward0``, as PyTorch's)."""
    if alpha == 1 and alpha is not True:
        return _sub(input, other)
    if all(isinstance(v, Tensor) and v._data.dtype == np.bool_ for v in (input, other)):
        raise RuntimeError("Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or "
                           "`logical_xor()` operator instead.")
    return _sub(input, _scaled(other, input, alpha))


def div_with_rounding(input: Any, other: Any, *, rounding_mode: str | None = None) -> Tensor:
    """``input / other``; ``rounding_mode="trunc"`` rounds the quotient toward zero, ``"floor"`` down
    (Python's ``//``, computed as numpy's and PyTorch's ``floor_divide`` are, so ``1.0 // 0.1`` is 9).
    Integers stay integers under a rounding mode, and a zero integer divisor raises, as in PyTorch. A
    rounded float quotient has a zero gradient, as PyTorch's has."""
    if rounding_mode is None:
        return _div(input, other)
    if rounding_mode not in ("trunc", "floor"):
        raise RuntimeError(f"div expected rounding_mode to be one of None, 'trunc', or 'floor' but found "
                           f"'{rounding_mode}'")
    if not (_integral(input) and _integral(other)):
        a, b = _detached(input), _detached(other)
        rounded = trunc(_div(a, b)) if rounding_mode == "trunc" else _floor_divide(a, b)
        never = rounded < rounded  # all False (NaN too): each operand's branch gets an exact zero gradient
        for operand in (other, input):
            if isinstance(operand, Tensor) and operand.requires_grad:
                rounded = _where(never, operand, rounded)
        return rounded
    floored = _floor_divide(input, other)
    if rounding_mode == "floor":
        return floored
    # toward zero: one more than the floor where the division is inexact and the signs differ
    inexact = ne(_remainder(input, other), 0)
    signs_differ = ne(input < 0, other < 0) if isinstance(other, Tensor) else input < 0 if other > 0 else input >= 0
    return _add(floored, logical_and(inexact, signs_differ))   # a bool: the quotient keeps its dtype (int8...)


def clamp(input: Tensor, min: Any = None, max: Any = None) -> Tensor:  # noqa: A002 - PyTorch's argument names
    """Limits values to ``[min, max]``, both numbers or both tensors (which broadcast, and promote an
    integer input to float, as PyTorch's do); the gradient is zero where a limit applied (and at a NaN,
    which stays NaN) and reaches the limit there. A NaN limit gives NaN there, as PyTorch's
    ``min(max(x, min), max)`` does (a comparison with it is false: it kept ``x``). Where ``min > max``
    the result is ``max``."""
    if not isinstance(min, Tensor) and not isinstance(max, Tensor):
        return clamp_numbers(input, min, max)
    if not all(limit is None or isinstance(limit, Tensor) for limit in (min, max)):
        raise TypeError(f"clamp() received an invalid combination of arguments: min ({type(min).__name__}) and "
                        f"max ({type(max).__name__}) must both be tensors (or None), or both numbers")
    out = input
    if min is not None:
        out = _where(out < min, min, out)
    if max is not None:
        out = _where(out > max, max, out)
    for value in (input, min, max):   # a NaN, of the input or of a limit, is the result, with no gradient
        if value is not None and value._data.dtype.kind == "f":
            out = _where(isnan(value), value.detach(), out)
    return out


@public("function", "method")
def argwhere(input: Tensor) -> Tensor:
    """``nonzero(input)``."""
    return nonzero(input)


def where_or_nonzero(condition: Tensor, input: Any = _ABSENT, other: Any = _ABSENT) -> Tensor | tuple[Tensor, ...]:
    """``input`` where ``condition`` holds, else ``other``; ``where(condition)`` alone is
    ``nonzero(condition, as_tuple=True)``, as in PyTorch."""
    if input is _ABSENT and other is _ABSENT:
        return nonzero(condition, as_tuple=True)
    if input is _ABSENT or other is _ABSENT:
        raise TypeError("where() takes a condition alone, or a condition, input and other")
    return _where(condition, input, other)


for _name, _fn in (("add", add_with_alpha), ("sub", sub_with_alpha), ("subtract", sub_with_alpha),
                   ("div", div_with_rounding), ("divide", div_with_rounding), ("clamp", clamp)):
    declare_public(_name, _fn, ("function", "method"))
declare_public("multiply", _mul, ("function", "method"))
declare_public("where", where_or_nonzero, ("function",))

__all__ = ["add_with_alpha", "argwhere", "clamp", "div_with_rounding", "sub_with_alpha", "where_or_nonzero"]
