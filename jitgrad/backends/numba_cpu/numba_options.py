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

from typing import Any


def numba_options(fastmath: bool, parallel: bool) -> dict[str, bool | str]:
    return {"nogil": True, "error_model": "numpy", "fastmath": fastmath, "parallel": parallel}


def decorator(fastmath: bool, parallel: bool) -> str:
    """The same options as generated source: ``@numba.njit(...)``."""
    return "@numba.njit(" + ", ".join(f"{k}={v!r}" for k, v in numba_options(fastmath, parallel).items()) + ")"


def jit_or_plain(compiled: Any, plain: Any) -> Any:
    """``compiled`` (an intrinsic generated code calls), or ``plain`` where numba runs code as plain
    Python (``numba.config.DISABLE_JIT``), which no intrinsic survives. The modules that hold such
    functions call this from their ``__getattr__``, that is when a kernel's source runs its imports, so
    that switching the setting at run time (tests/plain_python_kernels.py does) is followed."""
    import numba  # here, not at the top: generating a kernel's source (and loading its cached object
    # code, object_loader.py) must not import numba

    return plain if numba.config.DISABLE_JIT else compiled


__all__ = ["decorator", "jit_or_plain", "numba_options"]
