"""Special functions numpy lacks, compiled once with numba on first use (numba is a dependency, and
``math.erf`` there is exact to double precision, unlike a short polynomial fit)."""
from __future__ import annotations

import math
from functools import lru_cache

import numpy as np


@lru_cache(maxsize=None)
def _erf_kernel():
    import numba

    @numba.vectorize(["float32(float32)", "float64(float64)"], cache=True)
    def erf(x):
        return math.erf(x)
    return erf


def erf_ufunc(a: np.ndarray) -> np.ndarray:
    if a.dtype == np.float16:
        return _erf_kernel()(a.astype(np.float32)).astype(np.float16)
    return np.asarray(_erf_kernel()(a))
