"""The LLVM CPU backend's code for each function of the ops' scalar vocabulary (``jitgrad.ops.scalar``),
chosen as the numba CPU backend's (``numba_cpu/scalar_functions.py``) is, so that both compute the
same values:

- float32 ``exp`` and ``tanh`` are the same rational and polynomial approximations as numba's
  ``exp_float32`` and ``tanh_float32``, from the same constants (``backends/float32_functions.py``),
  written here as IR functions LLVM inlines and vectorizes;
- ``sqrt``, ``log``, ``sin``, ``cos`` and float64 ``exp`` are LLVM's intrinsics, and ``tanh``,
  ``tan``, ``log1p``, ``expm1`` and ``erf`` the C library's, as numba lowers ``math``'s;
- ``max``/``min`` are Python's (``max(a, b)`` is ``b if b > a else a``), as numba compiles them.

Integer ``//``, ``%`` and ``**`` and float ``//`` and ``%`` are not here: a graph using them goes to
numba (its helpers raise ZeroDivisionError as eager does).
"""
from __future__ import annotations

from typing import Callable, Sequence

import numpy as np

from .. import float32_functions as f32
from .expressions import BOOL, Value, compare, convert, negate, select
from .function_writer import FunctionWriter, float_literal, literal, value_type

FunctionCode = Callable[[FunctionWriter, Sequence[Value], np.dtype], Value]
FLOAT32, FLOAT64 = np.dtype(np.float32), np.dtype(np.float64)


def _c(value: float) -> str:
    return float_literal(float(value), FLOAT32)


def _horner(result: str, coefficients: Sequence[float], x: str, lines: list[str]) -> str:
    """``((c[-1] * x + c[-2]) * x + ...) + c[0]`` in float32, as numba's intrinsics compute it."""
    value = _c(coefficients[-1])
    for k, c in enumerate(reversed(coefficients[:-1])):
        lines.append(f"  %{result}{k}m = fmul float {value}, {x}")
        lines.append(f"  %{result}{k} = fadd float %{result}{k}m, {_c(c)}")
        value = f"%{result}{k}"
    return value


def _tanh_float32() -> str:
    lines = ["define internal float @jitgrad_tanh_float32(float %x) alwaysinline {",
             f"  %low = fcmp olt float %x, {_c(-f32.TANH_CLAMP)}",
             f"  %a = select i1 %low, float {_c(-f32.TANH_CLAMP)}, float %x",
             f"  %high = fcmp olt float {_c(f32.TANH_CLAMP)}, %a",
             f"  %c = select i1 %high, float {_c(f32.TANH_CLAMP)}, float %a",
             "  %t = fmul float %c, %c"]
    p = _horner("p", f32.TANH_P, "%t", lines)
    q = _horner("q", f32.TANH_Q, "%t", lines)
    lines += [f"  %cp = fmul float %c, {p}", f"  %r = fdiv float %cp, {q}",
              "  %ax = call float @llvm.fabs.f32(float %x)",
              f"  %saturated = fcmp oge float %ax, {_c(f32.TANH_SATURATED)}",
              "  %one = call float @llvm.copysign.f32(float 1.0, float %x)",
              "  %result = select i1 %saturated, float %one, float %r", "  ret float %result", "}"]
    return "\n".join(lines)


def _fused_horner(result: str, coefficients: Sequence[float], x: str, lines: list[str]) -> str:
    """``_horner`` with each step one ``llvm.fma`` (rounded once), as numba's ``exp_float32`` does."""
    value = _c(coefficients[-1])
    for k, c in enumerate(reversed(coefficients[:-1])):
        lines.append(f"  %{result}{k} = call float @llvm.fma.f32(float {value}, float {x}, float {_c(c)})")
        value = f"%{result}{k}"
    return value


def _exp_float32() -> str:
    e2, e3, e4, e5, e6, e7 = f32.EXP_TAYLOR
    lines = ["define internal float @jitgrad_exp_float32(float %x) alwaysinline {",
             f"  %low = fcmp olt float %x, {_c(f32.EXP_BELOW_ZERO)}",
             f"  %a = select i1 %low, float {_c(f32.EXP_BELOW_ZERO)}, float %x",
             f"  %high = fcmp olt float {_c(f32.EXP_ABOVE_INF)}, %a",
             f"  %c = select i1 %high, float {_c(f32.EXP_ABOVE_INF)}, float %a",
             f"  %rounded = call float @llvm.fma.f32(float %c, float {_c(f32.EXP_LOG2E)}, float {_c(f32.EXP_ROUNDER)})",
             "  %bits = bitcast float %rounded to i32", f"  %n = sub i32 %bits, {f32.EXP_ROUNDER_BITS}",
             "  %k = sitofp i32 %n to float",
             f"  %rh = call float @llvm.fma.f32(float %k, float {_c(-f32.EXP_LN2_HIGH)}, float %c)",
             f"  %r = call float @llvm.fma.f32(float %k, float {_c(-f32.EXP_LN2_LOW)}, float %rh)"]
    p = _fused_horner("p", (1.0, 1.0, e2, e3, e4, e5, e6, e7), "%r", lines)
    lines += ["  %half = ashr i32 %n, 1", "  %rest = sub i32 %n, %half",
              "  %biased1 = add i32 %half, 127", "  %bits1 = shl i32 %biased1, 23",
              "  %factor1 = bitcast i32 %bits1 to float",
              "  %biased2 = add i32 %rest, 127", "  %bits2 = shl i32 %biased2, 23",
              "  %factor2 = bitcast i32 %bits2 to float",
              f"  %pp = fmul float {p}, %factor1", "  %v = fmul float %pp, %factor2",
              "  %nan = fcmp une float %x, %x", "  %result = select i1 %nan, float %x, float %v",
              "  ret float %result", "}"]
    return "\n".join(lines)


_NEEDED = {"llvm.fabs.f32": "float", "llvm.copysign.f32": "float, float", "llvm.fma.f32": "float, float, float"}


def _float_argument(w: FunctionWriter, value: Value) -> Value:
    """A ``math`` function's argument: a float as it is, an integer or bool as a float64 (numba's)."""
    return value if value.dtype.kind == "f" else convert(w, value, FLOAT64)


def _call(w: FunctionWriter, symbol: str, argument: Value, declaration: str) -> Value:
    w.declare(symbol, declaration)
    flags = w.float_flags
    return Value(w.assign("call", f"call {flags}{argument.type} @{symbol}({argument.type} {argument.name})"),
                 argument.dtype)


def intrinsic(name: str) -> FunctionCode:
    """LLVM's ``llvm.<name>.f32/f64`` of a float argument."""
    def code(w: FunctionWriter, args: Sequence[Value], dtype: np.dtype) -> Value:
        x = _float_argument(w, args[0])
        symbol = f"llvm.{name}.f{x.dtype.itemsize * 8}"
        return _call(w, symbol, x, f"declare {x.type} @{symbol}({x.type})")
    return code


def c_library(name: str) -> FunctionCode:
    """The C library's ``name`` (``namef`` for a float32)."""
    def code(w: FunctionWriter, args: Sequence[Value], dtype: np.dtype) -> Value:
        x = _float_argument(w, args[0])
        symbol = name + ("f" if x.dtype == FLOAT32 else "")
        return _call(w, symbol, x, f"declare {x.type} @{symbol}({x.type})")
    return code


def _float32_or(own: str, definition: Callable[[], str], general: FunctionCode) -> FunctionCode:
    """The backend's own float32 function where the compute dtype is float32, ``general`` otherwise."""
    def code(w: FunctionWriter, args: Sequence[Value], dtype: np.dtype) -> Value:
        if dtype != FLOAT32:
            return general(w, args, dtype)
        x = convert(w, args[0], FLOAT32)
        for symbol, arguments in _NEEDED.items():   # what the two definitions call
            w.declare(symbol, f"declare float @{symbol}({arguments})")
        w.declare(own, definition())
        return Value(w.assign("call", f"call float @{own}(float {x.name})"), FLOAT32)
    return code


def _abs(w: FunctionWriter, args: Sequence[Value], dtype: np.dtype) -> Value:
    x = args[0]
    if x.dtype.kind == "f":
        return intrinsic("fabs")(w, args, dtype)
    if x.dtype == BOOL or x.dtype.kind == "u":
        return x
    return select(w, compare(w, "lt", x, Value("0", x.dtype)), negate(w, x), x)


def _extreme_of_two(comparison: str) -> FunctionCode:
    """Python's ``max``/``min`` of two: the second where it compares ``gt``/``lt`` to the first."""
    def code(w: FunctionWriter, args: Sequence[Value], dtype: np.dtype) -> Value:
        a, b = args
        return select(w, compare(w, comparison, b, a), b, a)
    return code


def _sign(w: FunctionWriter, args: Sequence[Value], dtype: np.dtype) -> Value:
    """numpy's sign: 1, -1, or the value itself (a zero, or NaN)."""
    x = args[0]
    if x.dtype == BOOL:
        return x
    zero, one = Value(literal(0, x.dtype), x.dtype), Value(literal(1, x.dtype), x.dtype)
    minus = Value(literal(-1, x.dtype), x.dtype) if x.dtype.kind != "u" else zero
    negative = select(w, compare(w, "lt", x, zero), minus, x)
    return select(w, compare(w, "gt", x, zero), one, negative)


def _isfinite(w: FunctionWriter, args: Sequence[Value], dtype: np.dtype) -> Value:
    x = args[0]
    if x.dtype.kind != "f":
        return Value("true", BOOL)
    magnitude = intrinsic("fabs")(w, [x], x.dtype)
    infinity = Value("0x7FF0000000000000", x.dtype)
    return Value(w.assign("finite", f"fcmp one {x.type} {magnitude.name}, {infinity.name}"), BOOL)


def _pow(w: FunctionWriter, args: Sequence[Value], dtype: np.dtype) -> Value:
    a, b = args
    if a.dtype.kind != "f" and b.dtype.kind != "f":
        raise NotImplementedError("integer power (numba's power_int)")
    target = np.promote_types(a.dtype, b.dtype)
    a, b = convert(w, a, target), convert(w, b, target)
    symbol = f"llvm.pow.f{target.itemsize * 8}"
    w.declare(symbol, f"declare {a.type} @{symbol}({a.type}, {a.type})")
    return Value(w.assign("pow", f"call {w.float_flags}{a.type} @{symbol}({a.type} {a.name}, {b.type} {b.name})"),
                 target)


def _extreme(lowest: bool) -> FunctionCode:
    def code(w: FunctionWriter, args: Sequence[Value], dtype: np.dtype) -> Value:
        if dtype.kind == "f":
            return Value(float_literal(-np.inf if lowest else np.inf, dtype), dtype)
        if dtype == BOOL:
            return Value("false" if lowest else "true", BOOL)
        info = np.iinfo(dtype)
        return Value(str(info.min if lowest else info.max), dtype)
    return code


def _not_here(name: str) -> FunctionCode:
    def code(w: FunctionWriter, args: Sequence[Value], dtype: np.dtype) -> Value:
        raise NotImplementedError(f"{name} (numba's checked helpers)")
    return code


FUNCTIONS: dict[str, FunctionCode] = {
    "exp": _float32_or("jitgrad_exp_float32", _exp_float32, intrinsic("exp")),
    "tanh": _float32_or("jitgrad_tanh_float32", _tanh_float32, c_library("tanh")),
    **{name: intrinsic(name) for name in ("log", "sqrt", "sin", "cos")},
    **{name: c_library(name) for name in ("log1p", "expm1", "tan", "erf")},
    "isfinite": _isfinite, "sign": _sign, "abs": _abs,
    "max": _extreme_of_two("gt"), "min": _extreme_of_two("lt"),
    "pow": _pow, "floordiv": _not_here("floor division"), "mod": _not_here("remainder"),
    "lowest": _extreme(True), "highest": _extreme(False),
}

__all__ = ["FUNCTIONS", "c_library", "intrinsic", "value_type"]
