"""Writing the ops' backend-neutral scalar expressions (``jitgrad.ops.scalar``) as LLVM instructions.

The numba backend writes an expression as Python source and numba types it; here every value is
typed as it is written (``Value``: an SSA name and a numpy dtype), with numba's rules for what
numba would have computed from the same source: constants in the node's compute dtype (a bool stays
a bool), arithmetic on mixed types in numpy's promoted type, ``/`` of integers in float64,
comparisons giving a bool, ``where`` a select, and a ``cast`` to the node's compute or result dtype.
The functions of the vocabulary come from ``scalar_functions.FUNCTIONS``; one it lacks, and integer
``//``, ``%`` and ``**`` (numba raises ZeroDivisionError there, through helpers this backend does not
have), are ``NotImplementedError``: the graph goes to numba.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np

from ...ops.scalar import COMPUTE, Apply, Const, Expr, Var
from .function_writer import FunctionWriter, literal, value_type

_FLOAT_OPS = {"add": "fadd", "sub": "fsub", "mul": "fmul", "truediv": "fdiv"}
_INT_OPS = {"add": "add", "sub": "sub", "mul": "mul"}
_FLOAT_COMPARE = {"lt": "olt", "le": "ole", "gt": "ogt", "ge": "oge", "eq": "oeq", "ne": "une"}
_SIGNED_COMPARE = {"lt": "slt", "le": "sle", "gt": "sgt", "ge": "sge", "eq": "eq", "ne": "ne"}
_UNSIGNED_COMPARE = {"lt": "ult", "le": "ule", "gt": "ugt", "ge": "uge", "eq": "eq", "ne": "ne"}
BOOL = np.dtype(np.bool_)


@dataclass(frozen=True)
class Value:
    """A scalar in a register: its SSA name (or a constant) and its numpy dtype."""

    name: str
    dtype: np.dtype

    @property
    def type(self) -> str:
        return value_type(self.dtype)


def convert(w: FunctionWriter, value: Value, dtype: np.dtype) -> Value:
    """``value`` as ``dtype``, as numpy converts a scalar (``np.float32(x)``, ``np.int64(x)``). A float
    becomes an integer narrower than int32 through int32, as numpy's and PyTorch's casts do (300.7 as
    int8 is 44, -2.7 as uint8 254): a direct ``fptosi`` to i8 is poison out of range, which vectorized
    loops had written as a saturating pack (127 and 0)."""
    dtype = np.dtype(dtype)
    source = value.dtype
    if source == dtype:
        return value
    target = value_type(dtype)
    if dtype == BOOL:
        return truth(w, value)
    if source == BOOL:
        instruction = "uitofp" if dtype.kind == "f" else "zext"
    elif source.kind == "f" and dtype.kind == "f":
        instruction = "fpext" if dtype.itemsize > source.itemsize else "fptrunc"
    elif source.kind == "f" and dtype.itemsize < 4:
        return convert(w, convert(w, value, np.dtype(np.int32)), dtype)
    elif source.kind == "f":
        instruction = "fptosi" if dtype.kind == "i" else "fptoui"
    elif dtype.kind == "f":
        instruction = "sitofp" if source.kind == "i" else "uitofp"
    elif dtype.itemsize == source.itemsize:
        return Value(value.name, dtype)
    elif dtype.itemsize < source.itemsize:
        instruction = "trunc"
    else:
        instruction = "sext" if source.kind == "i" else "zext"
    return Value(w.assign("cv", f"{instruction} {value.type} {value.name} to {target}"), dtype)


def truth(w: FunctionWriter, value: Value) -> Value:
    """``bool(value)``: nonzero (a NaN is true, as in Python)."""
    if value.dtype == BOOL:
        return value
    if value.dtype.kind == "f":
        return Value(w.assign("nz", f"fcmp {w.float_flags}une {value.type} {value.name}, {literal(0, value.dtype)}"),
                     BOOL)
    return Value(w.assign("nz", f"icmp ne {value.type} {value.name}, 0"), BOOL)


def promoted(w: FunctionWriter, a: Value, b: Value) -> tuple[Value, Value]:
    """Both operands in numpy's promoted type of the two."""
    dtype = np.promote_types(a.dtype, b.dtype)
    return convert(w, a, dtype), convert(w, b, dtype)


def arithmetic(w: FunctionWriter, fn: str, a: Value, b: Value) -> Value:
    if a.dtype == BOOL and b.dtype == BOOL:   # Python's bools add as integers
        a, b = convert(w, a, np.dtype(np.int64)), convert(w, b, np.dtype(np.int64))
    elif a.dtype == BOOL:
        a = convert(w, a, b.dtype)
    elif b.dtype == BOOL:
        b = convert(w, b, a.dtype)
    if fn == "truediv" and a.dtype.kind != "f" and b.dtype.kind != "f":
        a, b = convert(w, a, np.dtype(np.float64)), convert(w, b, np.dtype(np.float64))
    a, b = promoted(w, a, b)
    if a.dtype.kind == "f":
        return Value(w.assign(fn, f"{_FLOAT_OPS[fn]} {w.float_flags}{a.type} {a.name}, {b.name}"), a.dtype)
    return Value(w.assign(fn, f"{_INT_OPS[fn]} {a.type} {a.name}, {b.name}"), a.dtype)


def compare(w: FunctionWriter, fn: str, a: Value, b: Value) -> Value:
    a, b = promoted(w, a, b)
    if a.dtype.kind == "f":
        return Value(w.assign(fn, f"fcmp {w.float_flags}{_FLOAT_COMPARE[fn]} {a.type} {a.name}, {b.name}"), BOOL)
    table = _SIGNED_COMPARE if a.dtype.kind == "i" else _UNSIGNED_COMPARE
    return Value(w.assign(fn, f"icmp {table[fn]} {a.type} {a.name}, {b.name}"), BOOL)


def select(w: FunctionWriter, condition: Value, then: Value, otherwise: Value) -> Value:
    then, otherwise = promoted(w, then, otherwise)
    condition = truth(w, condition)
    return Value(w.assign("sel", f"select i1 {condition.name}, {then.type} {then.name}, {otherwise.type} "
                                 f"{otherwise.name}"), then.dtype)


def negate(w: FunctionWriter, a: Value) -> Value:
    if a.dtype == BOOL:
        raise NotImplementedError("negation of a bool")
    if a.dtype.kind == "f":
        return Value(w.assign("neg", f"fneg {w.float_flags}{a.type} {a.name}"), a.dtype)
    return Value(w.assign("neg", f"sub {a.type} 0, {a.name}"), a.dtype)


class ExpressionWriter:
    """Writes scalar expressions into ``w``; ``variables`` gives each ``Var``'s value by its name."""

    def __init__(self, w: FunctionWriter, variables: Mapping[str, Value]) -> None:
        self.w = w
        self.variables = variables

    def write(self, expression: Expr, compute: np.dtype, result: np.dtype) -> Value:
        """``expression``'s value; constants and ``cast``s take the ``compute`` or ``result`` dtype."""
        from .scalar_functions import FUNCTIONS

        w = self.w
        compute, result = np.dtype(compute), np.dtype(result)

        def go(e: Expr) -> Value:
            if isinstance(e, Var):
                return self.variables[e.name]
            if isinstance(e, Const):
                dtype = BOOL if isinstance(e.value, bool) else compute
                return Value(literal(e.value, dtype), dtype)
            if not isinstance(e, Apply):
                raise TypeError(f"not a scalar expression: {e!r}")
            if e.fn == "cast":
                return convert(w, go(e.args[0]), compute if e.param == COMPUTE else result)
            if e.fn in ("logical_and", "logical_or"):
                a, b = truth(w, go(e.args[0])), truth(w, go(e.args[1]))
                return Value(w.assign(e.fn[8:], f"{e.fn[8:]} i1 {a.name}, {b.name}"), BOOL)
            args = [go(a) for a in e.args]
            if e.fn in _FLOAT_OPS:
                return arithmetic(w, e.fn, *args)
            if e.fn in _FLOAT_COMPARE:
                return compare(w, e.fn, *args)
            if e.fn == "neg":
                return negate(w, args[0])
            if e.fn == "truth":
                return truth(w, args[0])
            if e.fn == "logical_not":
                return Value(w.assign("not", f"xor i1 {truth(w, args[0]).name}, true"), BOOL)
            if e.fn == "where":
                return select(w, *args)
            if e.fn not in FUNCTIONS:
                raise NotImplementedError(f"the LLVM CPU backend has no code for the scalar function {e.fn!r}")
            return FUNCTIONS[e.fn](w, args, compute)
        return go(expression)


__all__ = ["BOOL", "ExpressionWriter", "Value", "arithmetic", "compare", "convert", "negate", "promoted", "select",
           "truth"]
