"""The ``numba.njit`` options of every function the backend generates (kernels, shared loop functions,
and the kernels the disk cache rebuilds from their files): one place, so that they cannot drift apart.

``error_model="numpy"``: division by zero gives inf or nan as in numpy (and so in eager jitgrad), not
Python's ``ZeroDivisionError``; and no zero check per division, which kept every loop that divides
from vectorizing (W2's float32 tanh loop over 64x256, a division per element: 68 us before, 13 us
after).
``nogil``: a kernel releases the GIL, so threads can run compiled functions at once.
"""
from __future__ import annotations


def numba_options(fastmath: bool, parallel: bool) -> dict[str, bool | str]:
    return {"nogil": True, "error_model": "numpy", "fastmath": fastmath, "parallel": parallel}


def decorator(fastmath: bool, parallel: bool) -> str:
    """The same options as generated source: ``@numba.njit(...)``."""
    return "@numba.njit(" + ", ".join(f"{k}={v!r}" for k, v in numba_options(fastmath, parallel).items()) + ")"


__all__ = ["decorator", "numba_options"]
