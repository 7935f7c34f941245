"""Matrix products with PyTorch's ``matmul`` rules: dot (1-D @ 1-D), mv, mm, and the broadcast batched
product for everything else."""
from __future__ import annotations

import math
import operator
from typing import Sequence

import numpy as np

from .. import dtypes
from ..shapes import wrap_dim, wrap_dims
from ..autograd.forward_ad import tangent_sum
from ..tensor import Tensor
from . import scalar
from .arithmetic import where
from .lowering import Reduction, intrinsic
from .meta_rules import TensorMeta, reduction, unchanged
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


# ---- products PyTorch names: composites of matmul --------------------------------------------------
def _check_dims(op: str, **tensors: Tensor) -> None:
    for name, (t, ndim) in tensors.items():
        if t.ndim != ndim:
            raise RuntimeError(f"{op}: {name} must be a {ndim}D tensor, got a {t.ndim}D tensor of shape "
                               f"{list(t.shape)}")


@public("function", "method")
def bmm(input: Tensor, mat2: Tensor) -> Tensor:
    """The product of two batches of matrices, (b, n, m) @ (b, m, p); no broadcasting, as in PyTorch."""
    _check_dims("bmm", batch1=(input, 3), batch2=(mat2, 3))
    if input.shape[0] != mat2.shape[0]:
        raise RuntimeError(f"bmm: batch1 and batch2 must have the same batch size, got {input.shape[0]} and "
                           f"{mat2.shape[0]} (shapes {list(input.shape)} and {list(mat2.shape)})")
    return _matmul(input, mat2)


@public("function", "method")
def mv(input: Tensor, vec: Tensor) -> Tensor:
    """A matrix times a vector, (n, m) @ (m,) (missing before 2026-11-28; ``matmul`` of the two was its
    spelling)."""
    if input.ndim != 2 or vec.ndim != 1:
        raise RuntimeError(f"vector + matrix @ vector expected, got 1, {input.ndim}, {vec.ndim}")
    if input.shape[1] != vec.shape[0]:
        raise RuntimeError(f"size mismatch, got input ({input.shape[0]}), mat ({input.shape[0]}x{input.shape[1]}), "
                           f"vec ({vec.shape[0]})")
    return _mv(input, vec)


@public("function", "method")
def outer(input: Tensor, vec2: Tensor) -> Tensor:
    """The outer product of two vectors, (n,) x (m,) -> (n, m)."""
    _check_dims("outer", input=(input, 1), vec2=(vec2, 1))
    return input.unsqueeze(1) * vec2


def _scaled_sum(op: str, input: Tensor, product: Tensor, beta: float, alpha: float) -> Tensor:
    """``beta * input + alpha * product``, ``input`` broadcast to the product's shape. ``beta == 0``
    ignores ``input``'s values (NaN and inf too), as PyTorch's addmm does, and gives it a zero gradient."""
    try:
        if np.broadcast_shapes(tuple(input.shape), tuple(product.shape)) != tuple(product.shape):
            raise ValueError
    except ValueError:
        raise RuntimeError(f"{op}: the input of shape {list(input.shape)} does not broadcast to the product's "
                           f"shape {list(product.shape)}") from None
    if alpha != 1:
        product = product * alpha
    if beta == 0:
        return product + input.nan_to_num(0.0, 0.0, 0.0) * 0.0
    return (input if beta == 1 else input * beta) + product


@public("function", "method")
def addmm(input: Tensor, mat1: Tensor, mat2: Tensor, *, beta: float = 1, alpha: float = 1) -> Tensor:
    """``beta * input + alpha * (mat1 @ mat2)``, ``input`` broadcast to the product's shape."""
    _check_dims("addmm", mat1=(mat1, 2), mat2=(mat2, 2))
    return _scaled_sum("addmm", input, mm(mat1, mat2), beta, alpha)


@public("function", "method")
def baddbmm(input: Tensor, batch1: Tensor, batch2: Tensor, *, beta: float = 1, alpha: float = 1) -> Tensor:
    """``beta * input + alpha * bmm(batch1, batch2)``, ``input`` broadcast to the product's shape."""
    return _scaled_sum("baddbmm", input, bmm(batch1, batch2), beta, alpha)


# ---- norms ---------------------------------------------------------------------------------------------
def _safe_root(total: Tensor, exponent: float) -> Tensor:
    """``total ** exponent`` (a root, exponent in (0, 1)), taken as 0 where ``total`` is 0 with a zero
    gradient there, as PyTorch's norm_backward masks it: the root's derivative at 0 is infinite, and
    0 * inf would be NaN. The root's own input is made safe too, so that the gradient of the masked
    branch, which is differentiated as well, is finite (and so the second derivative)."""
    zero = total == 0.0
    safe = where(zero, 1.0, total)
    root = safe.sqrt() if exponent == 0.5 else safe ** exponent
    return where(zero, 0.0, root)


def _nonzero_count_forward(a, dim, keepdim):
    return np.add.reduce(a != 0, dim, a.dtype, None, keepdim)


# The 0-"norm": how many elements are nonzero (NaN counts). A count is a step function, and PyTorch's
# norm backward gives its input no gradient (None: ``.grad`` stays None, ``autograd.grad`` calls the
# input unused), not zeros; the output requires grad all the same, and its node has PyTorch's name.
_nonzero_count = defop("nonzero_count", ("self",), _nonzero_count_forward, "LinalgVectorNormBackward0",
                       meta=reduction(unchanged), kind="reduction",
                       lower=Reduction(0, operator.add, map=lambda self: scalar.where(self != 0.0, 1.0, 0.0)),
                       self=lambda grad: None,
                       jvp=lambda self_t, dim, keepdim: self_t.sum(dim, keepdim=keepdim) * 0.0)


def _refuse_empty_reduction(input: Tensor, p: float, dim: int | Sequence[int] | None) -> None:
    """PyTorch's error for a norm with no identity (``inf``, or a negative ``p``: the minimum, the sum of
    infinite powers) over an empty dimension, where the formula would give a finite or infinite number."""
    if input._data.size != 0:
        return
    named = () if dim is None else (dim,) if isinstance(dim, int) else tuple(dim)
    if not named:
        raise RuntimeError(f"linalg.vector_norm cannot compute the {p:g} norm on an empty tensor because the "
                           "operation does not have an identity")
    for d in named:
        if input.shape[wrap_dim(d, input._data.ndim, 'linalg.vector_norm')] == 0:
            raise RuntimeError(f"linalg.vector_norm cannot compute the {p:g} norm on the dimension {d} because this "
                               "dimension is empty and the operation does not have an identity")


@public("function", "method")
def norm(input: Tensor, p: float | str | None = "fro", dim: int | Sequence[int] | None = None,
         keepdim: bool = False, dtype=None) -> Tensor:
    """The vector ``p``-norm of ``input``'s elements (along ``dim``): ``p`` 2 or ``"fro"`` (the square
    root of the sum of squares), 1, ``inf`` (the largest magnitude), ``-inf``, 0 (the count of nonzero
    elements) or any other number. The gradient of a zero norm is zero, as in PyTorch; a count (``p=0``)
    gives its input no gradient at all (None), as PyTorch's does."""
    if input._data.dtype.kind != "f":
        raise RuntimeError(f"linalg.vector_norm: Expected a floating point or complex tensor as input. Got "
                           f"{input._data.dtype.name}: convert it first, e.g. with .float()")
    if dtype is not None:
        input = input.to(dtype)
    if input._data.dtype == np.float16:   # in float32, as PyTorch's: 650 ** 2 overflowed float16 to inf
        return norm(input.float(), p, dim, keepdim).to(np.float16)
    if p is None or p == "fro":
        p = 2.0
    if isinstance(p, str):
        raise RuntimeError(f"norm: p={p!r} is not supported here (the nuclear norm takes an SVD): use "
                           f"jitgrad.linalg.matrix_norm(input, {p!r}), or pass a number, or 'fro'")
    if p < 0 or p == math.inf:
        _refuse_empty_reduction(input, p, dim)
    magnitude = input.abs()
    if p == math.inf:
        return magnitude.amax(dim, keepdim=keepdim)
    if p == -math.inf:
        return magnitude.amin(dim, keepdim=keepdim)
    if p == 0:   # the count of nonzero elements, whose input gets no gradient (None), as in PyTorch
        dims = None if dim is None else wrap_dims(dim, input._data.ndim, "linalg.vector_norm")
        return _nonzero_count(input, dim=dims, keepdim=keepdim)
    if p == 1:
        return magnitude.sum(dim, keepdim=keepdim)
    if p == 2:
        return _safe_root((input * input).sum(dim, keepdim=keepdim), 0.5)
    if p > 1:
        return _safe_root((magnitude ** p).sum(dim, keepdim=keepdim), 1.0 / p)
    # p < 1: |x| ** p has an infinite derivative at x = 0 (and is infinite there for p < 0); PyTorch's
    # norm_backward gives zero entries a zero gradient, so the power is taken of 1 there and replaced
    zero = magnitude == 0.0
    powers = where(zero, 0.0 if p > 0 else math.inf, where(zero, 1.0, magnitude) ** p).sum(dim, keepdim=keepdim)
    if p > 0:
        return _safe_root(powers, 1.0 / p)
    return powers ** (1.0 / p)   # a sum made infinite by a zero entry gives 0, with a zero gradient
