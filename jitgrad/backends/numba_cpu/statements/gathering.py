"""``gather``, ``scatter_add`` and ``embedding``: loops over the index tensor, one level per dimension,
reading each index at run time (the indices are an input of the op, not an attribute).

An index outside its dimension raises the eager op's exception (numba checks no bounds, so it would
read or write outside the array): PyTorch's ``IndexError`` for ``embedding``, ``RuntimeError`` for the
others. ``scatter_add`` adds in the index's C order, one element after
another, as ``np.add.at`` does: the same sums as eager, on every run.
"""
from __future__ import annotations

from ..context import OpContext


def _each_index(ctx: OpContext, index: str, op: str, size: str) -> tuple[list[str], list[str], str, str]:
    """Nested loops over every element of ``index`` (any rank), its value checked against ``size``:
    the lines, the loop variables, the variable holding the value and the body's indentation."""
    names = [f"{ctx.out}_i{d}" for d in range(ctx.rank(index))]
    lines = []
    for depth, (name, n) in enumerate(zip(names, ctx.shape(index))):
        lines.append("    " * depth + f"for {name} in range({n}):")
    pad, value = "    " * len(names), f"{ctx.out}_t"
    lines += [f"{pad}{value} = {index}[{', '.join(names) or '0'}]",  # a 0-d index: a 1-element array
              f"{pad}if {value} < 0 or {value} >= {size}:",
              f"{pad}    raise {'IndexError' if op == 'embedding' else 'RuntimeError'}('{op}: an index is out of "
              "bounds for the dimension it indexes')"]
    return lines, names, value, pad


def _with(names: list[str], dim: int, value: str) -> str:
    return ", ".join(value if d == dim else name for d, name in enumerate(names))


def gather(ctx: OpContext) -> list[str]:
    dim = ctx.attrs["dim"]
    lines, names, value, pad = _each_index(ctx, ctx.index, "gather", ctx.shape(ctx.self)[dim])
    return lines + [f"{pad}{ctx.out}[{', '.join(names)}] = {ctx.self}[{_with(names, dim, value)}]"]


def scatter_add(ctx: OpContext) -> list[str]:
    dim = ctx.attrs["dim"]
    lines, names, value, pad = _each_index(ctx, ctx.index, "scatter_add", ctx.shape()[dim])
    return [f"{ctx.out}[...] = 0", *lines,
            f"{pad}{ctx.out}[{_with(names, dim, value)}] += {ctx.src}[{', '.join(names)}]"]


def embedding(ctx: OpContext) -> list[str]:
    """Each row copied by a loop of its own: numba's slice assignment ``out[i, :] = weight[t, :]`` costs
    about 2 us a row (K5's 8192 rows of 64: 18 ms of its 21 ms step)."""
    lines, names, value, pad = _each_index(ctx, ctx.indices, "embedding", ctx.shape(ctx.weight)[0])
    column = f"{ctx.out}_j"
    return lines + [f"{pad}for {column} in range({ctx.shape(ctx.weight)[1]}):",
                    f"{pad}    {ctx.out}[{''.join(n + ', ' for n in names)}{column}] = {ctx.weight}[{value}, {column}]"]


STATEMENTS = {"gather": gather, "scatter_add": scatter_add, "embedding": embedding}
