"""Functions of square matrices computed by LAPACK through numpy: ``inverse``, ``det``, ``logdet``,
``slogdet`` (of a matrix or a batch of them, in the last two dimensions).

Each is an ``autograd.Function`` whose forward is numpy's and whose backward is written in jitgrad ops
on the saved input and output, so that gradients of any order follow (the backward calls ``inverse``
again, itself differentiable): ``inverse``'s is ``-A^-T g A^-T``, ``det``'s ``g det(A) A^-T``,
``logdet``'s ``g A^-T``. Forward mode has each one's ``jvp``. No backend lowers LAPACK, so they refuse
inside a compiled function. The gradient at a singular matrix (which PyTorch takes through an SVD) is
refused with an error rather than computed as infinities. ``matrix_power`` (``linalg.matrix_power``)
is matrix products, of ``inverse`` for a negative power."""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..autograd.function import Function, FunctionCtx
from ..tensor import Tensor
from .arithmetic import where
from .comparisons import scalar_type
from .device_copy import to
from .host_reads import from_host, host_values, refuse_when_traced
from .public import public


def _matrices(op: str, a: Tensor) -> np.ndarray:
    """``a``'s values, checked to be a float32/float64 (batch of) square matrices."""
    refuse_when_traced(op, "its forward is numpy's LAPACK call, which no backend lowers")
    if a._data.dtype.kind != "f":
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got {scalar_type(a)}")
    if a._data.dtype == np.float16:
        raise RuntimeError(f"{op}: not implemented for 'Half' on the CPU: convert to float32 first")
    if a._data.ndim < 2 or a.shape[-1] != a.shape[-2]:
        shape = a.shape
        sizes = f"{shape[-2]} by {shape[-1]}" if a._data.ndim >= 2 else f"a {a._data.ndim}-D tensor"
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are {sizes} matrices")
    return host_values(a)


def _placed(array: np.ndarray, like: Tensor) -> Tensor:
    return to(from_host(np.asarray(array, like._data.dtype)), like.device)


def _nan_where_nan(result: np.ndarray, values: np.ndarray) -> np.ndarray:
    """``result`` with every matrix whose input holds a NaN made all NaN, as PyTorch's inverse gives it:
    LAPACK's pivoting can route a NaN past some entries and leave them finite and wrong."""
    return np.where(np.isnan(values).any((-2, -1), keepdims=True), np.nan, result)


def _transposed_inverse(a: Tensor) -> Tensor:
    return inverse(a).transpose(-2, -1)


def _singular_gradient(op: str) -> RuntimeError:
    return RuntimeError(f"{op}: the gradient at a singular matrix (determinant 0) is not supported: jitgrad "
                        "takes it through the inverse (PyTorch through an SVD)")


def _refuse_singular(op: str, det: Tensor) -> None:
    if (host_values(det) == 0).any():
        raise _singular_gradient(op)


class LinalgInv(Function):
    """``A^-1``; backward ``-A^-T g A^-T``."""

    _node_name = "LinalgInvExBackward0"  # PyTorch's

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor) -> Tensor:
        values = _matrices("linalg.inv", a)
        try:
            result = _placed(_nan_where_nan(np.linalg.inv(values), values), a)
        except np.linalg.LinAlgError:
            raise RuntimeError("linalg.inv: The input matrix is singular, the inversion could not be completed "
                               "(a determinant of 0)") from None
        ctx.save_for_backward(result)
        ctx.result = result
        return result

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> Tensor:
        (result,) = ctx.saved_tensors
        transposed = result.transpose(-2, -1)
        return -(transposed @ grad @ transposed)

    @staticmethod
    def jvp(ctx: FunctionCtx, a_t: Tensor) -> Tensor:
        return -(ctx.result @ a_t @ ctx.result)


class LinalgDet(Function):
    """``det(A)``; backward ``g det(A) A^-T``."""

    _node_name = "LinalgDetBackward0"  # PyTorch's

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor) -> Tensor:
        result = _placed(np.linalg.det(_matrices("linalg.det", a)), a)
        ctx.save_for_backward(a, result)
        ctx.input, ctx.result = a, result
        return result

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> Tensor:
        a, result = ctx.saved_tensors
        _refuse_singular("linalg.det", result)
        return (grad * result).unsqueeze(-1).unsqueeze(-1) * _transposed_inverse(a)

    @staticmethod
    def jvp(ctx: FunctionCtx, a_t: Tensor) -> Tensor:
        _refuse_singular("linalg.det", ctx.result)
        return ctx.result * (_transposed_inverse(ctx.input) * a_t).sum((-2, -1))


class LinalgSlogdet(Function):
    """``(sign, log|det(A)|)``; the sign's gradient is zero (it requires grad, as PyTorch's), ``log|det|``'s
    is ``g A^-T``."""

    _node_name = "LinalgSlogdetBackward0"  # PyTorch's

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor) -> tuple[Tensor, Tensor]:
        sign, logabs = np.linalg.slogdet(_matrices("linalg.slogdet", a))
        sign = np.where(np.isnan(logabs), 0.0, sign)   # numpy's is +-1 for a NaN determinant; PyTorch's is 0
        ctx.singular = bool(np.isneginf(logabs).any())
        sign, logabs = _placed(sign, a), _placed(logabs, a)
        ctx.save_for_backward(a)
        ctx.input = a
        return sign, logabs

    @staticmethod
    def backward(ctx: FunctionCtx, grad_sign: Tensor, grad: Tensor) -> Tensor:  # noqa: ARG004 - the sign's is zero
        (a,) = ctx.saved_tensors
        if ctx.singular:   # its inverse would raise, naming linalg.inv
            raise _singular_gradient("linalg.slogdet")
        return grad.unsqueeze(-1).unsqueeze(-1) * _transposed_inverse(a)

    @staticmethod
    def jvp(ctx: FunctionCtx, a_t: Tensor) -> tuple[Tensor, Tensor]:
        if ctx.singular:
            raise _singular_gradient("linalg.slogdet")
        change = (_transposed_inverse(ctx.input) * a_t).sum((-2, -1))
        return change * 0.0, change


class SignAndLogAbsDet(NamedTuple):
    """``torch.return_types.slogdet``'s fields."""

    sign: Tensor
    logabsdet: Tensor


@public("function", "method")
def inverse(input: Tensor) -> Tensor:
    """The inverse of a square matrix (of each of a batch)."""
    return LinalgInv.apply(input)


@public("function", "method")
def det(input: Tensor) -> Tensor:
    """The determinant of a square matrix (of each of a batch)."""
    return LinalgDet.apply(input)


@public("function", "method")
def slogdet(input: Tensor) -> SignAndLogAbsDet:
    """``(sign, logabsdet)`` of the determinant: exact where ``det`` would overflow or underflow."""
    return SignAndLogAbsDet(*LinalgSlogdet.apply(input))


@public("function", "method")
def logdet(input: Tensor) -> Tensor:
    """``log(det)``: NaN for a negative determinant, -inf for 0, as PyTorch's; from ``slogdet``."""
    sign, logabs = slogdet(input)
    return where(sign < 0, math.nan, logabs)


@public("function", "method")
def matrix_power(A: Tensor, n: int) -> Tensor:
    """``A`` multiplied by itself ``n`` times (by repeated squaring), the identity for 0, powers of the
    inverse for negative ``n``."""
    if not isinstance(n, int):
        raise TypeError(f"linalg.matrix_power(): argument 'n' must be int, not {type(n).__name__}")
    if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
        sizes = f"{A.shape[-2]} by {A.shape[-1]}" if A.ndim >= 2 else f"a {A.ndim}-D tensor"
        raise RuntimeError(f"linalg.matrix_power: A must be batches of square matrices, but they are {sizes} "
                           "matrices")
    if n == 0:   # the identity, requiring grad (zeros) as PyTorch's does, whatever A holds (NaN too)
        everywhere = to(from_host(np.ones(A.shape[-2:], np.bool_)), A.device)
        return where(everywhere, to(from_host(np.eye(A.shape[-1], dtype=A._data.dtype)), A.device), A)
    base = inverse(A) if n < 0 else A
    n = abs(n)
    result = None
    while n:
        if n & 1:
            result = base if result is None else result @ base
        n >>= 1
        if n:
            base = base @ base
    return result
