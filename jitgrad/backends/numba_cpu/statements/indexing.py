"""``x[index]`` (``getitem``) and its backward (``index_scatter``): views and copies of regions for a basic
index, gathers and scatters by flat positions (computed when lowering, a kernel argument) otherwise."""
from __future__ import annotations

import numpy as np

from ....ops.indexing import is_advanced, without_ellipsis
from ..context import OpContext


def basic_items(ctx: OpContext, index: tuple, shape: tuple) -> list[str] | None:
    """Source for a basic index as slices (``OpContext.index_slices``); None for what lowers as a
    gather or scatter by flat positions instead: arrays, None, or a 0-d input."""
    if is_advanced(index) or None in index or not shape:
        return None
    return ctx.index_slices(index, len(shape))


def gather_lines(ctx: OpContext, source: str, positions: str) -> list[str]:
    """``ctx.out`` as a new array of the elements of ``source`` at flat ``positions``."""
    flat, i = f"{ctx.out}_flat", f"{ctx.out}_i"
    ctx.result_contiguous = True
    return [f"{flat} = np.empty({positions}.size, {ctx.T})",
            f"{source}_all = {ctx.contiguous(source)}.reshape(-1)",
            f"for {i} in range({positions}.size):",
            f"    {flat}[{i}] = {source}_all[{positions}[{i}]]",
            f"{ctx.out} = {flat}.reshape({ctx.shape_tuple()})"]


def _leading_integers(index: tuple, rank: int) -> tuple:
    """The integers of an index that is integers for some leading dimensions (not all: no 0-d result)
    and whole slices after them; () for any other index."""
    items = without_ellipsis(index, rank) if not is_advanced(index) and None not in index else ()
    count = next((n for n, item in enumerate(items) if not isinstance(item, (int, np.integer))), len(items))
    rest = items[count:]
    if count == 0 or count >= rank or any(item != slice(None) for item in rest):
        return ()
    return items[:count]


def getitem(ctx: OpContext) -> str | list[str]:
    """Basic indexing: leading integers and whole dimensions after them (``x[t]``, the step of an
    unrolled loop) index a view; slices stay a view; an integer elsewhere becomes a one-wide slice, and
    the result a reshaped copy (so that no 0-d array appears in generated code). Anything else (integer
    and boolean arrays, None, a 0-d input) gathers by flat positions computed when lowering."""
    index, shape = ctx.attrs["index"], ctx.node.args[0].meta["shape"]
    leading = _leading_integers(index, len(shape))
    if leading:  # x[t] of an unrolled loop: a view, no copy and no reshape
        ctx.result_contiguous = ctx.is_contiguous(ctx.self)
        return f"{ctx.out} = {ctx.self}[{', '.join(ctx.size(int(i)) for i in leading)}]"
    items = basic_items(ctx, index, shape)
    if items is None:
        return gather_lines(ctx, ctx.self, ctx.positions(shape, index))
    selected = f"{ctx.self}[{', '.join(items)}]"
    integers = any(isinstance(i, (int, np.integer)) for i in index)
    return f"{ctx.out} = {ctx.reshaped(selected) if integers else selected}"


def index_scatter(ctx: OpContext) -> list[str]:
    """Zeros, and the gradient written into the region a basic index selected (an integer's dimension
    kept as a one-wide slice), or added at the flat positions of an advanced one."""
    index, shape = ctx.attrs["index"], ctx.attrs["shape"]
    items = basic_items(ctx, index, shape)
    if items is None:  # accumulate element by element: an index may repeat
        positions, flat, grad, i = ctx.positions(shape, index), f"{ctx.out}_all", f"{ctx.out}_grad", f"{ctx.out}_i"
        return [f"{ctx.out}[...] = 0", f"{flat} = {ctx.out}.reshape(-1)",
                f"{grad} = {ctx.contiguous(ctx.grad)}.reshape(-1)",
                f"for {i} in range({positions}.size):",
                f"    {flat}[{positions}[{i}]] += {grad}[{i}]"]
    region, sizes = [], iter(ctx.shape(ctx.grad) if ctx.rank(ctx.grad) else ())
    for item in without_ellipsis(index, len(shape)):
        region.append("1" if isinstance(item, (int, np.integer)) else next(sizes))
    region += list(sizes)  # dimensions the index leaves whole
    return [f"{ctx.out}[...] = 0",
            f"{ctx.out}[{', '.join(items)}] = {ctx.contiguous(ctx.grad)}.reshape(({', '.join(region)},))"]


STATEMENTS = {"getitem": getitem, "index_scatter": index_scatter}
