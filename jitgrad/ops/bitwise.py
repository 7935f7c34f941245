"""The integer ops of bits and divisors: ``bitwise_and``, ``bitwise_or``, ``bitwise_xor``, ``bitwise_not``
(bools too, where they are the logical ops), the shifts ``bitwise_left_shift`` and
``bitwise_right_shift`` (arithmetic for signed integers; a shift by the type's width or more, or by a
negative amount, gives 0, or -1 for a negative number shifted right, as PyTorch's and numpy's), ``gcd``,
``lcm``, and the ``&``, ``|``, ``^``, ``~``, ``<<``, ``>>`` of integer tensors, which are PyTorch's
bitwise ops.

They are numpy's on the host, not registry ops: none of the backends' scalar vocabularies has a bit
operation, so a compiled function calling one runs eagerly (``host_reads.refuse_when_traced``), with a
warning naming the op. They have no derivative, and need none: integer and bool tensors never require
grad; a float tensor is PyTorch's error. The result's dtype is PyTorch's promotion of the operands."""
from __future__ import annotations

from typing import Callable

import numpy as np

from .. import dtypes
from ..tensor import Tensor
from .comparisons import scalar_type
from .device_copy import to
from .host_reads import from_host, host_values, refuse_when_traced
from .inplace import _written_back
from .public import declare_public


def _kinds(name: str, operands: tuple, allowed: str) -> None:
    """PyTorch's error for an operand whose dtype the op does not take (floats; bools for gcd/lcm)."""
    for value in operands:
        if isinstance(value, Tensor):
            kind, type_name = value._data.dtype.kind, scalar_type(value)
        else:
            kind = np.asarray(value).dtype.kind
            type_name = "Float" if kind == "f" else "Long"
        if kind not in allowed:
            raise NotImplementedError(f'"{name}_cpu" not implemented for \'{type_name}\'')


def _on_host(name: str, fn: Callable[..., np.ndarray], allowed: str, arity: int = 2) -> Callable[..., Tensor]:
    """The public op ``name``: ``fn`` of the operands' values, in their promoted dtype, on the first
    tensor's device. ``arity`` is checked: numpy's ufuncs take one more array as ``out``."""
    def op(input: Tensor, *others: Tensor | int | bool) -> Tensor:
        operands = (input, *others)
        if len(operands) != arity:
            raise TypeError(f"{name}() takes {arity} arguments ({len(operands)} given)")
        _kinds(name, operands, allowed)
        refuse_when_traced(name)
        arrays = [host_values(v) if isinstance(v, Tensor) else v for v in operands]
        dtype = dtypes.result_type(*arrays)
        values = fn(*(np.asarray(a).astype(dtype, copy=False) for a in arrays))
        device = next(v for v in operands if isinstance(v, Tensor)).device
        return to(from_host(np.asarray(values, dtype)), device)
    op.__name__ = op.__qualname__ = name
    which = "integer and bool" if "b" in allowed else "integer"
    op.__doc__ = f"PyTorch's ``{name}`` of {which} tensors (numpy's, on the host)."
    return op


_INTEGERS, _INTEGERS_AND_BOOLS = "iu", "iub"
OPS = {"bitwise_and": _on_host("bitwise_and", np.bitwise_and, _INTEGERS_AND_BOOLS),
       "bitwise_or": _on_host("bitwise_or", np.bitwise_or, _INTEGERS_AND_BOOLS),
       "bitwise_xor": _on_host("bitwise_xor", np.bitwise_xor, _INTEGERS_AND_BOOLS),
       "bitwise_not": _on_host("bitwise_not", np.invert, _INTEGERS_AND_BOOLS, arity=1),
       "bitwise_left_shift": _on_host("bitwise_left_shift", np.left_shift, _INTEGERS_AND_BOOLS),
       "bitwise_right_shift": _on_host("bitwise_right_shift", np.right_shift, _INTEGERS_AND_BOOLS),
       "gcd": _on_host("gcd", np.gcd, _INTEGERS),
       "lcm": _on_host("lcm", np.lcm, _INTEGERS)}
for _name, _op in OPS.items():
    declare_public(_name, _op, ("function", "method"))
    declare_public(f"{_name}_", _written_back(_name, _op), ("method",))
