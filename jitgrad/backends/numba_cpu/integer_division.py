"""``floor_divide_int(a, b)``, ``remainder_int(a, b)`` and ``fmod_int(a, b)``: integer ``//``, ``%`` and
C's fmod (the remainder with the dividend's sign) that raise on a zero divisor, as eager jitgrad and
PyTorch do; ``power_int(a, b)``: an integer to an integer power, a division when the exponent is
negative, with PyTorch's values there (numba's loops give the smallest int64 for ``0 ** -1``).

Kernels use numpy's error model (``numba_options``), under which an integer division by zero gives 0:
a silently wrong result where eager raises. Float division keeps numpy's model (inf and nan, and loops
that vectorize); only integer division, rare in kernels, pays for the check. Where numba runs code as
plain Python (``jit_or_plain``) the same checks run as written, numpy integers included.
"""
from __future__ import annotations

from typing import Any

import numba

from .numba_options import jit_or_plain


def _floor_divide(a: Any, b: Any) -> Any:
    if b == 0:
        raise ZeroDivisionError("integer division by zero")
    if b == -1:   # numba's // gives 0 for the least integer over -1; numpy and PyTorch wrap to it
        return -a
    return a // b


def _remainder(a: Any, b: Any) -> Any:
    if b == 0:
        raise ZeroDivisionError("integer division by zero")
    return a % b


def _fmod(a: Any, b: Any) -> Any:
    """``%`` corrected to the dividend's sign: numba's ``np.fmod`` of integers is the floored ``%``
    (``np.fmod(-3, 7)`` is 6 in a kernel, -3 in numpy)."""
    if b == 0:
        raise ZeroDivisionError("integer division by zero")
    remainder = a % b
    if remainder != 0 and (remainder < 0) != (a < 0):
        return remainder - b
    return remainder


def _power(a: Any, b: Any) -> Any:
    if b >= 0:
        return a ** b
    if a == 1 or a == -1:
        return a if b % 2 else a * a
    return a - a


_PLAIN = {"floor_divide_int": _floor_divide, "remainder_int": _remainder, "fmod_int": _fmod, "power_int": _power}
_compiled: dict[str, Any] = {}


def __getattr__(name: str) -> Any:
    """What kernels call: the jitted check, or the plain one (``jit_or_plain``). The jitted one is
    made on the first call that wants it: decorated while numba runs code as plain Python, it would
    stay plain."""
    if name not in _PLAIN:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    plain = _PLAIN[name]
    if numba.config.DISABLE_JIT:
        return plain
    if name not in _compiled:
        _compiled[name] = numba.njit(inline="always")(plain)
    return jit_or_plain(_compiled[name], plain)


__all__ = ["floor_divide_int", "fmod_int", "power_int", "remainder_int"]
