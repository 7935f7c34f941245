"""``gather``, ``scatter_add``, ``embedding`` and its backward: loops over the index tensor, one level
per dimension, reading each index at run time (the indices are an input of the op, not an attribute).

An index outside its dimension raises the eager op's exception (numba checks no bounds, so it would
read or write outside the array): PyTorch's ``IndexError`` for ``embedding`` and its backward,
``RuntimeError`` for the others. ``scatter_add`` adds in the index's C order, one element after
another, as ``np.add.at`` does: the same sums as eager, on every run; ``embedding_dense_backward``
adds row after row in the indices' order, which gives each element the same sums.
"""
from __future__ import annotations

from ..context import OpContext


def _each_index(ctx: OpContext, index: str, op: str, size: str,
                error: str = "RuntimeError") -> tuple[list[str], list[str], str, str]:
    """Nested loops over every element of ``index`` (any rank), its value checked against ``size``
    (``error`` raised outside it): the lines, the loop variables, the variable holding the value and
    the body's indentation."""
    names = [f"{ctx.out}_i{d}" for d in range(ctx.rank(index))]
    lines = []
    for depth, (name, n) in enumerate(zip(names, ctx.shape(index))):
        lines.append("    " * depth + f"for {name} in range({n}):")
    pad, value = "    " * len(names), f"{ctx.out}_t"
    lines += [f"{pad}{value} = {index}[{', '.join(names) or '0'}]",  # a 0-d index: a 1-element array
              f"{pad}if {value} < 0 or {value} >= {size}:",
              f"{pad}    raise {error}('{op}: an index is out of "
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
    lines, names, value, pad = _each_index(ctx, ctx.indices, "embedding", ctx.shape(ctx.weight)[0], "IndexError")
    column = f"{ctx.out}_j"
    return lines + [f"{pad}for {column} in range({ctx.shape(ctx.weight)[1]}):",
                    f"{pad}    {ctx.out}[{''.join(n + ', ' for n in names)}{column}] = {ctx.weight}[{value}, {column}]"]


def embedding_dense_backward(ctx: OpContext) -> list[str]:
    """Zeros, then each index read and checked once and its gradient row added into the row it names
    (none into ``padding_idx``'s), by a loop over the row's columns."""
    rows, columns = ctx.shape()
    lines, names, value, pad = _each_index(ctx, ctx.indices, "embedding_dense_backward", rows, "IndexError")
    padding = ctx.attrs["padding_idx"]
    if padding is not None:
        lines.append(f"{pad}if {value} != {int(padding)}:")
        pad += "    "
    column = f"{ctx.out}_j"
    return [f"{ctx.out}[...] = 0", *lines, f"{pad}for {column} in range({columns}):",
            f"{pad}    {ctx.out}[{value}, {column}] += {ctx.grad}[{''.join(n + ', ' for n in names)}{column}]"]


STATEMENTS = {"gather": gather, "scatter_add": scatter_add, "embedding": embedding,
              "embedding_dense_backward": embedding_dense_backward}
