"""The constants of the CPU backends' float32 ``tanh`` and ``exp`` (how they were fitted, and their
error: ``numba_cpu/intrinsics.py``'s docstring). Kept here, apart from numba, so that the numba CPU
backend's intrinsics and the LLVM CPU backend's IR versions compute the same function, bit for bit,
from one table, and the LLVM backend never imports numba to read them."""
from __future__ import annotations

import math

import numpy as np

TANH_CLAMP = np.float32(7.9)
TANH_SATURATED = np.float32(9.0)  # float32 tanh is exactly ±1 from here on
TANH_P = tuple(np.float32(c) for c in (0.9999999958761561, 0.1303357264150883, 0.0030455348233914678,
                                        1.0458912477515056e-05, -1.663753357023232e-08, 2.917208211867827e-11))
TANH_Q = tuple(np.float32(c) for c in (1.0, 0.4636690271984399, 0.02426859491804502, 0.0002456682371101262))

EXP_LOG2E = np.float32(1.4426950408889634)
EXP_LN2_HIGH, EXP_LN2_LOW = np.float32(0.693359375), np.float32(-2.12194440e-4)   # their sum is ln 2
# exp's argument is clamped to [EXP_BELOW_ZERO, EXP_ABOVE_INF], where exp is 0 below and inf above (its
# ends, -103.97 and 88.72, with room): 2^k then stays in two normal float32 factors.
EXP_ABOVE_INF, EXP_BELOW_ZERO = np.float32(89.0), np.float32(-104.0)
# Adding 1.5 * 2^23 rounds a float32 of magnitude below 2^22 to an integer k (to even at ties) and leaves
# k in the sum's low bits: k and 2^k come from bits, with no float-to-integer conversion (numba's
# ``math.floor`` gives an int64, and AVX-512 converts to int64 a half vector at a time).
EXP_ROUNDER = np.float32(12582912.0)
EXP_ROUNDER_BITS = 0x4B400000
EXP_TAYLOR = tuple(np.float32(1.0 / math.factorial(n)) for n in range(2, 8))   # 1/2! ... 1/7!

__all__ = ["EXP_ABOVE_INF", "EXP_BELOW_ZERO", "EXP_LN2_HIGH", "EXP_LN2_LOW", "EXP_LOG2E", "EXP_ROUNDER",
           "EXP_ROUNDER_BITS", "EXP_TAYLOR", "TANH_CLAMP", "TANH_P", "TANH_Q", "TANH_SATURATED"]
