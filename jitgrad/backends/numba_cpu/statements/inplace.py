"""What in-place ops compute (``fill``, ``copy``, ``index_put``, ``copy_slices``): the output is ``self``
with some elements replaced, written into the buffer the backend allocated."""
from __future__ import annotations

from typing import Any

import numpy as np

from ..context import OpContext


def fill(ctx: OpContext) -> str:
    return f"{ctx.out}[...] = {ctx.number(ctx.attrs['value'])}"


def copy(ctx: OpContext) -> str:
    """``src`` broadcast into the output (the shape and dtype of ``self``)."""
    src = ctx.src
    if not isinstance(src, str):  # a Python number
        return f"{ctx.out}[...] = {ctx.number(src)}"
    return f"{ctx.out}[...] = np.broadcast_to({src}, {ctx.shape_tuple()})"


def _scatter_lines(ctx: OpContext, positions: str, values: Any, value_positions: str | None) -> list[str]:
    """``ctx.out`` = ``self`` with ``values`` written at flat ``positions`` (the i-th position takes
    the value at ``value_positions[i]``, or the i-th, or a Python number)."""
    flat, i = f"{ctx.out}_all", f"{ctx.out}_i"
    lines = [f"{flat} = {ctx.out}.reshape(-1)", f"{flat}[:] = {ctx.contiguous(ctx.self)}.reshape(-1)"]
    if isinstance(values, str):
        lines.append(f"{ctx.out}_values = {ctx.contiguous(values)}.reshape(-1)")
        at = f"{value_positions}[{i}]" if value_positions else i
        value = f"{ctx.out}_values[{at}]"
    else:
        value = ctx.number(values)
    return lines + [f"for {i} in range({positions}.size):", f"    {flat}[{positions}[{i}]] = {value}"]


def index_put(ctx: OpContext) -> list[str]:
    """Flat positions of the index and, for an array of values, which value each position takes
    (values broadcast to the indexed shape), both computed when lowering."""
    index, shape = ctx.attrs["index"], ctx.node.args[0].meta["shape"]
    positions = ctx.positions(shape, index)
    values = ctx.values
    if not isinstance(values, str):
        return _scatter_lines(ctx, positions, values, None)
    selected = np.empty(shape, dtype=np.int8)[index].shape
    value_shape = ctx.node.args[1].meta["shape"]
    taken = np.broadcast_to(np.arange(int(np.prod(value_shape))).reshape(value_shape), selected)
    return _scatter_lines(ctx, positions, values, ctx.index_argument(taken))


def copy_slices(ctx: OpContext) -> list[str]:
    return _scatter_lines(ctx, ctx.index_argument(ctx.attrs["positions"]), ctx.src, None)


STATEMENTS = {"fill": fill, "copy": copy, "index_put": index_put, "copy_slices": copy_slices}
