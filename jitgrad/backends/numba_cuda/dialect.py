"""The CUDA backend's code for each function of the ops' scalar vocabulary (``jitgrad.ops.scalar``).

Device code is Python that ``numba.cuda`` compiles: ``math.*`` maps to libdevice (``math.exp`` of a
float32 is ``expf``, so float32 code stays float32), scalar types are numba's (``numba.float32``:
numpy's scalar types are host objects a kernel cannot call), and what is not one CUDA operation is a
device function (``device_functions.py``): integer ``//``, ``%``, ``fmod`` and ``**`` with the CPU backend's
values (a zero divisor sets the ``division_errors`` flag, an argument of the kernel), and ``sign``.
"""
from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from ..expressions import Dialect, FunctionSource, call, extreme


def numba_type(dtype: np.dtype) -> str:
    """The source spelling of a dtype's numba scalar type (``numba.float32``, ``numba.boolean``)."""
    dtype = np.dtype(dtype)
    return "numba.boolean" if dtype == np.bool_ else f"numba.{dtype.name}"


DIVISION_ERRORS = "division_errors"  # the flag array integer division sets on a zero divisor


def _integers_through(device_function: str, symbol: str, *extra: str) -> FunctionSource:
    """Integers through a device function (with ``extra`` arguments); floats with the operator (IEEE's
    inf and nan)."""
    def source(args: Sequence[str], dtype: np.dtype) -> str:
        if dtype.kind not in "iub":
            return f"({args[0]} {symbol} {args[1]})"
        return f"{device_function}({', '.join([args[0], args[1], *extra])})"
    return source


def _fmod(args: Sequence[str], dtype: np.dtype) -> str:
    """libdevice's ``fmod``/``fmodf`` of floats (C's, exact); integers through ``fmod_int``."""
    if dtype.kind == "f":
        return f"math.fmod({args[0]}, {args[1]})"
    return f"fmod_int({args[0]}, {args[1]}, {DIVISION_ERRORS})"


def _exp2(args: Sequence[str], dtype: np.dtype) -> str:
    """libdevice's ``exp2``/``exp2f`` (Python's ``math.exp2`` is 3.11's: before, ``pow(2, x)``)."""
    if hasattr(math, "exp2"):
        return f"math.exp2({args[0]})"
    return f"math.pow({numba_type(dtype)}(2), {args[0]})"


FUNCTIONS: dict[str, FunctionSource] = {
    **{name: call(f"math.{name}") for name in ("exp", "log", "log1p", "expm1", "sqrt", "sin", "cos", "tan", "tanh",
                                                 "erf", "atan", "isfinite")},
    "exp2": _exp2, "fmod": _fmod,
    "sign": call("sign_of"),
    "abs": call("abs"), "max": call("max"), "min": call("min"),
    "floordiv": _integers_through("floor_divide_int", "//", DIVISION_ERRORS),
    "mod": _integers_through("remainder_int", "%", DIVISION_ERRORS),
    "pow": _integers_through("power_int", "**"),
    "lowest": extreme(True, numba_type, "math.inf"), "highest": extreme(False, numba_type, "math.inf"),
}

NUMBA_CUDA = Dialect("numba CUDA", FUNCTIONS, numba_type)

__all__ = ["DIVISION_ERRORS", "FUNCTIONS", "NUMBA_CUDA", "numba_type"]
