"""Solvers and inverses of ``jitgrad.linalg``: ``solve``, ``inv_ex``, ``cholesky(_ex)``, ``eigh``,
``svd``, ``qr``, ``pinv``, ``lstsq``, with PyTorch's signatures, named-tuple results
and error messages; their gradients are the decompositions' (``decompositions.py``)."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ..autograd.function import Function, FunctionCtx
from ..ops.comparisons import scalar_type
from ..ops.host_reads import host_values
from ..ops.matrix_functions import inverse
from ..ops.broadcast_sums import sum_to
from ..tensor import Tensor
from .decompositions import (Cholesky, Eigh, Qr, Svd, batch_element, check_matrices, lu_failures, matrices,
                             on_device_of, placed)


class LinalgSolve(Function):
    """``X = A^-1 B`` for (batches of) square ``A`` and matrix ``B``; backward ``gB = A^-T gX``,
    ``gA = -gB X^T``, each summed down to its operand's (broadcast) shape."""

    _node_name = "LinalgSolveExBackward0"  # PyTorch's

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, b: Tensor) -> Tensor:
        values, rhs = matrices("linalg.solve", a), host_values(b)
        batch = np.broadcast_shapes(values.shape[:-2], rhs.shape[:-2])
        try:
            result = np.linalg.solve(np.broadcast_to(values, batch + values.shape[-2:]),
                                     np.broadcast_to(rhs, batch + rhs.shape[-2:]))
        except np.linalg.LinAlgError:
            flat = int(np.flatnonzero(lu_failures(values).reshape(-1))[0]) if values.ndim > 2 else 0
            raise RuntimeError(f"{batch_element('torch.linalg.solve', values.shape[:-2], flat)}The solver failed "
                               "because the input matrix is singular.") from None
        result = placed(result, a)
        ctx.save_for_backward(a, result)
        ctx.shapes = (tuple(a.shape), tuple(b.shape))
        ctx.input, ctx.result = a, result
        return result

    @staticmethod
    def jvp(ctx: FunctionCtx, a_t: Tensor | None, b_t: Tensor | None) -> Tensor:
        """``dX = A^-1 (dB - dA X)``."""
        change = ctx.result * 0.0 if b_t is None else b_t
        if a_t is not None:
            change = change - a_t @ ctx.result
        return LinalgSolve.apply(ctx.input, change)

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, Tensor]:
        a, result = ctx.saved_tensors
        grad_b = LinalgSolve.apply(a.mT, grad)
        grad_a = -(grad_b @ result.mT)
        return sum_to(grad_a, ctx.shapes[0]), sum_to(grad_b, ctx.shapes[1])


def solve(A: Tensor, B: Tensor, *, left: bool = True) -> Tensor:
    """The solution ``X`` of ``A X = B`` (``X A = B`` where not ``left``); ``B`` is a (batch of) vector(s)
    where it is 1-D or has ``A``'s shape less its last dimension, as in PyTorch."""
    if A.dtype != B.dtype:
        raise RuntimeError(f"linalg.solve: Expected A and B to have the same dtype, but found A of type "
                           f"{scalar_type(A)} and B of type {scalar_type(B)} instead")
    check_matrices("linalg.solve", A)
    vector = B.ndim == 1 or (B.ndim == A.ndim - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    if vector:
        if not left:
            raise RuntimeError("linalg.solve: Vector broadcasting of the left hand side is not supported for "
                               "left=False. In this case linalg.solve is equivalent to B / A.squeeze(-1)")
        B = B.unsqueeze(-1)
    if not left:
        return solve(A.mT, B.mT).mT
    if A.shape[-1] != B.shape[-2]:
        raise RuntimeError(f"linalg.solve: Incompatible shapes of A and B for the equation AX = B "
                           f"({A.shape[-2]}x{A.shape[-1]} and {B.shape[-2]}x{B.shape[-1]})")
    result = LinalgSolve.apply(A, B)
    return result.squeeze(-1) if vector else result


class InverseWithInfo(NamedTuple):
    inverse: Tensor
    info: Tensor


def inv_ex(A: Tensor, *, check_errors: bool = False) -> InverseWithInfo:
    """``(inverse, info)``: ``info`` is LAPACK's, nonzero for a singular matrix, whose inverse (and its
    gradient) is NaN here (LAPACK leaves it undefined); raises on one only where ``check_errors``."""
    values = matrices("linalg.inv_ex", A)   # checked here: inverse's only error left is a singular matrix
    try:
        return InverseWithInfo(inverse(A), on_device_of(np.zeros(values.shape[:-2], np.int32), A))
    except RuntimeError:
        info = lu_failures(values)
    if check_errors:
        flat = int(np.flatnonzero(info.reshape(-1))[0])
        raise RuntimeError(f"{batch_element('linalg.inv_ex', values.shape[:-2], flat)}The diagonal element "
                           f"{info.reshape(-1)[flat]} is zero, the inversion could not be completed because the "
                           "input matrix is singular.")
    singular = placed(info != 0, A).bool().unsqueeze(-1).unsqueeze(-1)
    eye = placed(np.eye(A.shape[-1]), A)
    # NaN for a singular matrix, its gradient too (PyTorch's is): added as A times NaN, not filled in,
    # which would give A a zero gradient through the identity that stood in for it
    poison = A * placed(np.where(info != 0, np.nan, 0.0), A).unsqueeze(-1).unsqueeze(-1)
    return InverseWithInfo(inverse(A.where(~singular, eye)) + poison, on_device_of(info, A))


def inv(A: Tensor) -> Tensor:
    """The inverse of a square matrix (of each of a batch): ``jitgrad.inverse``."""
    return inverse(A)


class FactorWithInfo(NamedTuple):
    L: Tensor
    info: Tensor


def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False) -> FactorWithInfo:
    """``(L, info)``: ``info`` the order of the first leading minor that is not positive-definite (0 when
    the factorization succeeds); that matrix's factor is NaN. Reads ``A``'s lower (``upper``) triangle."""
    if upper:
        lower, info = Cholesky.apply(A.mT, check_errors)
        return FactorWithInfo(lower.mT, info)
    return FactorWithInfo(*Cholesky.apply(A, check_errors))


def cholesky(A: Tensor, *, upper: bool = False) -> Tensor:
    """The Cholesky factor ``L`` (``L L^T = A``), or ``U = L^T`` where ``upper``."""
    return cholesky_ex(A, upper=upper, check_errors=True).L


class Eigen(NamedTuple):
    eigenvalues: Tensor
    eigenvectors: Tensor


def eigh(A: Tensor, UPLO: str = "L") -> Eigen:
    """Eigenvalues (ascending) and orthonormal eigenvectors (columns) of a symmetric matrix, read from
    its lower (``UPLO="L"``) or upper (``"U"``) triangle. Gradients need distinct eigenvalues."""
    if UPLO not in ("L", "U"):
        raise RuntimeError(f"Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return Eigen(*Eigh.apply(A, UPLO))


def eigvalsh(A: Tensor, UPLO: str = "L") -> Tensor:
    """The eigenvalues of ``eigh``."""
    return eigh(A, UPLO).eigenvalues


class SingularValueDecomposition(NamedTuple):
    U: Tensor
    S: Tensor
    Vh: Tensor


def svd(A: Tensor, full_matrices: bool = True) -> SingularValueDecomposition:
    """``A = U diag(S) Vh``, singular values descending. Only the reduced form (``full_matrices=False``):
    the full one's extra columns have no gradient PyTorch defines either."""
    if full_matrices and A.shape[-1] != A.shape[-2]:
        raise NotImplementedError("linalg.svd: full_matrices=True is not implemented for non-square matrices: "
                                  "pass full_matrices=False")
    return SingularValueDecomposition(*Svd.apply(A))


def svdvals(A: Tensor) -> Tensor:
    """The singular values, descending."""
    return Svd.apply(A)[1]


class QR(NamedTuple):
    Q: Tensor
    R: Tensor


def qr(A: Tensor, mode: str = "reduced") -> QR:
    """``A = Q R`` with orthonormal columns in ``Q`` and upper-triangular ``R`` (``mode="reduced"``)."""
    if mode != "reduced":
        raise NotImplementedError(f"linalg.qr: mode={mode!r} is not implemented: only mode='reduced'")
    return QR(*Qr.apply(A))


def _cutoff(values: np.ndarray, atol: float | None, rtol: float | None, size: int) -> np.ndarray:
    """PyTorch's threshold below which singular values (eigenvalue magnitudes) count as zero:
    ``max(atol, rtol * largest)``, ``rtol`` defaulting to ``eps * max(m, n)`` unless ``atol > 0`` is given."""
    if rtol is None:
        rtol = 0.0 if atol is not None and atol > 0 else size * float(np.finfo(values.dtype).eps)
    return np.maximum(values.max(-1, keepdims=True, initial=0.0) * rtol, 0.0 if atol is None else atol)


class PseudoInverse(Function):
    """The Moore-Penrose pseudo-inverse from numpy's SVD (``eigh`` for a symmetric matrix), values at or
    below the cutoff taken as zero; backward PyTorch's ``pinv_backward``, in products of ``A`` and
    ``A^+`` only, so it needs no distinct singular values."""

    _node_name = "LinalgPinvBackward0"  # PyTorch's

    @staticmethod
    def forward(ctx: FunctionCtx, a: Tensor, atol: float | None, rtol: float | None, hermitian: bool) -> Tensor:
        values = matrices("linalg.pinv", a, square=hermitian)
        size = max(values.shape[-2:])
        if hermitian:
            spectrum, vectors = np.linalg.eigh(values)
            keep = np.abs(spectrum) > _cutoff(np.abs(spectrum), atol, rtol, size)
            scale = np.where(keep, 1.0 / np.where(keep, spectrum, 1.0), 0.0)
            result = (vectors * scale[..., None, :]) @ np.swapaxes(vectors, -1, -2)
        else:
            u, s, vh = np.linalg.svd(values, full_matrices=False)
            keep = s > _cutoff(s, atol, rtol, size)
            scale = np.where(keep, 1.0 / np.where(keep, s, 1.0), 0.0)
            result = (np.swapaxes(vh, -1, -2) * scale[..., None, :]) @ np.swapaxes(u, -1, -2)
        result = placed(result, a)
        ctx.save_for_backward(a, result)
        ctx.input, ctx.result = a, result
        return result

    @staticmethod
    def jvp(ctx: FunctionCtx, a_t: Tensor, atol_t: None, rtol_t: None,
            hermitian_t: None) -> Tensor:  # noqa: ARG004 - the options have no tangents
        """``dP = -P dA P + P P^T dA^T (I - A P) + (I - P A) dA^T P^T P`` (at a constant rank)."""
        a, p = ctx.input, ctx.result
        a_t_t = a_t.mT
        return (-(p @ a_t @ p) + p @ p.mT @ (a_t_t - a_t_t @ a @ p)
                + (a_t_t - p @ a @ a_t_t) @ p.mT @ p)

    @staticmethod
    def backward(ctx: FunctionCtx, grad: Tensor) -> tuple[Tensor, None, None, None]:
        a, pinv_a = ctx.saved_tensors
        grad_t, pinv_t = grad.mT, pinv_a.mT
        if a.shape[-2] <= a.shape[-1]:
            k = grad_t @ pinv_a
            k_pinv_t = k @ pinv_t
            grad_a = -(pinv_a @ k).mT + k_pinv_t - (a @ pinv_a) @ k_pinv_t + (pinv_t @ pinv_a) @ (grad_t - k @ a)
        else:
            k = pinv_a @ grad_t
            pinv_t_k = pinv_t @ k
            grad_a = -(k @ pinv_a).mT + (grad_t - a @ k) @ pinv_a @ pinv_t + pinv_t_k - pinv_t_k @ pinv_a @ a
        return grad_a, None, None, None


def pinv(A: Tensor, *, atol: float | None = None, rtol: float | None = None, hermitian: bool = False) -> Tensor:
    """The Moore-Penrose pseudo-inverse: singular values (eigenvalue magnitudes where ``hermitian``) at or
    below ``max(atol, rtol * largest)`` count as zero, ``rtol`` defaulting to ``eps * max(m, n)``."""
    if isinstance(atol, Tensor) or isinstance(rtol, Tensor):
        raise NotImplementedError("linalg.pinv: tensor atol/rtol are not implemented: pass Python floats")
    return PseudoInverse.apply(A, atol, rtol, hermitian)


class LeastSquares(NamedTuple):
    solution: Tensor
    residuals: Tensor
    rank: Tensor
    singular_values: Tensor


def lstsq(A: Tensor, B: Tensor, rcond: float | None = None, *, driver: str | None = None) -> LeastSquares:
    """The least-squares solution of ``A X = B`` through ``pinv`` (``rcond`` its relative cutoff, by
    default ``eps * max(m, n)``; ignored by ``gels``, as PyTorch documents), and what PyTorch's CPU drivers give besides: the ``rank`` (all but
    ``gels``), the squared ``residuals`` where ``m > n`` and every matrix has full rank (``gels``,
    ``gelsd``, ``gelss``), the ``singular_values`` (``gelsd``, ``gelss``); the others are empty."""
    if driver not in (None, "gelsy", "gelsd", "gelss", "gels"):
        raise RuntimeError(f"torch.linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss), "
                           f"but got {driver}")
    if A.dtype != B.dtype:
        raise RuntimeError(f"torch.linalg.lstsq: Expected input and other to have the same dtype, but got "
                           f"input's dtype {scalar_type(A)} and other's dtype {scalar_type(B)}")
    values = matrices("linalg.lstsq", A, square=False)   # for the rank
    if driver == "gels":   # QR without pivoting: A is taken to have full rank, and rcond is ignored
        rcond = None
    vector = B.ndim == A.ndim - 1
    rhs = B.unsqueeze(-1) if vector else B
    m, n = A.shape[-2], A.shape[-1]
    if m != rhs.shape[-2]:
        raise RuntimeError(f"torch.linalg.lstsq: input.size(-2) should match other.size(-2), got {m} and "
                           f"{rhs.shape[-2]}")
    solution = pinv(A, rtol=rcond) @ rhs
    singular = np.linalg.svd(values, compute_uv=False)
    rank = (singular > _cutoff(singular, None, rcond, max(m, n))).sum(-1)
    empty = placed(np.empty(0), A)
    residuals = A.reshape(-1)[:0]   # empty, with A's history as PyTorch's
    if driver in ("gels", "gelsd", "gelss") and m > n and (rank == n).all():
        residuals = ((A @ solution - rhs) ** 2).sum(-2)
    ranks = np.empty(0, np.int64) if driver == "gels" else np.asarray(rank, np.int64)
    return LeastSquares(solution.squeeze(-1) if vector else solution, residuals, on_device_of(ranks, A),
                        placed(singular, A) if driver in ("gelsd", "gelss") else empty)
