"""Matrix products on numpy's BLAS (``blas.py``): ``dot``, ``gemv``, ``gemm`` and ``batched_gemm``, each
writing into the planned buffer; operands go as they are laid out, a transposed matrix included."""
from __future__ import annotations

from ..context import OpContext


def dot(ctx: OpContext) -> str:
    return f"{ctx.out}[0] = np.dot({ctx.contiguous(ctx.self)}, {ctx.contiguous(ctx.other)})"


def gemv(ctx: OpContext) -> str:
    return f"matvec({ctx.self}, {ctx.other}, {ctx.out})"


def gemm(ctx: OpContext) -> str:
    return f"matmat({ctx.self}, {ctx.other}, {ctx.out})"


def batched_gemm(ctx: OpContext) -> str | list[str]:
    """``(..., n, k) @ (k, m)``: one product over the stacked rows. Anything else (batched operands,
    broadcast batch dimensions, a 1-d operand beside a batched one): one BLAS product per matrix of the
    result, each operand's matrix found by unravelling the result's batch index with broadcasting; a
    transposed 3-d operand is read in place (``_stacked``)."""
    a, b = ctx.self, ctx.other
    ra, rb = ctx.rank(a), ctx.rank(b)
    if rb == 2 and ra >= 2:
        rows = " * ".join(ctx.shape(a)[:-1])
        k, m = ctx.shape(b)
        return f"matmat({ctx.contiguous(a)}.reshape(({rows}, {k})), {b}, {ctx.out}.reshape(({rows}, {m})))"
    a_shape = ctx.shape(a) if ra > 1 else ("1",) + ctx.shape(a)        # a vector is a row ...
    b_shape = ctx.shape(b) if rb > 1 else ctx.shape(b) + ("1",)        # ... or a column
    batch = _broadcast_sizes(a_shape[:-2], b_shape[:-2])
    n, k, m = a_shape[-2], a_shape[-1], b_shape[-1]
    name = ctx.out
    lines = [f"{name}_a = {_stacked(ctx, a, a_shape, n, k)}",
             f"{name}_b = {_stacked(ctx, b, b_shape, k, m)}",
             f"{name}_c = {name}.reshape(({ctx.product(batch)}, {n}, {m}))",
             f"for {name}_i in range({ctx.product(batch)}):",
             f"    {name}_rest = {name}_i",
             f"    {name}_ia = 0",
             f"    {name}_ib = 0"]
    stride_a, stride_b = "1", "1"
    for d in range(len(batch) - 1, -1, -1):
        da, db = d - (len(batch) - len(a_shape[:-2])), d - (len(batch) - len(b_shape[:-2]))
        lines.append(f"    {name}_j = {name}_rest % {batch[d]}")
        lines.append(f"    {name}_rest = {name}_rest // {batch[d]}")
        if da >= 0 and a_shape[da] != "1":
            lines.append(f"    {name}_ia += {name}_j * {stride_a}")
            stride_a = f"{stride_a} * {a_shape[da]}"
        if db >= 0 and b_shape[db] != "1":
            lines.append(f"    {name}_ib += {name}_j * {stride_b}")
            stride_b = f"{stride_b} * {b_shape[db]}"
    lines.append(f"    matmat({name}_a[{name}_ia], {name}_b[{name}_ib], {name}_c[{name}_i])")
    return lines


def _stacked(ctx: OpContext, var: str, shape: tuple[str, ...], rows: str, cols: str) -> str:
    """``var`` as a stack of (rows, cols) matrices. A 3-d operand already is one and is read in place,
    whatever its layout (a transposed or permuted view): ``matmat`` hands each matrix to BLAS with the
    transpose in its layout flag, or copies that one matrix when BLAS cannot read it. So is a higher
    rank one whose batch dimensions are all 1 but one (conv2d's backward: (N, 1, k, m) transposed), by
    indexing the others at 0. Other ranks are reshaped, which needs a C-contiguous array."""
    rank = ctx.rank(var)
    if rank == 3:
        return var
    batch = ctx.shape(var)[:-2]
    if rank > 3 and sum(size != "1" for size in batch) <= 1 and not ctx.is_contiguous(var):
        kept = next((d for d, size in enumerate(batch) if size != "1"), 0)
        return f"{var}[{', '.join(':' if d == kept else '0' for d in range(len(batch)))}]"
    return f"{ctx.contiguous(var)}.reshape(({ctx.product(shape[:-2])}, {rows}, {cols}))"


def _broadcast_sizes(a: tuple[str, ...], b: tuple[str, ...]) -> tuple[str, ...]:
    """The broadcast of two batch shapes given as size expressions (``"1"`` broadcasts)."""
    a, b = ("1",) * (len(b) - len(a)) + a, ("1",) * (len(a) - len(b)) + b
    return tuple(y if x == "1" else x for x, y in zip(a, b))


STATEMENTS = {"dot": dot, "gemv": gemv, "gemm": gemm, "batched_gemm": batched_gemm}
