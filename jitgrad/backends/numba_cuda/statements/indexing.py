"""``getitem``'s gather and its backward (``index_scatter``) on the CUDA backend.

``getitem`` is a view op and its statement is ``views.py``'s; an advanced index (integer or boolean
arrays) cannot be a view, and that statement hands it to ``gather_getitem`` here: a gather by the flat
positions of the selected elements, computed when lowering. ``index_scatter`` zeroes its output and
copies the gradient into the region a basic index selects (a view, ``kernels.strided.indexed_view``),
or, for an advanced index or a 0-d input (a 1-element array in generated code, which the traced index
does not describe), sums it at the flat positions, inverted here too (``scatter_plan``) so that the
kernel sums every destination's sources in order, deterministically (``kernels/indexing.py``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ....ops.indexing import is_advanced
from ..kernels.indexing import scatter_plan

if TYPE_CHECKING:
    from ..context import OpContext


def flat_positions(shape: tuple[int, ...], index: tuple) -> np.ndarray:
    """The C-order positions, in an array of ``shape``, of the elements ``index`` selects, in the order
    the selection lists them (its shape is the selection's)."""
    return np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)[index]


def by_positions(index: tuple, shape: tuple[int, ...]) -> bool:
    """Whether ``index`` on an input of ``shape`` scatters by flat positions rather than into a view."""
    return is_advanced(index) or not shape


def index_source(ctx: OpContext, index: tuple) -> str:
    """Source of a basic index, its bounds and integers run-time values (``ctx.size``) as on the CPU, so
    that a graph traced at other sizes shares the code; a step stays literal."""
    items = []
    for item in index:
        if item is None or item is Ellipsis:
            items.append(repr(item))
        elif isinstance(item, slice):
            bounds = ["None" if v is None else ctx.size(int(v)) for v in (item.start, item.stop)]
            items.append(f"slice({bounds[0]}, {bounds[1]}, {item.step!r})")
        else:
            items.append(ctx.size(int(item)))
    return f"({', '.join(items)},)" if items else "()"


def gather_getitem(ctx: OpContext) -> str:
    """``x[index]`` for an advanced index: a new array of the elements at the index's flat positions
    (a view node has no buffer of the memory plan, so the host function allocates it)."""
    index, shape = ctx.attrs["index"], ctx.node.args[0].meta["shape"]
    positions = ctx.index_argument(flat_positions(shape, index))
    ctx.result_contiguous = True
    gathered = ctx.library("kernels.indexing", "gathered")
    return f"{ctx.out} = {gathered}({ctx.self}, {positions}, {ctx.shape_tuple()}, {ctx.stream})"


def index_scatter(ctx: OpContext) -> list[str]:
    """Zeros, and the gradient copied into the region a basic index selected, or summed at the flat
    positions of an advanced one."""
    index, shape = ctx.attrs["index"], ctx.attrs["shape"]
    if by_positions(index, shape):
        plan: list[Any] = [ctx.index_argument(array) for array in scatter_plan(flat_positions(shape, index))]
        scatter = ctx.library("kernels.indexing", "index_scatter")
        return [f"{scatter}({ctx.grad}, {', '.join(plan)}, {ctx.out}, {ctx.stream})"]
    region = f"{ctx.library('kernels.strided', 'indexed_view')}({ctx.out}, {index_source(ctx, index)})"
    return [f"{ctx.library('kernels.copy', 'fill')}({ctx.out}, 0, {ctx.stream})",
            f"{ctx.library('kernels.copy', 'copy')}({ctx.grad}, {region}, {ctx.stream})"]


STATEMENTS = {"index_scatter": index_scatter}

__all__ = ["STATEMENTS", "by_positions", "flat_positions", "gather_getitem", "index_source"]
