"""The numba CPU backend's code for each function of the ops' scalar vocabulary (``jitgrad.ops.scalar``).

Mostly ``math``, which numba compiles to the C library. Where that is slow or wrong for a kernel, the
backend's own functions: float32 and float64 ``exp`` and ``tanh`` call ``exp_float32``, ``tanh_float64``
and so on (``intrinsics.py``: inlined polynomials LLVM can vectorize, where ``math``'s are one C call per
element), and integer
``//`` and ``%`` call ``floor_divide_int`` and ``remainder_int`` (``integer_division.py``), which raise on
a zero divisor as eager does, where numpy's error model would give 0, and integer ``**`` calls
``power_int``, which gives PyTorch's values for negative exponents where numba's loops give garbage.
"""
from __future__ import annotations

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


FUNCTIONS: dict[str, FunctionSource] = {
    "exp": _own_for_floats("exp"),
    "tanh": _own_for_floats("tanh"),
    **{name: call(f"math.{name}") for name in ("log", "log1p", "expm1", "sqrt", "sin", "cos", "tan", "erf",
                                                 "isfinite")},
    "sign": call("np.sign"),
    "abs": call("abs"), "max": call("max"), "min": call("min"),
    "floordiv": _checked_for_integers("floor_divide_int", "//"),
    "mod": _checked_for_integers("remainder_int", "%"),
    "pow": _checked_for_integers("power_int", "**"),
    "lowest": extreme(True, numpy_type, "np.inf"), "highest": extreme(False, numpy_type, "np.inf"),
}

NUMBA_CPU = Dialect("numba CPU", FUNCTIONS, numpy_type)

__all__ = ["FUNCTIONS", "NUMBA_CPU", "numpy_type"]
