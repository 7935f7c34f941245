"""The numba CPU backend's code for each function of the ops' scalar vocabulary (``jitgrad.ops.scalar``).

Mostly ``math``, which numba compiles to the C library. Where that is slow or wrong for a kernel, the
backend's own functions: float32 and float64 ``exp`` and ``tanh`` call ``exp_float32``, ``tanh_float64``
and so on (``intrinsics.py``: inlined polynomials LLVM can vectorize, where ``math``'s are one C call per
element), and integer ``//``, ``%`` and ``fmod`` call ``floor_divide_int``, ``remainder_int`` and
``fmod_int`` (``integer_division.py``), which raise on a zero divisor as eager does, where numpy's error
model would give 0, and integer ``**`` calls ``power_int``, which gives PyTorch's values for negative
exponents where numba's loops give garbage.
"""
from __future__ import annotations

import re
from typing import Sequence

import numpy as np

from ..expressions import Dialect, FunctionSource, call, extreme


def numpy_type(dtype: np.dtype) -> str:
    """The source spelling of a dtype's scalar constructor (``np.float32``)."""
    return f"np.{np.dtype(dtype).name if np.dtype(dtype) != np.bool_ else 'bool_'}"


def _own_for_floats(name: str) -> FunctionSource:
    """The backend's ``<name>_float32`` or ``<name>_float64`` for those dtypes, ``math.<name>`` otherwise."""
    def source(args: Sequence[str], dtype: np.dtype) -> str:
        own = dtype in (np.float32, np.float64)
        return f"{name}_{np.dtype(dtype).name}({args[0]})" if own else f"math.{name}({args[0]})"
    return source


def _checked_for_integers(checked: str, symbol: str) -> FunctionSource:
    """Integers through the backend's ``checked`` function; floats with the operator (IEEE's inf and nan)."""
    def source(args: Sequence[str], dtype: np.dtype) -> str:
        return f"{checked}({args[0]}, {args[1]})" if dtype.kind in "iu" else f"({args[0]} {symbol} {args[1]})"
    return source


def _fmod(args: Sequence[str], dtype: np.dtype) -> str:
    """numpy's ``fmod`` of floats (numba's is LLVM's ``frem``, C's fmod: exact); anything else through
    ``fmod_int``, which raises on a zero divisor."""
    return f"np.fmod({args[0]}, {args[1]})" if dtype.kind == "f" else f"fmod_int({args[0]}, {args[1]})"


def _sign(args: Sequence[str], dtype: np.dtype) -> str:
    """``np.sign``, plus +0 for floats: numba's ``np.sign(-0.0)`` is -0.0, numpy's and PyTorch's +0.0. Of
    an unsigned integer, whether it is nonzero: numba's ``np.sign`` of uint8 200 is 255 (it reads -1)."""
    if dtype.kind == "u":
        return f"{numpy_type(dtype)}({args[0]} != 0)"
    sign = f"np.sign({args[0]})"
    return f"({sign} + {numpy_type(dtype)}(0))" if dtype.kind == "f" else sign


# Calls of the C library (through numba's ``math``), which keep the loop around them scalar.
_LIBRARY_CALL = re.compile(r"math\.(sin|cos|tan|log|log1p|expm1|erf|exp|tanh)\(")
_OWN_FLOAT64 = re.compile(r"\b(exp|tanh)_float64\(")


def library_calls_kept(lines: list[str]) -> list[str]:
    """A loop nest's lines with ``math.exp``/``math.tanh`` in place of the float64 polynomials in a loop
    body (the lines of its indentation) that also calls the C library: such a loop stays scalar, and
    there the polynomials' latency is a loss (in a dependent chain, W1's ``tanh(sin(y) * 1.01 + 0.1)``,
    70 ns a call against 25 ns for the C library's tanh); they pay off where LLVM vectorizes them
    (K7: 4 ms against 38 ms)."""
    scalar = {len(line) - len(line.lstrip()) for line in lines if _LIBRARY_CALL.search(line)}
    if not scalar:
        return lines
    return [_OWN_FLOAT64.sub(r"math.\1(", line) if len(line) - len(line.lstrip()) in scalar else line
            for line in lines]


FUNCTIONS: dict[str, FunctionSource] = {
    "exp": _own_for_floats("exp"),
    "exp2": call("np.exp2"),   # numba's is LLVM's ``llvm.exp2``, as the LLVM generator's (``math.exp2`` is 3.11's)
    "tanh": _own_for_floats("tanh"),
    **{name: call(f"math.{name}") for name in ("log", "log1p", "expm1", "sqrt", "sin", "cos", "tan", "erf", "atan",
                                                 "isfinite")},
    "sign": _sign,
    "abs": call("abs"), "max": call("max"), "min": call("min"),
    "floordiv": _checked_for_integers("floor_divide_int", "//"),
    "mod": _checked_for_integers("remainder_int", "%"),
    "fmod": _fmod,
    "pow": _checked_for_integers("power_int", "**"),
    "lowest": extreme(True, numpy_type, "np.inf"), "highest": extreme(False, numpy_type, "np.inf"),
}

NUMBA_CPU = Dialect("numba CPU", FUNCTIONS, numpy_type)

__all__ = ["FUNCTIONS", "NUMBA_CPU", "library_calls_kept", "numpy_type"]
