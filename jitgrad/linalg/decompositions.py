"""Matrix decompositions computed by LAPACK through numpy: ``cholesky``, ``eigh``, ``svd``, ``qr`` and
the triangular solve their gradients need.

Each is an ``autograd.Function`` (the pattern of ``jitgrad/ops/matrix_functions.py``): numpy's forward,
and a backward written in jitgrad ops on the saved inputs and outputs, PyTorch's formula, so gradients
of every order follow (``gradgradcheck`` passes). The backward of ``eigh`` and ``svd`` divides by the
differences of eigenvalues (of squared singular values): finite for distinct ones only, as in PyTorch.
No backend lowers LAPACK, so each refuses inside a compiled (traced) function with an error that says to
call it outside, as ``jitgrad.inverse`` does."""
from __future__ import annotations

import numpy as np

from ..autograd.function import Function, FunctionCtx
from ..ops.comparisons import scalar_type
from ..ops.device_copy import to
from ..ops.host_reads import from_host, host_values, refuse_when_traced
from ..ops.broadcast_sums import sum_to
from ..tensor import Tensor


def matrices(op: str, a: Tensor, *, square: bool = True) -> np.ndarray:
    """``a``'s values, checked to be float32/float64 (batches of) matrices, square where ``square``."""
    check_matrices(op, a, square=square)
    return host_values(a)


def check_matrices(op: str, a: Tensor, *, square: bool = True) -> None:
    """``matrices``' checks, without reading the values: PyTorch's errors, and the refusal to be traced."""
    refuse_when_traced(op, "its forward is numpy's LAPACK call, which no backend lowers")
    if a._data.dtype.kind != "f":
        raise RuntimeError(f"{op}: Expected a floating point or complex tensor as input. Got {scalar_type(a)}")
    if a._data.dtype == np.float16:
        raise RuntimeError(f"{op}: not implemented for 'Half' on the CPU: convert to float32 first")
    if a._data.ndim < 2:
        raise RuntimeError(f"{op}: The input tensor A must have at least 2 dimensions.")
    if square and a.shape[-1] != a.shape[-2]:
        raise RuntimeError(f"{op}: A must be batches of square matrices, but they are {a.shape[-2]} by "
                           f"{a.shape[-1]} matrices")


def placed(array: np.ndarray, like: Tensor) -> Tensor:
    """A result computed on the host, in ``like``'s dtype and on its device."""
    return to(from_host(np.asarray(array, like._data.dtype)), like.device)


def on_device_of(array: np.ndarray, like: Tensor) -> Tensor:
    """A result computed on the host (an ``info``, a rank), in its own dtype, on ``like``'s device."""
    return to(from_host(np.asarray(array)), like.device)


def batch_element(op: str, batch_shape: tuple[int, ...], flat_index: int) -> str:
    """PyTorch's ``"(Batch element i): "`` prefix of an error in one matrix of a batch."""
    return f"{op}: (Batch element {flat_index}): " if batch_shape else f"{op}: "


def _eye_like(values: Tensor) -> Tensor:
    """The identity matrix of the size of ``values``' last dimension, in its dtype."""
    return placed(np.eye(values.shape[-1]), values)


def _substituted(triangle: np.ndarray, rhs: np.ndarray, upper: bool) -> np.ndarray:
    """``triangle^-1 rhs`` by BLAS's ``trsm`` (plain substitution, as PyTorch's solver), matrix by matrix:
    with a zero on the diagonal it divides by it and gives PyTorch's infinities and NaNs."""
    from scipy.linalg import blas   # imported on first use: only a singular triangle needs it
    if rhs.size == 0:
        return np.zeros(rhs.shape, rhs.dtype)
    flat_a = triangle.reshape((-1,) + triangle.shape[-2:])
    flat_b = rhs.reshape((-1,) + rhs.shape[-2:])
    trsm = blas.get_blas_funcs("trsm", (flat_a, flat_b))
    result = np.empty(flat_b.shape, flat_b.dtype)
    for i, (matrix, columns) in enumerate(zip(flat_a, flat_b)):
        result[i] = trsm(1.0, matrix, columns, lower=0 if upper else 1)
    return result.reshape(rhs.shape)


class SolveTriangular(Function):
    """``X = A^-1 B`` for triangular ``A`` (only its ``upper`` or lower triangle is read, its diagonal
    taken as ones where ``unitriangular``); backward ``gB = A^-T gX``, ``gA = -gB X^T`` on the triangle."""

    _node_name = "LinalgSolveTriangularBackward0"  # PyTorch's

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, b: Tensor, upper: bool, unitriangular: bool) -> Tensor:
        values = matrices("linalg.solve_triangular", a)
        rhs = host_values(b)
        triangle = np.triu(values) if upper else np.tril(values)
        if unitriangular:   # the diagonal is taken as ones, whatever A holds there
            diagonal = np.arange(a.shape[-1])
            triangle[..., diagonal, diagonal] = 1.0
        batch = np.broadcast_shapes(values.shape[:-2], rhs.shape[:-2])
        triangle = np.broadcast_to(triangle, batch + triangle.shape[-2:])
        rhs = np.broadcast_to(rhs, batch + rhs.shape[-2:])
        with np.errstate(all="ignore"):
            try:
                result = np.linalg.solve(triangle, rhs)
            except np.linalg.LinAlgError:   # a zero on the diagonal: PyTorch's inf and NaN, not an error
                result = _substituted(triangle, rhs, upper)
        result = placed(result, a)
        ctx.save_for_backward(a, result)
        ctx.upper, ctx.unitriangular = upper, unitriangular
        ctx.shapes = (tuple(a.shape), tuple(b.shape))
        ctx.input, ctx.result = a, result
        return result

    @staticmethod
    def jvp(ctx: FunctionCtx, a_t: Tensor | None, b_t: Tensor | None,
            upper_t: None, unit_t: None) -> Tensor:  # noqa: ARG004 - flags have no tangents
        """``dX = A^-1 (dB - tri(dA) X)``."""
        change = ctx.result * 0.0 if b_t is None else b_t
        if a_t is not None:
            offset = 1 if ctx.unitriangular else 0
            change = change - (a_t.triu(offset) if ctx.upper else a_t.tril(-offset)) @ ctx.result
        return solve_triangular(ctx.input, change, upper=ctx.upper, unitriangular=ctx.unitriangular)

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, Tensor, None, None]:
        a, result = ctx.saved_tensors
        grad_b = solve_triangular(a.mT, grad, upper=not ctx.upper, unitriangular=ctx.unitriangular)
        grad_a = -(grad_b @ result.mT)
        offset = 1 if ctx.unitriangular else 0
        grad_a = grad_a.triu(offset) if ctx.upper else grad_a.tril(-offset)
        return sum_to(grad_a, ctx.shapes[0]), sum_to(grad_b, ctx.shapes[1]), None, None


def solve_triangular(A: Tensor, B: Tensor, *, upper: bool, left: bool = True,
                     unitriangular: bool = False) -> Tensor:
    """The solution ``X`` of ``A X = B`` (``X A = B`` where not ``left``) for a triangular ``A``."""
    if A.dtype != B.dtype:
        raise RuntimeError(f"linalg.solve_triangular: Expected A and B to have the same dtype, but found "
                           f"A of type {scalar_type(A)} and B of type {scalar_type(B)} instead")
    if B.ndim < 2:
        raise RuntimeError("linalg.solve_triangular: The input tensor B must have at least 2 dimensions.")
    if not left:
        return SolveTriangular.apply(A.mT, B.mT, not upper, unitriangular).mT
    if A.shape[-1] != B.shape[-2]:
        raise RuntimeError(f"linalg.solve_triangular: Incompatible shapes of A and B for the equation AX = B "
                           f"({A.shape[-2]}x{A.shape[-1]} and {B.shape[-2]}x{B.shape[-1]})")
    return SolveTriangular.apply(A, B, upper, unitriangular)


def leading_minor_failures(values: np.ndarray) -> np.ndarray:
    """LAPACK's ``potrf`` info per matrix: 0, or the order of the first leading minor that is not
    positive-definite (PyTorch's ``cholesky_ex`` info)."""
    from scipy.linalg import lapack   # imported on first use: only a failed factorization needs it
    flat = values.reshape((-1,) + values.shape[-2:])
    potrf = lapack.get_lapack_funcs("potrf", (flat,))
    info = [potrf(matrix, lower=True)[1] for matrix in flat]
    return np.asarray(info, np.int32).reshape(values.shape[:-2])


def lu_failures(values: np.ndarray) -> np.ndarray:
    """LAPACK's ``getrf`` info per matrix: 0, or the (1-based) index of the first zero pivot."""
    from scipy.linalg import lapack   # imported on first use: only a singular matrix needs it
    flat = values.reshape((-1,) + values.shape[-2:])
    getrf = lapack.get_lapack_funcs("getrf", (flat,))
    return np.asarray([getrf(matrix)[2] for matrix in flat], np.int32).reshape(values.shape[:-2])


def _first_nan_pivot(factor: np.ndarray) -> np.ndarray:
    """Per matrix, the order of the first NaN on the factor's diagonal, or 0: a NaN pivot fails LAPACK's
    ``potrf`` in PyTorch's build (its ``info``), where numpy's and scipy's carry it through."""
    nan = np.isnan(np.diagonal(factor, 0, -2, -1))
    return np.where(nan.any(-1), nan.argmax(-1) + 1, 0)


class Cholesky(Function):
    """``L`` with ``L L^T = A`` from ``A``'s lower triangle; backward PyTorch's: ``gA = L^-T Φ(L^T gL) L^-1``
    with ``Φ`` the lower triangle, its diagonal halved, made symmetric."""

    _node_name = "LinalgCholeskyExBackward0"  # PyTorch's

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, check_errors: bool) -> tuple[Tensor, Tensor]:
        values = matrices("linalg.cholesky", a)
        try:
            result = np.linalg.cholesky(values)
            info = np.zeros(values.shape[:-2], np.int32)
        except np.linalg.LinAlgError:
            info = leading_minor_failures(values)
            result = np.linalg.cholesky(np.where((info == 0)[..., None, None], values, np.eye(values.shape[-1])))
        info = np.where(info == 0, _first_nan_pivot(result), info).astype(np.int32)
        result = np.where((info == 0)[..., None, None], result, np.nan)
        if check_errors and info.any():
            flat = int(np.flatnonzero(info.reshape(-1))[0])
            raise RuntimeError(f"{batch_element('linalg.cholesky', values.shape[:-2], flat)}The factorization "
                               "could not be completed because the input is not positive-definite (the "
                               f"leading minor of order {info.reshape(-1)[flat]} is not positive-definite).")
        result = placed(result, a)
        info = on_device_of(info, a)
        ctx.mark_non_differentiable(info)
        ctx.save_for_backward(result)
        ctx.result = result
        return result, info

    @staticmethod
    def jvp(ctx: FunctionCtx, a_t: Tensor, check_t: None) -> tuple[Tensor, None]:  # noqa: ARG004
        """``dL = L Φ(L^-1 dA L^-T)``, ``Φ`` the lower triangle with its diagonal halved."""
        lower = ctx.result
        inner = solve_triangular(lower.mT, solve_triangular(lower, a_t, upper=False), upper=True, left=False)
        return lower @ (inner.tril() - 0.5 * inner.diagonal(0, -2, -1).diag_embed()), None

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor, grad_info: Tensor) -> tuple[Tensor, None]:  # noqa: ARG004
        (lower,) = ctx.saved_tensors
        grad_a = (lower.mT @ grad).tril()
        grad_a = 0.5 * (grad_a + grad_a.tril(-1).mT)
        grad_a = solve_triangular(lower.mT, grad_a, upper=True)
        return solve_triangular(lower, grad_a, upper=False, left=False), None


class Eigh(Function):
    """Eigenvalues (ascending) and eigenvectors of a symmetric matrix from its ``UPLO`` triangle; backward
    PyTorch's: ``gA = V (diag(gL) + skew(V^T gV) / E) V^T`` with ``E_ij = L_j - L_i``."""

    _node_name = "LinalgEighBackward0"  # PyTorch's

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, uplo: str) -> tuple[Tensor, Tensor]:
        values, vectors = np.linalg.eigh(matrices("linalg.eigh", a), UPLO=uplo)
        values, vectors = placed(values, a), placed(vectors, a)
        ctx.save_for_backward(values, vectors)
        ctx.set_materialize_grads(False)   # without the vectors' gradient no eigenvalue gap is divided by
        ctx.values, ctx.vectors = values, vectors
        return values, vectors

    @staticmethod
    def jvp(ctx: FunctionCtx, a_t: Tensor, uplo_t: None) -> tuple[Tensor, Tensor]:  # noqa: ARG004
        """``dL = diag(V^T dA V)``, ``dV = V (V^T dA V / E)`` off the diagonal, ``E_ij = L_j - L_i``."""
        values, vectors = ctx.values, ctx.vectors
        inner = vectors.mT @ a_t @ vectors
        eye = _eye_like(values)
        gaps = values.unsqueeze(-2) - values.unsqueeze(-1)
        return inner.diagonal(0, -2, -1), vectors @ (inner / (gaps + eye) * (1.0 - eye))

    @staticmethod
    def backward(ctx: FunctionCtx, grad_values: Tensor | None,
                 grad_vectors: Tensor | None) -> tuple[Tensor | None, None]:
        values, vectors = ctx.saved_tensors
        if grad_vectors is None:
            if grad_values is None:
                return None, None
            return (vectors * grad_values.unsqueeze(-2)) @ vectors.mT, None   # exact at repeated eigenvalues
        inner = vectors.mT @ grad_vectors
        inner = 0.5 * (inner - inner.mT)
        eye = _eye_like(values)
        gaps = values.unsqueeze(-2) - values.unsqueeze(-1)
        inner = inner / (gaps + eye) * (1.0 - eye)
        if grad_values is not None:
            inner = inner + grad_values.diag_embed()
        return vectors @ inner @ vectors.mT, None


class Svd(Function):
    """The reduced SVD ``A = U diag(S) Vh``; backward PyTorch's (``svd_backward``) for distinct singular
    values, with the terms for the complement of ``U``'s (``V``'s) span on tall (wide) matrices."""

    _node_name = "LinalgSvdBackward0"  # PyTorch's

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        u, s, vh = np.linalg.svd(matrices("linalg.svd", a, square=False), full_matrices=False)
        u, s, vh = placed(u, a), placed(s, a), placed(vh, a)
        ctx.save_for_backward(u, s, vh)
        ctx.set_materialize_grads(False)   # without U's and Vh's gradients no gap is divided by
        ctx.factors = (u, s, vh)
        return u, s, vh

    @staticmethod
    def jvp(ctx: FunctionCtx, a_t: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """With ``dP = U^T dA V`` and ``F_ij = 1 / (s_j^2 - s_i^2)``: ``dS = diag(dP)``,
        ``dU = U (F o (dP S + S dP^T)) + (I - U U^T) dA V / S``, and ``dV`` likewise with ``dA^T``."""
        u, s, vh = ctx.factors
        v = vh.mT
        projected = u.mT @ a_t @ v
        squares = s * s
        eye = _eye_like(s)
        gaps = (squares.unsqueeze(-2) - squares.unsqueeze(-1) + eye)
        column, row = s.unsqueeze(-2), s.unsqueeze(-1)
        spin_u = (projected * column + row * projected.mT) / gaps * (1.0 - eye)
        spin_v = (row * projected + projected.mT * column) / gaps * (1.0 - eye)
        a_v, a_t_u = a_t @ v, a_t.mT @ u
        grad_u = u @ spin_u + (a_v - u @ (u.mT @ a_v)) / column
        grad_v = v @ spin_v + (a_t_u - v @ (v.mT @ a_t_u)) / column
        return grad_u, projected.diagonal(0, -2, -1), grad_v.mT

    @staticmethod
    def backward(ctx: FunctionCtx, grad_u: Tensor | None, grad_s: Tensor | None,
                 grad_vh: Tensor | None) -> Tensor | None:
        u, s, vh = ctx.saved_tensors
        if grad_u is None and grad_vh is None:
            return None if grad_s is None else (u * grad_s.unsqueeze(-2)) @ vh   # exact at repeated values
        grad_u = u * 0.0 if grad_u is None else grad_u
        grad_vh = vh * 0.0 if grad_vh is None else grad_vh
        grad_s = s * 0.0 if grad_s is None else grad_s
        m, n, k = u.shape[-2], vh.shape[-1], s.shape[-1]
        v, grad_v = vh.mT, grad_vh.mT
        inner_u, inner_v = u.mT @ grad_u, v.mT @ grad_v
        inner_u, inner_v = inner_u - inner_u.mT, inner_v - inner_v.mT
        squares = s * s
        eye = _eye_like(s)
        gaps = squares.unsqueeze(-2) - squares.unsqueeze(-1) + eye
        grad = (inner_u * s.unsqueeze(-2) + s.unsqueeze(-1) * inner_v) / gaps + grad_s.diag_embed()
        if m > k:
            scaled = grad_u / s.unsqueeze(-2)
            return (u @ grad + scaled - u @ (u.mT @ scaled)) @ vh
        if n > k:
            scaled = grad_v.mT / s.unsqueeze(-1)
            return u @ (grad @ vh + scaled - (scaled @ v) @ vh)
        return u @ grad @ vh


class Qr(Function):
    """The reduced QR ``A = Q R``; backward PyTorch's for ``m >= n``:
    ``gA = [gQ + Q sym(triu(gR R^T - Q^T gQ))] R^-T``."""

    _node_name = "LinalgQrBackward0"  # PyTorch's

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor) -> tuple[Tensor, Tensor]:
        q, r = np.linalg.qr(matrices("linalg.qr", a, square=False), mode="reduced")
        q, r = placed(q, a), placed(r, a)
        ctx.save_for_backward(q, r)
        ctx.wide = a.shape[-2] < a.shape[-1]
        ctx.factors = (q, r)
        return q, r

    @staticmethod
    def jvp(ctx: FunctionCtx, a_t: Tensor) -> tuple[Tensor, Tensor]:
        """For ``m >= n``, with ``X = Q^T dA R^-1`` and ``Ω`` its strictly lower part made skew:
        ``dR = (X - Ω) R``, ``dQ = dA R^-1 - Q (X - Ω)``."""
        if ctx.wide:
            raise NotImplementedError("linalg.qr: the derivative of QR of a wide matrix (more columns than rows) "
                                      "is not implemented: pass A.mT, or pad it to be square")
        q, r = ctx.factors
        a_t_r = solve_triangular(r, a_t, upper=True, left=False)
        inner = q.mT @ a_t_r
        lower = inner.tril(-1)
        upper_part = inner - (lower - lower.mT)
        return a_t_r - q @ upper_part, upper_part @ r

    @staticmethod
    def backward(ctx: FunctionCtx, grad_q: Tensor, grad_r: Tensor) -> Tensor:
        if ctx.wide:
            raise NotImplementedError("linalg.qr: the derivative of QR of a wide matrix (more columns than rows) "
                                      "is not implemented: pass A.mT, or pad it to be square")
        q, r = ctx.saved_tensors
        grad = (grad_r @ r.mT - q.mT @ grad_q).triu()
        grad = grad + grad.mT - grad.diagonal(0, -2, -1).diag_embed()
        return solve_triangular(r.mT, q @ grad + grad_q, upper=False, left=False)
