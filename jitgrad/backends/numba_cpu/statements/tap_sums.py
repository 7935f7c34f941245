"""``tap_sum``: each output row along ``dim`` is the sum of the input rows its taps name, each scaled
by its weight, read through the tables (kernel arguments, as the op's inputs are); a tap naming the
position past the end (a short row's padding) reads nothing. The innermost loop runs along the
contiguous trailing dimensions, so it vectorizes; only the taps actually read reach an output, so an
``inf`` or NaN stays in the outputs that read it, as eagerly."""
from __future__ import annotations

from ..context import OpContext


def tap_sum(ctx: OpContext) -> list[str]:
    dim = ctx.attrs["dim"]
    size = ctx.shape(ctx.input)[dim]
    x, y, index, weight, o, i, t, j, w, k = (f"{ctx.out}_{s}" for s in (
        "x", "y", "index", "weight", "o", "i", "t", "j", "w", "k"))
    rows = ctx.rows(dim)
    return [f"{x} = {ctx.contiguous(ctx.input)}.reshape({ctx.rows(dim, ctx.input)})",
            f"{y} = {ctx.out}.reshape({rows})",
            f"{index} = {ctx.contiguous(ctx.index)}",
            f"{weight} = {ctx.contiguous(ctx.weight)}",
            f"for {o} in range({y}.shape[0]):",
            f"    for {i} in range({y}.shape[1]):",
            f"        for {k} in range({y}.shape[2]):",
            f"            {y}[{o}, {i}, {k}] = 0",
            f"        for {t} in range({index}.shape[1]):",
            f"            {j} = {index}[{i}, {t}]",
            f"            if {j} < {size}:",
            f"                {w} = {weight}[{i}, {t}]",
            f"                for {k} in range({y}.shape[2]):",
            f"                    {y}[{o}, {i}, {k}] += {w} * {x}[{o}, {j}, {k}]"]


STATEMENTS = {"tap_sum": tap_sum}
