"""Matrix products with PyTorch's ``matmul`` rules: dot (1-D @ 1-D), mv, mm, and the broadcast batched
product for everything else."""
from __future__ import annotations

import numpy as np

from .. import dtypes
from ..autograd.forward_ad import tangent_sum
from ..tensor import Tensor
from .lowering import intrinsic
from .meta_rules import TensorMeta
from .op_callers import caller
from .public import public
from .registry import defop


def _explain_matmul(values, attrs):
    """What went wrong in a matrix product: the shapes, or (the shapes fitting) the dtypes, which
    matrix products do not promote as arithmetic does."""
    a, b = (np.shape(v) for v in values)
    dtype_a, dtype_b = (np.asarray(v).dtype for v in values)
    also = f"; the dtypes differ too ({dtype_a} and {dtype_b})" if dtype_a != dtype_b else ""
    if a[-1] != (b[-2] if len(b) > 1 else b[0]):
        if len(a) == 1 and len(b) == 1:
            return (f"inconsistent tensor size, expected tensor [{a[0]}] and src [{b[0]}] to have the same "
                    f"number of elements, but got {a[0]} and {b[0]} elements respectively{also}")
        rows = a[-2] * int(np.prod(a[:-2])) if len(a) > 1 else 1
        cols = b[-1] if len(b) > 1 else 1
        return (f"mat1 and mat2 shapes cannot be multiplied ({rows}x{a[-1]} and "
                f"{b[-2] if len(b) > 1 else b[0]}x{cols}){also}")
    try:
        np.broadcast_shapes(a[:-2], b[:-2])
    except ValueError:
        return f"the batch dimensions {a[:-2]} and {b[:-2]} cannot be broadcast together{also}"
    return dtype_mismatch("matrix products", dtype_a, dtype_b) if dtype_a != dtype_b else None


def dtype_mismatch(what: str, dtype_a: np.dtype, dtype_b: np.dtype) -> str:
    """The message for operands that must share a dtype and do not: says which, and what to do."""
    common = dtypes.result_type(np.empty(0, dtype_a), np.empty(0, dtype_b))
    return (f"expected both operands to have the same dtype, but got {dtype_a} and {dtype_b}: {what} do "
            f"not promote dtypes; convert one operand first, e.g. with .to(jitgrad.{common})")


def _matmul_forward(a, b):
    if a.dtype != b.dtype:
        raise TypeError(dtype_mismatch("matrix products", a.dtype, b.dtype))
    return np.matmul(a, b)


# for operands of one dtype (which a staged replay's guards fix) the forward is np.matmul itself
_matmul_forward.specialize = lambda a, b: np.matmul if a.dtype == b.dtype else None


def _matmul_meta(self, other):
    """numpy's matmul: a vector operand is a row (left) or a column (right) whose dimension is then
    dropped; the batch dimensions broadcast. Both operands have one dtype (the forward checks)."""
    a = self.shape if self.ndim > 1 else (1,) + self.shape
    b = other.shape if other.ndim > 1 else other.shape + (1,)
    shape = np.broadcast_shapes(a[:-2], b[:-2]) + (a[-2], b[-1])
    if self.ndim == 1:
        shape = shape[:-2] + shape[-1:]
    if other.ndim == 1:
        shape = shape[:-1]
    return TensorMeta(tuple(shape), self.dtype)


def _matmul_self_grad(grad, self, other):
    if other.ndim == 1:
        return grad.unsqueeze(-1) * other
    if self.ndim == 1:
        return matmul(other, grad.unsqueeze(-1)).squeeze(-1)
    return matmul(grad, other.mT)


def _matmul_other_grad(grad, self, other):
    if self.ndim == 1:
        return self.unsqueeze(-1) * grad.unsqueeze(-2)
    if other.ndim == 1:
        return matmul(self.mT, grad.unsqueeze(-1)).squeeze(-1)
    return matmul(self.mT, grad)


def _product_jvp(product):
    """The JVP of a product bilinear in its operands: d(a @ b) = da @ b + a @ db."""
    return lambda self_t, other_t, self, other: tangent_sum(None if self_t is None else product(self_t, other),
                                                            None if other_t is None else product(self, other_t))


_dot = defop("dot", ("self", "other"), _matmul_forward, "DotBackward0", explain=_explain_matmul,
             meta=_matmul_meta, lower=intrinsic("dot"),
             self=lambda grad, other: grad * other,
             other=lambda grad, self: grad * self,
             jvp=_product_jvp(lambda a, b: _dot(a, b)))

_mv = defop("mv", ("self", "other"), _matmul_forward, "MvBackward0", explain=_explain_matmul,
            meta=_matmul_meta, lower=intrinsic("gemv"),
            self=lambda grad, other: grad.unsqueeze(1) * other,
            other=lambda grad, self: _mv(self.T, grad),
            jvp=_product_jvp(lambda a, b: _mv(a, b)))

_mm = defop("mm", ("self", "other"), _matmul_forward, "MmBackward0", explain=_explain_matmul,
            meta=_matmul_meta, lower=intrinsic("gemm"),
            self=lambda grad, other: _mm(grad, other.T),
            other=lambda grad, self: _mm(self.T, grad),
            jvp=_product_jvp(lambda a, b: _mm(a, b)))

_matmul = defop("matmul", ("self", "other"), _matmul_forward, "MatmulBackward0", explain=_explain_matmul,
                meta=_matmul_meta, lower=intrinsic("batched_gemm"),
                self=_matmul_self_grad,
                other=_matmul_other_grad,
                jvp=_product_jvp(lambda a, b: _matmul(a, b)))


# ``matmul`` picks one of these on every ``@``: their callers, not the ops' general dispatch (``op_callers``).
_dot, _mv, _mm, _matmul = (caller(op) for op in (_dot, _mv, _mm, _matmul))


@public("function", "method")
def matmul(input: Tensor, other: Tensor) -> Tensor:
    """``input @ other`` with PyTorch's rules for 1-D, 2-D and batched (broadcast) operands."""
    if not isinstance(input, Tensor) or not isinstance(other, Tensor):
        raise TypeError(f"matmul(): argument 'other' must be Tensor, not "
                        f"{type(other if isinstance(input, Tensor) else input).__name__}")
    a, b = input._data.ndim, other._data.ndim
    if a == 2 == b:
        return _mm(input, other)
    if a == 0 or b == 0:
        raise RuntimeError(f"both arguments to matmul need to be at least 1D, but they are {a}D and {b}D")
    if a == 1 and b == 1:
        return _dot(input, other)
    if a == 2 and b == 1:
        return _mv(input, other)
    return _matmul(input, other)


@public("function", "method")
def mm(input: Tensor, mat2: Tensor) -> Tensor:
    if input.ndim != 2 or mat2.ndim != 2:
        raise RuntimeError(f"mm: both arguments must be 2-D matrices, got {input.ndim}-D and {mat2.ndim}-D")
    return _mm(input, mat2)
