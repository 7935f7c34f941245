"""The ``numba.njit`` options of every function the backend generates (kernels, shared loop functions,
and the kernels the disk cache rebuilds from their files): one place, so that they cannot drift apart;
and what generated code calls where numba does not compile (``jit_or_plain``).

``error_model="numpy"``: division by zero gives inf or nan as in numpy (and so in eager jitgrad), not
Python's ``ZeroDivisionError``; and no zero check per division, which kept every loop that divides
from vectorizing (W2's float32 tanh loop over 64x256, a division per element: 68 us before, 13 us
after).
``nogil``: a kernel releases the GIL, so threads can run compiled functions at once.
"""
from __future__ import annotations

import contextlib
import os
from typing import Any, Iterator

# Kernels of at least this many lines of code are optimised by LLVM at -O1 instead of numba's -O3 (what
# NUMBA_OPT=1 does, for this kernel alone). Measured on 2 cores: W4's step kernel (903 lines, the RNN
# unrolled over its steps) compiles in 6-9 s instead of 15-17 s at the same step time (52-70 against
# 53-83 us); W1's (665 lines) and W2's (164) compile no faster at -O1, their time being numba's front
# end, so they keep -O3 (W2's step loses 3% at -O1).
LARGE_KERNEL_LINES = 800


# ``fastmath=True``: LLVM's fast-math flags but ``nnan`` and ``ninf`` (numba takes the flags as a dict),
# so that a NaN or an infinity stays one. With those two LLVM may assume none occurs, and did: isnan(nan)
# was False, nan_to_num kept NaN, amax of a NaN and comparisons with NaN differed from eager. What makes
# loops faster (reassociating sums, contracting to FMA, approximate libm functions) is kept.
FAST_MATH_FLAGS = {"reassoc": True, "contract": True, "arcp": True, "afn": True, "nsz": True}


def numba_options(fastmath: bool, parallel: bool) -> dict[str, bool | str | dict[str, bool]]:
    return {"nogil": True, "error_model": "numpy", "fastmath": dict(FAST_MATH_FLAGS) if fastmath else False,
            "parallel": parallel}


def decorator(fastmath: bool, parallel: bool) -> str:
    """The same options as generated source: ``@numba.njit(...)``."""
    return "@numba.njit(" + ", ".join(f"{k}={v!r}" for k, v in numba_options(fastmath, parallel).items()) + ")"


def optimisation_level(code: str) -> int | None:
    """LLVM's optimisation level for a kernel of ``code`` (without comments): 1 for a large kernel, None
    (numba's setting) otherwise, and always where ``NUMBA_OPT`` is set (the user chose)."""
    if "NUMBA_OPT" in os.environ:
        return None
    lines = sum(1 for line in code.splitlines() if line.strip())
    return 1 if lines >= LARGE_KERNEL_LINES else None


@contextlib.contextmanager
def optimised_at(level: int | None) -> Iterator[None]:
    """numba compiles what it compiles inside at LLVM optimisation ``level`` (None: numba's own). numba
    has no per-function option: its ``config.OPT``, which it reads each time it builds LLVM's pass
    pipeline and which may be set at run time, is set under numba's compiler lock and put back."""
    if level is None:
        yield
        return
    import numba
    from numba.core.compiler_lock import global_compiler_lock

    with global_compiler_lock:
        saved = numba.config.OPT
        numba.config.OPT = type(saved)(level)
        try:
            yield
        finally:
            numba.config.OPT = saved


def jit_or_plain(compiled: Any, plain: Any) -> Any:
    """``compiled`` (an intrinsic generated code calls), or ``plain`` where numba runs code as plain
    Python (``numba.config.DISABLE_JIT``), which no intrinsic survives. The modules that hold such
    functions call this from their ``__getattr__``, that is when a kernel's source runs its imports, so
    that switching the setting at run time (tests/plain_python_kernels.py does) is followed."""
    import numba  # here, not at the top: generating a kernel's source (and loading its cached object
    # code, object_loader.py) must not import numba

    return plain if numba.config.DISABLE_JIT else compiled


__all__ = ["FAST_MATH_FLAGS", "LARGE_KERNEL_LINES", "decorator", "jit_or_plain", "numba_options", "optimisation_level",
           "optimised_at"]
