"""The LLVM CPU backend's code for each function of the ops' scalar vocabulary (``jitgrad.ops.scalar``),
chosen as the numba CPU backend's (``numba_cpu/scalar_functions.py``) is, so that both compute the
same values:

- float32 and float64 ``exp`` and ``tanh`` are the same approximations as numba's ``exp_float32``,
  ``tanh_float32``, ``exp_float64`` and ``tanh_float64``, from the same constants
  (``backends/float32_functions.py``, ``backends/float64_functions.py``), written here as IR
  functions LLVM inlines and vectorizes; in a loop body that also calls the C library, float64
  ``exp`` and ``tanh`` are the library's, as numba_cpu's ``library_calls_kept`` makes them
  (``library_calls_kept`` here);
- ``sqrt``, ``log``, ``sin``, ``cos``, ``exp2`` (and ``exp`` of another dtype) are LLVM's intrinsics,
  float ``fmod`` is LLVM's ``frem`` (C's fmod, as numba's ``np.fmod``), and
  ``tan``, ``log1p``, ``expm1``, ``erf`` (and ``tanh`` of another dtype) the C library's, as numba
  lowers ``math``'s;
- ``max``/``min`` are Python's (``max(a, b)`` is ``b if b > a else a``), as numba compiles them.

Integer ``//``, ``%``, ``fmod`` and ``**`` and float ``//`` and ``%`` are not here: a graph using them goes to
numba (its helpers raise ZeroDivisionError as eager does).
"""
from __future__ import annotations

import re
from typing import Callable, Sequence

import numpy as np

from .. import float32_functions as f32
from .. import float64_functions as f64
from .expressions import BOOL, Value, arithmetic, compare, convert, negate, promoted, select
from .function_writer import FunctionWriter, float_literal, literal, value_type

FunctionCode = Callable[[FunctionWriter, Sequence[Value], np.dtype], Value]
FLOAT32, FLOAT64 = np.dtype(np.float32), np.dtype(np.float64)


def _c(value: float) -> str:
    return float_literal(float(value), FLOAT32)


def _d(value: float) -> str:
    return float_literal(float(value), FLOAT64)


def _horner(result: str, coefficients: Sequence[float], x: str, lines: list[str], dtype: np.dtype = FLOAT32) -> str:
    """``((c[-1] * x + c[-2]) * x + ...) + c[0]`` in ``dtype``, as numba's intrinsics compute it."""
    kind, constant = ("float", _c) if dtype == FLOAT32 else ("double", _d)
    value = constant(coefficients[-1])
    for k, c in enumerate(reversed(coefficients[:-1])):
        lines.append(f"  %{result}{k}m = fmul {kind} {value}, {x}")
        lines.append(f"  %{result}{k} = fadd {kind} %{result}{k}m, {constant(c)}")
        value = f"%{result}{k}"
    return value


def _reduced_float64(value: str, lines: list[str]) -> str:
    """The lines computing ``2^k`` and ``e^r - 1`` (numba's ``_exp_minus_one_reduced``) for ``value``
    as numba's float64 ``exp`` and ``tanh`` split it; returns the name of ``e^r - 1``. Defines
    ``%rounded`` (``value * log2(e)`` plus the rounder, whose low bits hold ``k``)."""
    lines += [f"  %scaled = fmul double {value}, {_d(f64.LOG2E)}",
              f"  %rounded = fadd double %scaled, {_d(f64.ROUNDER)}",
              f"  %k = fsub double %rounded, {_d(f64.ROUNDER)}",
              f"  %kh = fmul double %k, {_d(f64.LN2_HIGH)}", f"  %rh = fsub double {value}, %kh",
              f"  %kl = fmul double %k, {_d(f64.LN2_LOW)}", "  %r = fsub double %rh, %kl"]
    polynomial = _horner("e", (1.0, *f64.TAYLOR), "%r", lines, FLOAT64)
    lines += [f"  %em1 = fmul double {polynomial}, %r", "  %bits = bitcast double %rounded to i64",
              f"  %n = sub i64 %bits, {f64.ROUNDER_BITS}"]
    return "%em1"


def _tanh_float64() -> str:
    lines = ["define internal double @jitgrad_tanh_float64(double %x) alwaysinline {",
             "  %ax = call double @llvm.fabs.f64(double %x)",
             f"  %below = fcmp olt double %ax, {_d(f64.TANH_SATURATED)}",
             f"  %c = select i1 %below, double %ax, double {_d(f64.TANH_SATURATED)}",
             "  %y = fmul double -2.0, %c"]
    em1 = _reduced_float64("%y", lines)
    lines += ["  %biased = add i64 %n, 1023", "  %powerbits = shl i64 %biased, 52",
              "  %power = bitcast i64 %powerbits to double",
              f"  %pe = fmul double %power, {em1}", "  %pm1 = fsub double %power, 1.0", "  %m = fadd double %pe, %pm1",
              "  %minus = fneg double %m", "  %den = fadd double 2.0, %m", "  %q = fdiv double %minus, %den",
              "  %t = call double @llvm.copysign.f64(double %q, double %x)",
              "  %nan = fcmp une double %x, %x", "  %result = select i1 %nan, double %x, double %t",
              "  ret double %result", "}"]
    return "\n".join(lines)


def _exp_float64() -> str:
    lines = ["define internal double @jitgrad_exp_float64(double %x) alwaysinline {",
             f"  %above = fcmp ogt double %x, {_d(f64.LOWEST)}",
             f"  %a = select i1 %above, double %x, double {_d(f64.LOWEST)}",
             f"  %below = fcmp olt double %a, {_d(f64.HIGHEST)}",
             f"  %c = select i1 %below, double %a, double {_d(f64.HIGHEST)}"]
    em1 = _reduced_float64("%c", lines)
    lines += [f"  %p = fadd double {em1}, 1.0",
              "  %low = icmp slt i64 %n, -1022", "  %high = icmp sgt i64 %n, 1023",
              "  %shift1 = select i1 %high, i64 -1, i64 0", "  %shift = select i1 %low, i64 64, i64 %shift1",
              "  %shifted = add i64 %n, %shift", "  %biased = add i64 %shifted, 1023",
              "  %powerbits = shl i64 %biased, 52", "  %power = bitcast i64 %powerbits to double",
              "  %factor1 = select i1 %high, double 2.0, double 1.0",
              f"  %factor = select i1 %low, double {_d(2.0 ** -64)}, double %factor1",
              "  %pp = fmul double %p, %power", "  %v = fmul double %pp, %factor",
              f"  %big = fcmp ogt double %x, {_d(f64.HIGHEST)}",
              "  %v1 = select i1 %big, double 0x7FF0000000000000, double %v",
              f"  %small = fcmp olt double %x, {_d(f64.LOWEST)}",
              "  %v2 = select i1 %small, double 0.0, double %v1",
              "  %nan = fcmp une double %x, %x", "  %result = select i1 %nan, double %x, double %v2",
              "  ret double %result", "}"]
    return "\n".join(lines)


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


_NEEDED = {"llvm.fabs.f32": "float", "llvm.copysign.f32": "float, float", "llvm.fma.f32": "float, float, float",
           "llvm.fabs.f64": "double", "llvm.copysign.f64": "double, double"}


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


def _own_for_floats(name: str, definitions: dict[np.dtype, Callable[[], str]], general: FunctionCode) -> FunctionCode:
    """The backend's own ``jitgrad_<name>_<dtype>`` where the compute dtype is float32 or float64,
    ``general`` otherwise."""
    def code(w: FunctionWriter, args: Sequence[Value], dtype: np.dtype) -> Value:
        if dtype not in definitions:
            return general(w, args, dtype)
        x = convert(w, args[0], dtype)
        for symbol, arguments in _NEEDED.items():   # what the definitions call
            w.declare(symbol, f"declare {arguments.split(',')[0]} @{symbol}({arguments})")
        own = f"jitgrad_{name}_{np.dtype(dtype).name}"
        w.declare(own, definitions[dtype]())
        return Value(w.assign("call", f"call {x.type} @{own}({x.type} {x.name})"), x.dtype)
    return code


# What numba_cpu's ``library_calls_kept`` looks for (``math.<name>(`` of these), as this backend writes
# them; and the own float64 functions with the library's function of the same type in their place.
_LIBRARY_CALL = re.compile(r"@(llvm\.(sin|cos|log|exp)\.f(32|64)|(tan|tanh|log1p|expm1|erf)f?)\(")
_LIBRARY_FLOAT64 = {"jitgrad_exp_float64": "llvm.exp.f64", "jitgrad_tanh_float64": "tanh"}


def library_calls_kept(w: FunctionWriter, regions: list[list[int]]) -> None:
    """In each region of ``w``'s lines (the positions of one loop depth's lines) that calls the C
    library, float64 ``exp`` and ``tanh`` call the library's too: such a loop stays scalar, where the
    polynomials' latency is a loss. numba_cpu's ``library_calls_kept`` does the same to a loop nest's
    source, a line's indentation its depth; doing it here keeps the two backends' bits equal."""
    for region in regions:
        if not any(_LIBRARY_CALL.search(w.lines[i]) for i in region):
            continue
        for i in region:
            for own, library in _LIBRARY_FLOAT64.items():
                if f"@{own}(" in w.lines[i]:
                    w.lines[i] = w.lines[i].replace(f"@{own}(", f"@{library}(")
                    w.declare(library, f"declare double @{library}(double)")


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
    """numpy's sign: 1, -1, or the value itself (a zero, or NaN) plus +0, so that -0.0 gives +0.0 as
    numpy's and PyTorch's sign do."""
    x = args[0]
    if x.dtype == BOOL:
        return x
    zero, one = Value(literal(0, x.dtype), x.dtype), Value(literal(1, x.dtype), x.dtype)
    minus = Value(literal(-1, x.dtype), x.dtype) if x.dtype.kind != "u" else zero
    itself = arithmetic(w, "add", x, zero) if x.dtype.kind == "f" else x
    negative = select(w, compare(w, "lt", x, zero), minus, itself)
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


def _fmod(w: FunctionWriter, args: Sequence[Value], dtype: np.dtype) -> Value:
    """``frem`` of floats: C's fmod, the remainder with the dividend's sign, exact."""
    a, b = args
    if a.dtype.kind != "f" or b.dtype.kind != "f":
        raise NotImplementedError("integer fmod (numba's fmod_int)")
    a, b = promoted(w, a, b)
    return Value(w.assign("fmod", f"frem {w.float_flags}{a.type} {a.name}, {b.name}"), a.dtype)


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
    "exp": _own_for_floats("exp", {FLOAT32: _exp_float32, FLOAT64: _exp_float64}, intrinsic("exp")),
    "tanh": _own_for_floats("tanh", {FLOAT32: _tanh_float32, FLOAT64: _tanh_float64}, c_library("tanh")),
    **{name: intrinsic(name) for name in ("log", "sqrt", "sin", "cos", "exp2")},
    **{name: c_library(name) for name in ("log1p", "expm1", "tan", "erf", "atan")},
    "isfinite": _isfinite, "sign": _sign, "abs": _abs,
    "max": _extreme_of_two("gt"), "min": _extreme_of_two("lt"),
    "pow": _pow, "floordiv": _not_here("floor division"), "mod": _not_here("remainder"), "fmod": _fmod,
    "lowest": _extreme(True), "highest": _extreme(False),
}

__all__ = ["FUNCTIONS", "c_library", "intrinsic", "library_calls_kept", "value_type"]
