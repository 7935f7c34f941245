"""The constants of the CPU backends' float64 ``exp`` and ``tanh`` (how they work, and their error:
``numba_cpu/intrinsics.py``'s docstring). Kept here, apart from numba, so that the numba CPU backend's
intrinsics and the LLVM CPU backend's IR versions compute the same function, bit for bit, from one
table, and the LLVM backend never imports numba to read them (``float32_functions.py`` does the same
for float32)."""
from __future__ import annotations

import math

LOG2E = 1.4426950408889634
LN2_HIGH, LN2_LOW = 6.93147180369123816490e-01, 1.90821492927058770002e-10  # k * LN2_HIGH is exact
HIGHEST, LOWEST = 709.782712893384, -745.1332191019412  # exp is inf above, 0 below
# Adding 1.5 * 2^52 rounds a float64 below 2^51 to an integer k and leaves k in the sum's low bits:
# k and 2^k come from bits, with no float-to-integer conversion, which AVX2 has no vector form of.
ROUNDER = 6755399441055744.0
ROUNDER_BITS = 0x4338000000000000
TAYLOR = tuple(1.0 / math.factorial(n) for n in range(2, 14))   # 1/2! ... 1/13!
TANH_SATURATED = 22.0  # tanh is the float64 1 from here on

__all__ = ["HIGHEST", "LN2_HIGH", "LN2_LOW", "LOG2E", "LOWEST", "ROUNDER", "ROUNDER_BITS", "TANH_SATURATED", "TAYLOR"]
