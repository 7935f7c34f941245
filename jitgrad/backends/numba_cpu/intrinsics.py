"""Scalar functions that generated kernels call where ``math`` is slow.

numba turns ``math.tanh`` on a float32 into a call to the C library, one element at a time: about 18 ns
per element here, where numpy's SIMD ``tanh`` takes 0.4 ns. ``tanh_float32`` is a rational function
(multiplies, adds, one divide, a clamp) that LLVM can vectorize once it is inlined into a loop; it is
within 4e-7 relative error of the exact tanh everywhere, a few float32 units in the last place,
against 1e-7 for numpy's. float64 has its own (below).

The coefficients (``backends/float32_functions.py``, shared with the LLVM backend) were fitted for this
module: tanh(x) / x as P(x²) / Q(x²) on [0, 7.9], relative
error minimised by iteratively reweighted least squares. Between 7.9 and 9 float32 tanh is the float
just below 1, which the clamped fit gives; from 9 on it is exactly ±1.

``exp_float32`` is the same for ``math.exp`` on a float32 (14 ms against 5 ms over 4M elements here;
softmax, sigmoid and every ``exp`` of a float32 loop): ``x = k ln2 + r`` with ``|r| <= ln2 / 2`` (ln2
in two parts, so that ``k ln2`` is exact), ``e^r`` by its Taylor polynomial of degree 7 (truncation
below 1e-8), and ``2^k`` made from its bits, as two factors ``2^(k//2) 2^(k - k//2)``, each a normal
float32 over the whole clamped range: results that overflow to inf, and subnormal results, come out of
the last product as numpy's, with no test of the argument but for NaN (which vectorizes better: 10-30%
faster than testing for the ends). ``k`` is ``x log2 e`` rounded by adding ``1.5 * 2^23``, whose sum
holds ``k`` in its low bits (``float32_functions.EXP_ROUNDER``): no float-to-integer conversion, which
numba's ``math.floor`` (an int64) made two half-vector conversions each way; and every multiply-add of
the reduction and the polynomial is one ``llvm.fma`` (rounded once: the same bits on any CPU; one
without FMA instructions calls the C library's ``fmaf``, slowly). 0.77 -> 0.32 ns an element in cache,
numpy's own ``exp`` 0.50 (the LLVM generator's copy, ``llvm_cpu/scalar_functions.py``, gives the same
bits).
Largest error over [-110, 90]: 1e-7 relative (about one float32 unit in the last place) for normal
results, one subnormal step below 1e-38.

float64 ``exp`` and ``tanh`` take the same road with a polynomial of degree 13 (truncation below 1e-16):
``math.tanh`` of a float64 is a C call per element (K7's ``tanh(x.cumsum(1))``: 15 ns an element).
``tanh_float64`` is ``-m / (2 + m)`` with ``m = expm1(-2|x|)``, an identity, so its error is that of
``expm1``, computed as ``2^k q + (2^k - 1)`` from ``q = e^r - 1`` (the polynomial without its 1), which
keeps full relative precision near 0 where ``1 - e^(-2x)`` would cancel. Both within 4e-16 relative of
numpy's over the float64 range.
"""
from __future__ import annotations

import math

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.extending import intrinsic

from .. import float64_functions as f64
from ..float32_functions import (EXP_ABOVE_INF, EXP_BELOW_ZERO, EXP_LN2_HIGH, EXP_LN2_LOW, EXP_LOG2E, EXP_ROUNDER,
                                 EXP_ROUNDER_BITS, EXP_TAYLOR, TANH_CLAMP, TANH_P, TANH_Q,
                                 TANH_SATURATED)
from .numba_options import jit_or_plain

_CLAMP, _SATURATED = TANH_CLAMP, TANH_SATURATED
P0, P1, P2, P3, P4, P5 = TANH_P
Q0, Q1, Q2, Q3 = TANH_Q


@numba.njit(inline="always")
def tanh_float32(x: np.float32) -> np.float32:
    c = min(max(x, -_CLAMP), _CLAMP)
    t = c * c
    p = ((((P5 * t + P4) * t + P3) * t + P2) * t + P1) * t + P0
    q = ((Q3 * t + Q2) * t + Q1) * t + Q0
    return np.float32(math.copysign(1.0, x)) if abs(x) >= _SATURATED else c * p / q


@intrinsic
def _float32_from_bits_jit(typingctx, bits):
    if not isinstance(bits, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(context.cast(builder, args[0], sig.args[0], types.int32), ir.FloatType())
    return types.float32(bits), codegen


def _float32_from_bits_python(bits: int) -> np.float32:
    return np.array(bits, dtype=np.int32).view(np.float32)[()]


# Chosen when ``exp_float32`` itself is (compiled or plain), at import.
_float32_from_bits = jit_or_plain(_float32_from_bits_jit, _float32_from_bits_python)


@intrinsic
def _bits_of_float32_jit(typingctx, value):
    if not isinstance(value, types.Float):
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(context.cast(builder, args[0], sig.args[0], types.float32), ir.IntType(32))
    return types.int32(value), codegen


def _bits_of_float32_python(value: float) -> np.int32:
    return np.array(value, dtype=np.float32).view(np.int32)[()]


@intrinsic
def _fma_float32_jit(typingctx, a, b, c):
    if not all(isinstance(v, types.Float) for v in (a, b, c)):
        return None

    def codegen(context, builder, sig, args):
        values = [context.cast(builder, v, t, types.float32) for v, t in zip(args, sig.args)]
        f32 = ir.FloatType()
        fma = builder.module.declare_intrinsic("llvm.fma", [f32], ir.FunctionType(f32, [f32, f32, f32]))
        return builder.call(fma, values)
    return types.float32(a, b, c), codegen


def _fma_float32_python(a: float, b: float, c: float) -> np.float32:
    """``a * b + c`` rounded once, for float32 arguments: their product is exact in float64 (plain
    Python, for reading kernels; its sum can round twice, a float32 unit at most, where LLVM's cannot)."""
    return np.float32(np.float64(a) * np.float64(b) + np.float64(c))


_bits_of_float32 = jit_or_plain(_bits_of_float32_jit, _bits_of_float32_python)
_fma = jit_or_plain(_fma_float32_jit, _fma_float32_python)

_LOG2E, _LN2_HIGH, _LN2_LOW = EXP_LOG2E, EXP_LN2_HIGH, EXP_LN2_LOW   # the two parts' sum is ln 2
_MINUS_LN2_HIGH, _MINUS_LN2_LOW = -EXP_LN2_HIGH, -EXP_LN2_LOW
_ABOVE_INF, _BELOW_ZERO = EXP_ABOVE_INF, EXP_BELOW_ZERO   # exp is inf above 88.72, 0 below -103.97
_ROUNDER_32, _ROUNDER_32_BITS = EXP_ROUNDER, np.int32(EXP_ROUNDER_BITS)
E2, E3, E4, E5, E6, E7 = EXP_TAYLOR
_ONE = np.float32(1.0)


@numba.njit(inline="always")
def exp_float32(x: np.float32) -> np.float32:
    c = np.float32(min(max(x, _BELOW_ZERO), _ABOVE_INF))
    # k = round(c log2 e), read from the sum's bits: ``rounded - _ROUNDER_32`` would be folded to
    # ``c * _LOG2E`` by fastmath's reassociation, a bit cast cannot be
    n = np.int32(_bits_of_float32(_fma(c, _LOG2E, _ROUNDER_32)) - _ROUNDER_32_BITS)   # numba's sum: int64
    k = np.float32(n)
    r = _fma(k, _MINUS_LN2_LOW, _fma(k, _MINUS_LN2_HIGH, c))
    p = _fma(_fma(_fma(_fma(_fma(_fma(_fma(E7, r, E6), r, E5), r, E4), r, E3), r, E2), r, _ONE), r, _ONE)
    half = n >> np.int32(1)
    result = p * _float32_from_bits((half + np.int32(127)) << np.int32(23)) \
        * _float32_from_bits((n - half + np.int32(127)) << np.int32(23))
    return x if x != x else result


@intrinsic
def _float64_from_bits_jit(typingctx, bits):
    if not isinstance(bits, types.Integer):
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(context.cast(builder, args[0], sig.args[0], types.int64), ir.DoubleType())
    return types.float64(bits), codegen


@intrinsic
def _bits_of_float64_jit(typingctx, value):
    if not isinstance(value, types.Float):
        return None

    def codegen(context, builder, sig, args):
        return builder.bitcast(context.cast(builder, args[0], sig.args[0], types.float64), ir.IntType(64))
    return types.int64(value), codegen


def _float64_from_bits_python(bits: int) -> np.float64:
    return np.array(bits, dtype=np.int64).view(np.float64)[()]


def _bits_of_float64_python(value: float) -> np.int64:
    return np.array(value, dtype=np.float64).view(np.int64)[()]


@intrinsic
def _round_float64_jit(typingctx, value):
    if not isinstance(value, types.Float):
        return None

    def codegen(context, builder, sig, args):
        f64_type = ir.DoubleType()
        rint = builder.module.declare_intrinsic("llvm.rint", [f64_type], ir.FunctionType(f64_type, [f64_type]))
        return builder.call(rint, [context.cast(builder, args[0], sig.args[0], types.float64)])
    return types.float64(value), codegen


def _round_float64_python(value: float) -> np.float64:
    return np.rint(np.float64(value))


_float64_from_bits = jit_or_plain(_float64_from_bits_jit, _float64_from_bits_python)
_bits_of_float64 = jit_or_plain(_bits_of_float64_jit, _bits_of_float64_python)
# round to the nearest integer, ties to even (LLVM's rint, one vector instruction): what adding and
# subtracting ``_ROUNDER`` gives, but which fastmath's reassociation cannot fold away (it folded
# ``(y + _ROUNDER) - _ROUNDER`` to ``y``, so that under ``fastmath=True`` exp(0.5) was 2.0)
_round_float64 = jit_or_plain(_round_float64_jit, _round_float64_python)

_LOG2E_64, _LN2_HIGH_64, _LN2_LOW_64 = f64.LOG2E, f64.LN2_HIGH, f64.LN2_LOW
_HIGHEST_64, _LOWEST_64 = f64.HIGHEST, f64.LOWEST
_ROUNDER, _ROUNDER_BITS = f64.ROUNDER, f64.ROUNDER_BITS   # (float64_functions.py says how they round)
F2, F3, F4, F5, F6, F7, F8, F9, F10, F11, F12, F13 = f64.TAYLOR
_TANH_SATURATED = f64.TANH_SATURATED


@numba.njit(inline="always")
def _exp_minus_one_reduced(r: float) -> float:
    """``e^r - 1`` for ``|r| <= ln2 / 2``: the Taylor polynomial of degree 13 without its constant."""
    return ((((((((((((F13 * r + F12) * r + F11) * r + F10) * r + F9) * r + F8) * r + F7) * r + F6) * r + F5)
                 * r + F4) * r + F3) * r + F2) * r + 1.0) * r


@numba.njit(inline="always")
def exp_float64(x: float) -> float:
    c = min(max(x, _LOWEST_64), _HIGHEST_64)
    k = _round_float64(c * _LOG2E_64)
    rounded = k + _ROUNDER   # k in its low bits
    r = (c - k * _LN2_HIGH_64) - k * _LN2_LOW_64
    p = _exp_minus_one_reduced(r) + 1.0
    n = _bits_of_float64(rounded) - np.int64(_ROUNDER_BITS)
    low = n < -1022
    high = n > 1023
    shift = np.int64(64) if low else (np.int64(-1) if high else np.int64(0))
    power = _float64_from_bits((n + shift + np.int64(1023)) << np.int64(52))
    result = p * power * (2.0 ** -64 if low else (2.0 if high else 1.0))
    if x > _HIGHEST_64:
        result = np.inf
    if x < _LOWEST_64:
        result = 0.0
    return x if x != x else result


@numba.njit(inline="always")
def tanh_float64(x: float) -> float:
    y = -2.0 * min(abs(x), _TANH_SATURATED)
    k = _round_float64(y * _LOG2E_64)
    rounded = k + _ROUNDER
    r = (y - k * _LN2_HIGH_64) - k * _LN2_LOW_64
    power = _float64_from_bits((_bits_of_float64(rounded) - np.int64(_ROUNDER_BITS) + np.int64(1023))
                               << np.int64(52))
    m = power * _exp_minus_one_reduced(r) + (power - 1.0)   # expm1(y)
    return x if x != x else math.copysign(-m / (2.0 + m), x)


__all__ = ["exp_float32", "exp_float64", "tanh_float32", "tanh_float64"]
