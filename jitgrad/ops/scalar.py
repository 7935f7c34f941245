"""The backend-neutral language an elementwise op or a reduction writes its lowering in: expressions
over scalars, built with Python's operators and the functions here.

An op entry's ``lower=`` is the maths of the op on one element (``lambda self: 1.0 / (1.0 + exp(-self))``),
not code for one backend: a backend writes the expression as its own source, mapping each name of
``FUNCTIONS`` to its code (the numba CPU backend's ``exp`` of a float32 is its vectorizable
``exp_float32``; a GPU backend's would be its own). Constants are cast to the node's *compute* dtype
(its result's, or for a comparison that of its first floating input) so float32 code stays float32.

The vocabulary is closed: ``OPERATORS`` (arithmetic, comparisons, selection, logic, casts: written
the same by every backend whose kernels are Python) and ``FUNCTIONS`` (which each backend maps).
``and``/``or``/``not`` and ``if`` cannot be overloaded, so they are ``logical_and``, ``logical_or``,
``logical_not`` and ``where``; comparisons are the operators (``x != x`` holds for NaN).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Written with Python's syntax by any backend whose kernels are Python source.
OPERATORS = frozenset({"add", "sub", "mul", "truediv", "neg", "lt", "le", "gt", "ge", "eq", "ne",
                       "where", "logical_and", "logical_or", "logical_not", "truth", "cast"})
# Each backend maps every one of these to its own code.
FUNCTIONS = frozenset({"exp", "exp2", "log", "log1p", "expm1", "sqrt", "sin", "cos", "tan", "tanh", "erf", "atan",
                       "sign", "abs", "isfinite", "max", "min", "floordiv", "mod", "fmod", "pow", "lowest", "highest"})

COMPUTE, RESULT = "compute", "result"  # the dtypes a cast can target: the node's compute or result dtype


class Expr:
    """A scalar expression: Python's arithmetic and comparison operators build bigger ones."""

    __slots__ = ()

    def __add__(self, other: Any) -> Expr: return Apply("add", (self, expr(other)))          # noqa: E704
    def __radd__(self, other: Any) -> Expr: return Apply("add", (expr(other), self))         # noqa: E704
    def __sub__(self, other: Any) -> Expr: return Apply("sub", (self, expr(other)))          # noqa: E704
    def __rsub__(self, other: Any) -> Expr: return Apply("sub", (expr(other), self))         # noqa: E704
    def __mul__(self, other: Any) -> Expr: return Apply("mul", (self, expr(other)))          # noqa: E704
    def __rmul__(self, other: Any) -> Expr: return Apply("mul", (expr(other), self))         # noqa: E704
    def __truediv__(self, other: Any) -> Expr: return Apply("truediv", (self, expr(other)))  # noqa: E704
    def __rtruediv__(self, other: Any) -> Expr: return Apply("truediv", (expr(other), self))  # noqa: E704
    def __floordiv__(self, other: Any) -> Expr: return Apply("floordiv", (self, expr(other)))  # noqa: E704
    def __mod__(self, other: Any) -> Expr: return Apply("mod", (self, expr(other)))          # noqa: E704
    def __pow__(self, other: Any) -> Expr: return Apply("pow", (self, expr(other)))          # noqa: E704
    def __neg__(self) -> Expr: return Apply("neg", (self,))                                  # noqa: E704
    def __lt__(self, other: Any) -> Expr: return Apply("lt", (self, expr(other)))            # noqa: E704
    def __le__(self, other: Any) -> Expr: return Apply("le", (self, expr(other)))            # noqa: E704
    def __gt__(self, other: Any) -> Expr: return Apply("gt", (self, expr(other)))            # noqa: E704
    def __ge__(self, other: Any) -> Expr: return Apply("ge", (self, expr(other)))            # noqa: E704
    def __eq__(self, other: Any) -> Expr: return Apply("eq", (self, expr(other)))  # type: ignore  # noqa: E704
    def __ne__(self, other: Any) -> Expr: return Apply("ne", (self, expr(other)))  # type: ignore  # noqa: E704

    __hash__ = object.__hash__

    def __bool__(self) -> bool:
        raise TypeError("a scalar expression has no truth value: use where(), logical_and() or logical_or()")


@dataclass(frozen=True, eq=False)
class Var(Expr):
    """A value the backend supplies: an input's element, a Python number of the node, an accumulator.
    ``name`` is the backend's own source for it."""

    name: str


@dataclass(frozen=True, eq=False)
class Const(Expr):
    """A number written in the lowering (``1.0`` in ``1.0 / x``), of the compute dtype; a bool stays one."""

    value: int | float | bool


@dataclass(frozen=True, eq=False)
class Apply(Expr):
    """An operator or function of ``OPERATORS`` | ``FUNCTIONS`` applied to ``args``; a cast's target
    (``COMPUTE`` or ``RESULT``) is its ``param``."""

    fn: str
    args: tuple[Expr, ...]
    param: str | None = None


def expr(value: Any) -> Expr:
    """``value`` as an expression: a Python number or bool becomes a ``Const``."""
    if isinstance(value, Expr):
        return value
    if isinstance(value, (bool, int, float)):
        return Const(value)
    raise TypeError(f"a scalar expression cannot hold {value!r}")


def _function(name: str):
    def apply(*args: Any) -> Expr:
        return Apply(name, tuple(expr(a) for a in args))
    apply.__name__ = apply.__qualname__ = name
    apply.__doc__ = f"The backend's ``{name}`` of its arguments."
    return apply


# exp2 is its own function, not exp(x * ln 2): in float32 the rounded product put 2^100 some 30 ulps off
exp, exp2, log, log1p, expm1, sqrt = (_function(n) for n in ("exp", "exp2", "log", "log1p", "expm1", "sqrt"))
sin, cos, tan, tanh, erf, atan = (_function(n) for n in ("sin", "cos", "tan", "tanh", "erf", "atan"))
sign, isfinite = _function("sign"), _function("isfinite")
abs, max, min = _function("abs"), _function("max"), _function("min")  # noqa: A001 - the builtins' names
# C's fmod, the remainder with the sign of the dividend: every backend has one, exact (the floored ``%``
# corrected by the divisor where the signs differ rounded ``b - |a|`` to ``b``: fmod(-2.5, 1e300) was 0)
fmod = _function("fmod")
truth, logical_not = _function("truth"), _function("logical_not")
logical_and, logical_or = _function("logical_and"), _function("logical_or")
LOWEST, HIGHEST = Apply("lowest", ()), Apply("highest", ())  # the least and greatest value of the dtype


def where(condition: Any, then: Any, otherwise: Any) -> Expr:
    """``then`` where ``condition`` holds, else ``otherwise`` (a select: both are cheap scalars)."""
    return Apply("where", (expr(condition), expr(then), expr(otherwise)))


def cast(value: Any, to: str = COMPUTE) -> Expr:
    """``value`` converted to the node's compute dtype (``COMPUTE``) or result dtype (``RESULT``)."""
    return Apply("cast", (expr(value),), to)


__all__ = ["COMPUTE", "FUNCTIONS", "HIGHEST", "LOWEST", "OPERATORS", "RESULT", "Apply", "Const", "Expr", "Var",
           "abs", "atan", "cast", "cos", "erf", "exp", "exp2", "expm1", "expr", "fmod", "isfinite", "log", "log1p",
           "logical_and", "logical_not", "logical_or", "max", "min", "sign", "sin", "sqrt", "tan", "tanh", "truth",
           "where"]
