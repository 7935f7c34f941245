"""Philox4x32-10, the counter-based bit generator behind jitgrad's random numbers.

Philox (Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as easy as 1, 2, 3", SC 2011) is a
keyed bijection of 128-bit counters: block ``n`` of a seed is computed from ``(seed, n)`` alone, with no
state carried from block to block. That is what lets an eager call and a compiled kernel produce the
same numbers: each needs only the generator's ``(seed, offset)``, and element ``i`` of a draw is block
``offset + i``. PyTorch's CUDA generator is built the same way, and Philox passes BigCrush.

``philox4x32_10`` is written once, on ``uint64`` values that hold 32-bit words (a 32x32-bit product
fits, so no 128-bit arithmetic is needed): numpy runs it vectorised over arrays of counters (eager,
``jitgrad.random.sampling``), and the numba backend compiles the very same function on scalars
(``jitgrad.backends.numba_cpu.sampling``), so the two cannot drift apart. Its known answers are those
of the Random123 reference (tests/eager/test_random.py).
"""
from __future__ import annotations

from typing import Any

import numpy as np

ROUNDS = 10
MULTIPLIER_0 = np.uint64(0xD2511F53)
MULTIPLIER_1 = np.uint64(0xCD9E8D57)
KEY_STEP_0 = np.uint64(0x9E3779B9)   # the golden ratio's fraction, as in Random123
KEY_STEP_1 = np.uint64(0xBB67AE85)   # sqrt(3) - 1
WORD = np.uint64(0xFFFFFFFF)
WORD_BITS = np.uint64(32)


def philox4x32_10(c0: Any, c1: Any, c2: Any, c3: Any, k0: Any, k1: Any) -> tuple[Any, Any, Any, Any]:
    """The four 32-bit words of the block at counter ``(c0, c1, c2, c3)`` under key ``(k0, k1)``: ten
    rounds of two 32x32->64-bit products whose high halves are mixed with the other words and the key,
    the key stepped by two Weyl constants between rounds. Every argument is a ``uint64`` (scalar or
    array) below 2**32; so is every result."""
    for _ in range(ROUNDS):
        product_0 = MULTIPLIER_0 * c0
        product_1 = MULTIPLIER_1 * c2
        c0, c1, c2, c3 = ((product_1 >> WORD_BITS) ^ c1 ^ k0, product_1 & WORD,
                          (product_0 >> WORD_BITS) ^ c3 ^ k1, product_0 & WORD)
        k0 = (k0 + KEY_STEP_0) & WORD
        k1 = (k1 + KEY_STEP_1) & WORD
    return c0, c1, c2, c3


__all__ = ["philox4x32_10"]
