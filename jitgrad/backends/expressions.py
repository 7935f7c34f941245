"""Writing the ops' backend-neutral scalar expressions (``jitgrad.ops.scalar``) as Python source.

Every backend whose kernels are Python source (numba on the CPU; numba.cuda device code would be
another) writes the operators the same way — ``(a + b)``, ``(a if c else b)``, ``bool(a)`` — and
each of the vocabulary's functions its own way, through its ``Dialect``: a table from every name of
``scalar.FUNCTIONS`` to a function of the arguments' source and the compute dtype (so that the CPU's
``exp`` of a float32 can be its vectorizable ``exp_float32``), and how it spells a scalar type (the
casts, and the constants cast to the compute dtype so that float32 code stays float32).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import numpy as np

from ..ops.scalar import COMPUTE, FUNCTIONS, Apply, Const, Expr, Var

FunctionSource = Callable[[Sequence[str], np.dtype], str]

_BINARY = {"add": "+", "sub": "-", "mul": "*", "truediv": "/", "lt": "<", "le": "<=", "gt": ">",
           "ge": ">=", "eq": "==", "ne": "!=", "logical_and": "and", "logical_or": "or"}
# A constant's source where ``repr`` gives no Python expression (``inf``): numba reads ``math``'s.
_NON_FINITE = {"inf": "math.inf", "-inf": "(-math.inf)", "nan": "math.nan"}
_BOOLEAN = {"add": "or", "mul": "and"}  # what + and * are between bool tensors, as numpy and PyTorch have them


@dataclass(frozen=True)
class Dialect:
    """A backend's spelling of the vocabulary: ``functions`` maps every name of ``scalar.FUNCTIONS``;
    ``type_name`` gives the source of a dtype's scalar constructor (``np.float32``)."""

    name: str
    functions: Mapping[str, FunctionSource]
    type_name: Callable[[np.dtype], str]

    def missing(self) -> set[str]:
        """The functions of the vocabulary this dialect cannot write."""
        return set(FUNCTIONS) - set(self.functions)


def render(expression: Expr, dialect: Dialect, compute: np.dtype, result: np.dtype) -> str:
    """``expression`` as source; constants and ``cast``s take the node's ``compute`` or ``result``
    dtype. A function the dialect lacks is a ``NotImplementedError`` (a backend's lowering error)."""
    def write(e: Expr) -> str:
        if isinstance(e, Var):
            return e.name
        if isinstance(e, Const):
            if isinstance(e.value, bool):
                return repr(e.value)
            return f"{dialect.type_name(compute)}({_NON_FINITE.get(repr(e.value), repr(e.value))})"
        if not isinstance(e, Apply):
            raise TypeError(f"not a scalar expression: {e!r}")
        args = [write(a) for a in e.args]
        if e.fn in _BINARY:
            if compute.kind == "b" and e.fn in _BOOLEAN:  # bools add as a logical or (True + True is True)
                return f"({args[0]} {_BOOLEAN[e.fn]} {args[1]})"
            return f"({args[0]} {_BINARY[e.fn]} {args[1]})"
        if e.fn == "neg":
            return f"(-{args[0]})"
        if e.fn == "logical_not":
            return f"(not {args[0]})"
        if e.fn == "truth":
            return f"bool({args[0]})"
        if e.fn == "where":
            return f"({args[1]} if {args[0]} else {args[2]})"
        if e.fn == "cast":
            return _cast(args[0], compute if e.param == COMPUTE else result)
        if e.fn not in dialect.functions:
            raise NotImplementedError(f"the {dialect.name} backend has no code for the scalar function {e.fn!r}")
        return dialect.functions[e.fn](args, compute)

    def _cast(value: str, dtype: np.dtype) -> str:
        """An integer narrower than int32 is made through int32, as numpy and PyTorch cast a float to it
        (300.7 as int8 is 44, -2.7 as uint8 254; numba's direct conversion is poison out of range, which
        its vectorized loops wrote as a saturating pack: 127 and 0); an integer keeps its low bits either way."""
        if dtype.kind in "iu" and dtype.itemsize < 4:
            value = f"{dialect.type_name(np.dtype(np.int32))}({value})"
        return f"{dialect.type_name(dtype)}({value})"
    return write(expression)


def call(function: str) -> FunctionSource:
    """A function table's entry that calls ``function`` (``math.exp``, ``max``) on the arguments."""
    return lambda args, dtype: f"{function}({', '.join(args)})"


def extreme(lowest: bool, type_name: Callable[[np.dtype], str], infinity: str) -> FunctionSource:
    """A function table's entry for the least (greatest) value of the dtype, where a max (min) starts:
    ``infinity`` (the backend's spelling, ``np.inf``) for floats, the integer limits otherwise; the
    same on every backend but for its type and infinity spellings."""
    def source(args: Sequence[str], dtype: np.dtype) -> str:
        if dtype.kind == "f":
            return f"{type_name(dtype)}({'-' if lowest else ''}{infinity})"
        if dtype.kind == "b":
            return "False" if lowest else "True"
        info = np.iinfo(dtype)
        return f"{type_name(dtype)}({info.min if lowest else info.max})"
    return source


__all__ = ["Dialect", "FunctionSource", "call", "extreme", "render"]
