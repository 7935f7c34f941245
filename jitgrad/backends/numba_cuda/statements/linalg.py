"""Matrix products on the CUDA backend: each intrinsic is one call of the kernel library's host function
(``kernels/linalg.py``), which reads the operands in whatever layout they arrive (a transposed weight
included) and writes the planned output."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the backend's OpContext (../context.py): statements only read it
    from ..context import OpContext


def _call(ctx: OpContext, function: str) -> str:
    return f"{ctx.library('kernels.linalg', function)}({ctx.self}, {ctx.other}, {ctx.out}, {ctx.stream})"


def dot(ctx: OpContext) -> str:
    return _call(ctx, "dot")


def gemv(ctx: OpContext) -> str:
    return _call(ctx, "gemv")


def gemm(ctx: OpContext) -> str:
    return _call(ctx, "gemm")


def batched_gemm(ctx: OpContext) -> str:
    """numpy's ``matmul`` with broadcast batch dimensions and vector operands: the kernel reads a
    broadcast dimension with step 0, so no operand is expanded or copied."""
    return _call(ctx, "batched_gemm")


STATEMENTS = {"dot": dot, "gemv": gemv, "gemm": gemm, "batched_gemm": batched_gemm}
