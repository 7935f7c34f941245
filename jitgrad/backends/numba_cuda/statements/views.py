"""View intrinsics: ``ctx.out`` bound to a device array sharing its input's memory (``reshape`` of a
contiguous input, ``permute``, ``transpose``, ``split``'s and ``unbind``'s pieces, ``getitem`` with a basic index); a
reshape of a strided view copies (``kernels.copy.reshaped``), as numpy's would."""
from __future__ import annotations

from typing import Sequence

from ....ops.indexing import is_advanced
from ...source import shape_tuple
from ..context import OpContext
from .indexing import gather_getitem


def reshape(ctx: OpContext) -> str:
    ctx.result_contiguous = True
    return f"{ctx.out} = {ctx.library('kernels.copy', 'reshaped')}({ctx.self}, {ctx.shape_tuple()}, {ctx.stream})"


def permute(ctx: OpContext, order: Sequence[int] | None = None) -> str:
    """The input's dimensions in ``order`` (the ``dims`` attribute by default): new strides, same memory."""
    order = tuple(d % ctx.rank() for d in (ctx.attrs["dims"] if order is None else order)) if ctx.rank() else (0,)
    ctx.result_contiguous = ctx.is_contiguous(ctx.self) and order == tuple(range(len(order)))
    return f"{ctx.out} = permuted({ctx.self}, {order!r})"


def transpose(ctx: OpContext) -> str:
    order = list(range(max(ctx.rank(), 1)))
    if ctx.rank():
        d0, d1 = ctx.attrs["dim0"] % ctx.rank(), ctx.attrs["dim1"] % ctx.rank()
        order[d0], order[d1] = order[d1], order[d0]
    return permute(ctx, order)


def _slice_at(rank: int, dim: int, start: str, stop: str) -> str:
    return ", ".join([":"] * dim + [f"{start}:{stop}"]) if rank else f"{start}:{stop}"


def split(ctx: OpContext) -> str:
    """Views of consecutive slices, their bounds run-time sizes."""
    dim, start, pieces = ctx.attrs["dim"] % max(ctx.rank(ctx.self), 1), "0", []
    for size in ctx.attrs["sizes"]:
        stop = ctx.size(size) if start == "0" else f"{start} + {ctx.size(size)}"
        pieces.append(f"{ctx.self}[{_slice_at(ctx.rank(ctx.self), dim, start, stop)}]")
        start = stop
    return f"{ctx.out} = ({', '.join(pieces)},)"


def unbind(ctx: OpContext) -> str:
    """Views of each index along ``dim``: one-wide slices with the dimension dropped (``with_shape``: a
    device array indexed by an integer would copy to the host); of a 1-d input, the one-element slices
    themselves (a 0-d value is a one-element array). Indices are run-time values, as sizes are."""
    rank, sizes = ctx.rank(ctx.self), ctx.shape(ctx.self)
    dim = ctx.attrs["dim"] % rank
    kept = shape_tuple(sizes[:dim] + sizes[dim + 1:]) if rank > 1 else None
    pieces = []
    for i in range(ctx.node.args[0].meta["shape"][dim]):
        piece = f"{ctx.self}[{_slice_at(rank, dim, ctx.size(i), ctx.size(i + 1))}]"
        pieces.append(piece if kept is None else f"with_shape({piece}, {kept})")
    return f"{ctx.out} = ({', '.join(pieces)},)"


def getitem(ctx: OpContext) -> str:
    """A basic index as a view: each integer a one-wide slice (a device array indexed by an integer
    would copy the element to the host), then the integers' dimensions dropped and ``None``'s added
    (``with_shape``). Bounds are run-time sizes; a step stays literal. An advanced index (arrays) is a
    gather into new memory (``indexing.gather_getitem``)."""
    index, shape = ctx.attrs["index"], ctx.node.args[0].meta["shape"]
    if is_advanced(index):
        return gather_getitem(ctx)
    items = ctx.index_slices(index, len(shape))
    selected = f"{ctx.self}[{', '.join(items)}]" if items and shape else ctx.self
    return f"{ctx.out} = with_shape({selected}, {ctx.shape_tuple()})"


STATEMENTS = {"reshape": reshape, "permute": permute, "transpose": transpose, "split": split, "unbind": unbind,
              "getitem": getitem}

__all__ = ["STATEMENTS"]
