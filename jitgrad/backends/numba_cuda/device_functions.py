"""Device functions the generated kernels call where a scalar function of ``jitgrad.ops.scalar`` is not
one CUDA operation: integer ``//``, ``%``, ``fmod`` and ``**`` with the CPU backend's values
(``numba_cpu/integer_division.py``), and ``sign`` in the argument's own type.

The CPU's integer division raises on a zero divisor, as eager does. A kernel cannot raise (numba.cuda
drops exceptions outside debug mode), so here a zero divisor gives 0 and sets ``errors[0]``, a flag
the program reads after its launches and raises from (``ZeroDivisionError``, as the CPU backend), so
the result is never silently wrong. ``power_int`` gives PyTorch's values for negative exponents, as
the CPU's does.
"""
from __future__ import annotations

from numba import cuda


@cuda.jit(device=True, inline=True)
def floor_divide_int(a, b, errors):  # noqa: ANN001, ANN201 - numba infers the types
    if b == 0:
        errors[0] = 1
        return a - a
    return a // b


@cuda.jit(device=True, inline=True)
def remainder_int(a, b, errors):  # noqa: ANN001, ANN201
    if b == 0:
        errors[0] = 1
        return a - a
    return a % b


@cuda.jit(device=True, inline=True)
def fmod_int(a, b, errors):  # noqa: ANN001, ANN201
    """C's fmod: the remainder with the sign of ``a`` (``%``'s has the sign of ``b``)."""
    if b == 0:
        errors[0] = 1
        return a - a
    remainder = a % b
    if remainder != 0 and (remainder < 0) != (a < 0):
        return remainder - b
    return remainder


@cuda.jit(device=True, inline=True)
def power_int(a, b):  # noqa: ANN001, ANN201
    if b >= 0:
        result = a - a + 1
        base, exponent = a, b
        while exponent > 0:  # by squaring: CUDA has no integer pow
            if exponent & 1:
                result *= base
            base *= base
            exponent >>= 1
        return result
    if a == 1 or a == -1:
        return a if b % 2 else a * a
    return a - a


@cuda.jit(device=True, inline=True)
def sign_of(a):  # noqa: ANN001, ANN201
    """-1, 0 or 1 in ``a``'s type; NaN for NaN (numpy's sign)."""
    if a > 0:
        return a - a + 1
    if a < 0:
        return a - a - 1
    return a - a if a == a else a


__all__ = ["floor_divide_int", "fmod_int", "power_int", "remainder_int", "sign_of"]
