"""Python numbers as graph inputs: a learning rate or a step count that changes between calls.

A traced function is given a ``SymbolicNumber`` in place of such a number. Arithmetic with other
numbers records a ``NumberOp`` node (``lr * 0.5``, ``0.9 ** step``) whose value follows Python's own
rules (float64, ints stay ints); a tensor op reading it records the number's node as its operand,
while the op's forward sees the real value, so every dtype and value is eager's. A node of either
kind carries ``meta["python_number"]``.

A comparison (``if momentum != 0``, ``lr > 0.1``, ``if lr:``) gives the Python bool of this trace's
values and is recorded as a *predicate*: a ``NumberOp`` node of the comparison and the outcome the
trace followed. The number stays an input; a call whose numbers compare otherwise runs another
program, traced for that outcome (``compile/decorator.py``), so a schedule that changes a number
without crossing the comparison never recompiles.

Anything else that needs the value as a Python value (``float()``, ``math.sqrt``, ``range()``, a numpy
function, an op attribute such as ``clamp(min=lr)``) cannot stay symbolic: it raises ``Specialize``,
naming the inputs the number came from, and the compiled function traces again with those numbers as
guarded constants. The request is also kept on the recorder, so that code catching every exception
cannot hide it.
"""
from __future__ import annotations

import operator
from typing import Any, Callable

import numpy as np

from ..ops.registry import SymbolicValue
from ..tensor import Tensor


class Specialize(RuntimeError):
    """A symbolic number was needed as a Python value; ``roots`` names the graph inputs it depends on."""

    def __init__(self, roots: frozenset[str], operation: str, where: str | None) -> None:
        super().__init__(f"{operation} needs the value of {', '.join(sorted(roots))}"
                         + (f" at {where}" if where else ""))
        self.roots, self.operation, self.where = roots, operation, where


class NumberOp:
    """An arithmetic operation on Python numbers: a call target of the IR besides registry ops and
    ``tuple_item``. Its value is what Python computes; a compiled function evaluates these nodes in
    Python before its kernels run (``hoist_numbers``), so no backend lowers them."""

    def __init__(self, name: str, fn: Callable[..., Any], symbol: str) -> None:
        self.name, self.fn, self.symbol = name, fn, symbol

    def __call__(self, *args: Any) -> Any:
        return self.fn(*args)

    def source(self, operands: list[str]) -> str:
        """Python source applying the operation to ``operands`` (source texts), each in parentheses
        unless it is a name: a negative literal base read ``-2.0 ** v`` as ``-(2.0 ** v)``, so
        ``(-2.0) ** v`` gave -4.0 at ``v = 2.0``, silently, until 2026-11-29."""
        operands = [o if o.isidentifier() else f"({o})" for o in operands]
        if len(operands) == 1:
            return f"abs({operands[0]})" if self.name == "number_abs" else f"({self.symbol}{operands[0]})"
        return f"({operands[0]} {self.symbol} {operands[1]})"

    def __repr__(self) -> str:
        return f"<number op {self.name}>"


NUMBER_OPS: dict[str, NumberOp] = {op.name: op for op in (
    NumberOp("number_add", operator.add, "+"), NumberOp("number_sub", operator.sub, "-"),
    NumberOp("number_mul", operator.mul, "*"), NumberOp("number_truediv", operator.truediv, "/"),
    NumberOp("number_floordiv", operator.floordiv, "//"), NumberOp("number_mod", operator.mod, "%"),
    NumberOp("number_pow", operator.pow, "**"), NumberOp("number_neg", operator.neg, "-"),
    NumberOp("number_pos", operator.pos, "+"), NumberOp("number_abs", abs, "abs"),
    NumberOp("number_lt", operator.lt, "<"), NumberOp("number_le", operator.le, "<="),
    NumberOp("number_gt", operator.gt, ">"), NumberOp("number_ge", operator.ge, ">="),
    NumberOp("number_eq", operator.eq, "=="), NumberOp("number_ne", operator.ne, "!="))}


def is_number_op(target: Any) -> bool:
    return isinstance(target, NumberOp) and NUMBER_OPS.get(target.name) is target


def number_meta(value: Any) -> dict[str, Any]:
    """A Python number's node metadata: 0-d, float64 or int64, and the ``python_number`` mark."""
    return {"shape": (), "dtype": np.dtype(np.float64 if isinstance(value, float) else np.int64),
            "python_number": True}


_PLAIN = (int, float)


class SymbolicNumber(SymbolicValue):
    """A Python int or float standing for a graph input (or a value computed from inputs) in a trace.
    ``value`` is the number it has in this trace; ``node`` its IR node; ``roots`` the inputs it depends
    on; ``recorder`` the tracer (``number_op(op, operands)``, ``predicate(op, operands)`` and
    ``specialize(number, operation)``)."""

    __slots__ = ("node", "roots", "recorder")

    def __init__(self, value: int | float, node: Any, roots: frozenset[str], recorder: Any) -> None:
        self.value, self.node, self.roots, self.recorder = value, node, roots, recorder

    # ---- arithmetic: recorded -------------------------------------------------------------------------
    def _apply(self, name: str, *operands: Any) -> Any:
        for operand in operands:  # a bool or a numpy number takes its own path (and specializes)
            if not isinstance(operand, SymbolicNumber) and type(operand) not in _PLAIN:
                return NotImplemented
        if name == "number_pow" and all(isinstance(_value(o), int) for o in operands):
            self.recorder.specialize(self, "an integer power of an integer")  # int or float: by value
        if name == "number_pow" and type(_value(operands[1])) is not int:
            self._real_power(*operands)
        return self.recorder.number_op(NUMBER_OPS[name], operands)

    def _real_power(self, base: Any, exponent: Any) -> None:
        """``base ** exponent`` is complex in Python for a negative base and an exponent that is not a
        whole number (``(1 - t / T) ** 0.5`` past ``T``), where eager's tensor op then raises; a kernel
        took its real part, silently, until 2026-11-29. The sign of the base (and, for a negative one,
        whether the exponent is whole) is recorded as predicates, so a call that changes them traces
        again."""
        if isinstance(base, SymbolicNumber):
            negative = self.recorder.predicate(NUMBER_OPS["number_lt"], (base, 0))
        else:
            negative = base < 0
        if negative and isinstance(exponent, SymbolicNumber):
            self.recorder.predicate(NUMBER_OPS["number_eq"], (exponent % 1, 0))

    def __add__(self, other): return self._apply("number_add", self, other)       # noqa: E704
    def __radd__(self, other): return self._apply("number_add", other, self)      # noqa: E704
    def __sub__(self, other): return self._apply("number_sub", self, other)       # noqa: E704
    def __rsub__(self, other): return self._apply("number_sub", other, self)      # noqa: E704
    def __mul__(self, other): return self._apply("number_mul", self, other)       # noqa: E704
    def __rmul__(self, other): return self._apply("number_mul", other, self)      # noqa: E704
    def __truediv__(self, other): return self._apply("number_truediv", self, other)    # noqa: E704
    def __rtruediv__(self, other): return self._apply("number_truediv", other, self)   # noqa: E704
    def __floordiv__(self, other): return self._apply("number_floordiv", self, other)  # noqa: E704
    def __rfloordiv__(self, other): return self._apply("number_floordiv", other, self)  # noqa: E704
    def __mod__(self, other): return self._apply("number_mod", self, other)       # noqa: E704
    def __rmod__(self, other): return self._apply("number_mod", other, self)      # noqa: E704
    def __pow__(self, other): return self._apply("number_pow", self, other)       # noqa: E704
    def __rpow__(self, other): return self._apply("number_pow", other, self)      # noqa: E704
    def __neg__(self): return self._apply("number_neg", self)                     # noqa: E704
    def __pos__(self): return self._apply("number_pos", self)                     # noqa: E704
    def __abs__(self): return self._apply("number_abs", self)                     # noqa: E704

    # ---- the value itself: a specialization ----------------------------------------------------------
    def _needs_value(self, operation: str) -> Any:
        self.recorder.specialize(self, operation)

    def __float__(self): return self._needs_value("float()")        # noqa: E704
    def __int__(self): return self._needs_value("int()")            # noqa: E704
    def __index__(self): return self._needs_value("use as an int (range(), an index, a size)")  # noqa: E704
    def __bool__(self): return self.recorder.predicate(NUMBER_OPS["number_ne"], (self, 0))  # noqa: E704
    def __complex__(self): return self._needs_value("complex()")    # noqa: E704
    def __round__(self, ndigits=None): return self._needs_value("round()")  # noqa: E704
    def __trunc__(self): return self._needs_value("math.trunc()")   # noqa: E704
    def __floor__(self): return self._needs_value("math.floor()")   # noqa: E704
    def __ceil__(self): return self._needs_value("math.ceil()")     # noqa: E704
    def __hash__(self): return self._needs_value("hashing (a dict key, a set)")  # noqa: E704
    def __array__(self, *args, **kwargs): return self._needs_value("a numpy function")  # noqa: E704

    def _compare(self, other: Any, name: str) -> Any:
        if not isinstance(other, SymbolicNumber) and type(other) not in _PLAIN:
            return NotImplemented  # a bool or a numpy number: its own path, which asks for the value
        return self.recorder.predicate(NUMBER_OPS[name], (self, other))

    def __eq__(self, other): return self._compare(other, "number_eq")   # noqa: E704
    def __ne__(self, other): return self._compare(other, "number_ne")   # noqa: E704
    def __lt__(self, other): return self._compare(other, "number_lt")   # noqa: E704
    def __le__(self, other): return self._compare(other, "number_le")   # noqa: E704
    def __gt__(self, other): return self._compare(other, "number_gt")   # noqa: E704
    def __ge__(self, other): return self._compare(other, "number_ge")   # noqa: E704

    def __divmod__(self, other): return self // other, self % other      # noqa: E704 - Python's own pair
    def __rdivmod__(self, other): return other // self, other % self     # noqa: E704

    # ``isinstance(lr, float)`` and ``isinstance(dim, int)`` answer for the number's type (the guards keep
    # it), as eager code sees it; ``type(lr)`` still names this class, and jitgrad tells the two apart by
    # the type. Before 2026-11-28 such a test was False, silently, once the number was made dynamic.
    __class__ = property(lambda self: type(self.value))  # type: ignore[assignment]

    def __getattr__(self, name: str) -> Any:
        """A method or attribute of the number itself (``lr.is_integer()``, ``t.bit_length()``,
        ``x.real``) needs its value; other names are not there, as on a number."""
        if name in ("value", "node", "roots", "recorder") or name.startswith("_"):
            raise AttributeError(name)   # a slot not set yet, or a protocol's name: simply missing
        if hasattr(self.value, name):
            self._needs_value(f".{name}")
        raise AttributeError(f"'{type(self.value).__name__}' object has no attribute '{name}'")

    def __repr__(self) -> str:
        return repr(self.value)

    def __str__(self) -> str:
        return self._needs_value("str()")

    def __format__(self, spec: str) -> str:
        return self._needs_value("formatting (an f-string, format())")


def integer_checks(op_name: str, numbers: list[SymbolicNumber], args: tuple, output: Any) -> list[tuple]:
    """The predicates (comparison, operands; true in this trace) that keep int run-time ``numbers`` an op
    reads where eager's checks pass. Beside an integer tensor narrower than int64 (or unsigned) a number
    is converted to its dtype, where eager raises ``OverflowError`` out of its range and a kernel wraps
    it around (``int8 + 300`` gave 45, ``int8 == 300`` False); and eager refuses an integer tensor to a
    negative power (``int32 ** -1``), where a kernel gave 0 or 1. A call outside them traces again and
    meets eager's error (until 2026-11-29 it returned the kernel's result, silently)."""
    outputs = output if isinstance(output, tuple) else (output,)
    dtypes = {t._data.dtype for t in (*args, *outputs) if isinstance(t, Tensor)}
    checks: list[tuple] = []
    if op_name == "pow" and len(args) == 2 and isinstance(args[0], Tensor) and args[0]._data.dtype.kind in "iu" \
            and args[1] is numbers[0]:
        checks.append((NUMBER_OPS["number_ge"], (args[1], 0)))
    for dtype in sorted(dtypes, key=str):
        if dtype.kind == "u" or dtype.kind == "i" and dtype.itemsize < 8:
            bounds = np.iinfo(dtype)
            for number in numbers:
                checks.append((NUMBER_OPS["number_ge"], (number, int(bounds.min))))
                checks.append((NUMBER_OPS["number_le"], (number, int(bounds.max))))
    return checks


def _value(operand: Any) -> Any:
    return operand.value if isinstance(operand, SymbolicNumber) else operand


def values_of(operands: tuple) -> tuple:
    return tuple(_value(o) for o in operands)


__all__ = ["NUMBER_OPS", "NumberOp", "Specialize", "SymbolicNumber", "integer_checks", "is_number_op", "number_meta",
           "values_of"]
