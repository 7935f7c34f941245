"""Scalar functions that generated kernels call where ``math`` is slow.

numba turns ``math.tanh`` on a float32 into a call to the C library, one element at a time: about 18 ns
per element here, where numpy's SIMD ``tanh`` takes 0.4 ns. ``tanh_float32`` is a rational function
(multiplies, adds, one divide, a clamp) that LLVM can vectorize once it is inlined into a loop; it is
within 4e-7 relative error of the exact tanh everywhere, a few float32 units in the last place,
against 1e-7 for numpy's. float64 keeps ``math.tanh``: the tolerance there is 1e-10.

The coefficients were fitted for this module: tanh(x) / x as P(x²) / Q(x²) on [0, 7.9], relative
error minimised by iteratively reweighted least squares. Between 7.9 and 9 float32 tanh is the float
just below 1, which the clamped fit gives; from 9 on it is exactly ±1.
"""
from __future__ import annotations

import math

import numba
import numpy as np

_CLAMP = np.float32(7.9)
_SATURATED = np.float32(9.0)  # float32 tanh is exactly ±1 from here on
P0, P1, P2, P3, P4, P5 = (np.float32(c) for c in (
    0.9999999958761561, 0.1303357264150883, 0.0030455348233914678, 1.0458912477515056e-05,
    -1.663753357023232e-08, 2.917208211867827e-11))
Q0, Q1, Q2, Q3 = (np.float32(c) for c in (1.0, 0.4636690271984399, 0.02426859491804502, 0.0002456682371101262))


@numba.njit(inline="always")
def tanh_float32(x: np.float32) -> np.float32:
    c = min(max(x, -_CLAMP), _CLAMP)
    t = c * c
    p = ((((P5 * t + P4) * t + P3) * t + P2) * t + P1) * t + P0
    q = ((Q3 * t + Q2) * t + Q1) * t + Q0
    return np.float32(math.copysign(1.0, x)) if abs(x) >= _SATURATED else c * p / q


__all__ = ["tanh_float32"]
