"""Ops that move elements: views (``reshape``, ``transpose``, ``permute``, ``split``, ``unbind``) bind ``ctx.out`` to
a view of their input; ``concatenate`` and ``stack`` fill the output the backend allocated."""
from __future__ import annotations

from typing import Sequence

from ..context import OpContext


def reshape(ctx: OpContext) -> str:
    return f"{ctx.out} = {ctx.reshaped(ctx.self)}"


def permute(ctx: OpContext, order: Sequence[int] | None = None) -> str:
    """The input's dimensions in ``order`` (the ``dims`` attribute by default); a C-contiguous
    matrix transposed is ``.T``, which keeps its type simple for numba."""
    order = tuple(ctx.attrs["dims"] if order is None else order) if ctx.rank() > 0 else (0,)
    if order == (1, 0) and ctx.is_contiguous(ctx.self):
        return f"{ctx.out} = {ctx.self}.T"
    return f"{ctx.out} = {ctx.self}.transpose({order!r})"


def transpose(ctx: OpContext) -> str:
    order = list(range(max(ctx.rank(), 1)))
    d0, d1 = ctx.attrs["dim0"], ctx.attrs["dim1"]
    order[d0], order[d1] = order[d1], order[d0]
    return permute(ctx, order)


def _slice_at(rank: int, dim: int, start: str, stop: str) -> str:
    return ", ".join([":"] * dim + [f"{start}:{stop}"]) if rank else f"{start}:{stop}"


def concatenate(ctx: OpContext) -> list[str]:
    """Along the first dimension, a loop over each input's rows (``put_row``, as ``stack``; elements of
    1-d inputs): numba compiles a slice assignment ``out[a:b] = t`` with its shape check for seconds
    (W4's rolled kernel: 12 of its 21 s), a loop of row copies in milliseconds. Along another
    dimension, the slice assignment."""
    dim, lines, offset = ctx.attrs["dim"], [], "0"
    for t in ctx.tensors:
        stop = f"{offset} + {ctx.shape(t)[dim]}" if offset != "0" else ctx.shape(t)[dim]
        if dim == 0 and ctx.rank() > 0:
            row = f"{ctx.out}__row"  # one loop variable for every input's loop; no node is named so
            at = row if offset == "0" else f"{offset} + {row}"
            copy = f"put_row({ctx.out}, {at}, {t}[{row}])" if ctx.rank() > 1 else f"{ctx.out}[{at}] = {t}[{row}]"
            lines += [f"for {row} in range({ctx.shape(t)[0]}):", f"    {copy}"]
        else:
            lines.append(f"{ctx.out}[{_slice_at(ctx.rank(), dim, offset, stop)}] = {t}")
        offset = stop
    return lines


def stack(ctx: OpContext) -> list[str]:
    """Along the first dimension each row is ``put_row`` (one copy when both are contiguous: see
    ``rows.py``); along another, or of 0-d values, an assignment."""
    dim = ctx.attrs["dim"]
    return [f"put_row({ctx.out}, {i}, {t})" if dim == 0 and ctx.rank(t) > 0 else
            f"{ctx.out}[{', '.join([':'] * dim + [str(i)])}] = {t}{'[0]' if ctx.rank(t) == 0 else ''}"
            for i, t in enumerate(ctx.tensors)]


def split(ctx: OpContext) -> str:
    """Views of consecutive slices, their bounds run-time sizes (a split along the batch dimension
    keeps its source when the batch size changes)."""
    dim, start, pieces = ctx.attrs["dim"], "0", []
    for size in ctx.attrs["sizes"]:
        stop = ctx.size(size) if start == "0" else f"{start} + {ctx.size(size)}"
        pieces.append(f"{ctx.self}[{_slice_at(ctx.rank(ctx.self), dim, start, stop)}]")
        start = stop
    return f"{ctx.out} = ({', '.join(pieces)},)"


def unbind(ctx: OpContext) -> str:
    """Views of each index along ``dim``, the dimension dropped; of a 1-d input, one-element slices (a
    0-d value is a one-element array in generated code). Indices are run-time values, as sizes are."""
    dim, rank = ctx.attrs["dim"], ctx.rank(ctx.self)
    count = ctx.node.args[0].meta["shape"][dim]
    if rank == 1:
        pieces = [f"{ctx.self}[{_slice_at(1, 0, ctx.size(i), ctx.size(i + 1))}]" for i in range(count)]
    else:
        pieces = [f"{ctx.self}[{', '.join([':'] * dim + [ctx.size(i)])}]" for i in range(count)]
    return f"{ctx.out} = ({', '.join(pieces)},)"


STATEMENTS = {"reshape": reshape, "permute": permute, "transpose": transpose, "concatenate": concatenate,
              "stack": stack, "split": split, "unbind": unbind}
