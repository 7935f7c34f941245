"""What in-place ops compute on the CUDA backend (``fill``, ``copy``, ``index_put``, ``copy_slices``):
``self`` with some elements replaced, written into the output the backend allocated.

The puts write at flat positions known when lowering; ``put_plan`` keeps, for each distinct position,
the write numpy's ``out[index] = values`` leaves there (the last), so that no two threads write one
element (``kernels/indexing.py``)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..kernels.indexing import put_plan
from .indexing import flat_positions

if TYPE_CHECKING:
    from ..context import OpContext


def fill(ctx: OpContext) -> str:
    return f"{ctx.library('kernels.copy', 'fill')}({ctx.out}, {ctx.number(ctx.attrs['value'])}, {ctx.stream})"


def copy(ctx: OpContext) -> str:
    """``src`` broadcast into the output (the shape and dtype of ``self``)."""
    if not isinstance(ctx.src, str):  # a Python number
        return f"{ctx.library('kernels.copy', 'fill')}({ctx.out}, {ctx.number(ctx.src)}, {ctx.stream})"
    return f"{ctx.library('kernels.copy', 'copy')}({ctx.src}, {ctx.out}, {ctx.stream})"


def _put(ctx: OpContext, values: Any, positions: np.ndarray, taken: np.ndarray | None) -> str:
    """``ctx.out`` = ``self`` with ``values`` (a variable, or a Python number) at flat ``positions``,
    the i-th position taking the value at flat position ``taken[i]`` (``i`` when None)."""
    destinations, sources = put_plan(positions, taken)
    value = values if isinstance(values, str) else ctx.number(values)
    source = ctx.index_argument(sources) if isinstance(values, str) else "None"
    put = ctx.library("kernels.indexing", "index_put")
    return f"{put}({ctx.self}, {value}, {ctx.index_argument(destinations)}, {source}, {ctx.out}, {ctx.stream})"


def index_put(ctx: OpContext) -> str:
    """The index's flat positions and, for an array of values, which value each position takes (the
    values broadcast to the indexed shape), both computed when lowering."""
    positions = flat_positions(ctx.node.args[0].meta["shape"], ctx.attrs["index"])
    if not isinstance(ctx.values, str):
        return _put(ctx, ctx.values, positions, None)
    value_shape = ctx.node.args[1].meta["shape"]
    taken = np.broadcast_to(np.arange(int(np.prod(value_shape))).reshape(value_shape), positions.shape)
    return _put(ctx, ctx.values, positions, taken)


def copy_slices(ctx: OpContext) -> str:
    return _put(ctx, ctx.src, np.asarray(ctx.attrs["positions"]), None)


STATEMENTS = {"fill": fill, "copy": copy, "index_put": index_put, "copy_slices": copy_slices}
