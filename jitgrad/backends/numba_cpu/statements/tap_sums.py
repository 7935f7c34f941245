"""``tap_sum``: each output row along ``dim`` is the sum of the input rows its taps name, each scaled
by its weight, read through the tables (kernel arguments, as the op's inputs are); a tap naming the
position past the end (a short row's padding) reads nothing, so an ``inf`` or NaN stays in the outputs
that read it, as eagerly. The innermost loop runs along the contiguous trailing dimensions, so it
vectorizes; along the last dimension, where there are none, each output element sums its taps in a
local. A large output (``ctx.parallel``) runs its leading rows with ``prange``."""
from __future__ import annotations

from ..context import OpContext


def tap_sum(ctx: OpContext) -> list[str]:
    dim = ctx.attrs["dim"]
    size = ctx.shape(ctx.input)[dim]
    x, y, index, weight, o, i, t, j, k, total = (f"{ctx.out}_{s}" for s in (
        "x", "y", "index", "weight", "o", "i", "t", "j", "k", "total"))
    loop = "prange" if ctx.parallel else "range"
    lines = [f"{x} = {ctx.contiguous(ctx.input)}.reshape({ctx.rows(dim, ctx.input)})",
             f"{y} = {ctx.out}.reshape({ctx.rows(dim)})",
             f"{index} = {ctx.contiguous(ctx.index)}",
             f"{weight} = {ctx.contiguous(ctx.weight)}",
             f"for {o} in {loop}({y}.shape[0]):",
             f"    for {i} in range({y}.shape[1]):"]
    if dim == ctx.rank() - 1:
        return lines + [f"        {total} = {ctx.T}(0)",
                        f"        for {t} in range({index}.shape[1]):",
                        f"            {j} = {index}[{i}, {t}]",
                        f"            if {j} < {size}:",
                        f"                {total} += {weight}[{i}, {t}] * {x}[{o}, {j}, 0]",
                        f"        {y}[{o}, {i}, 0] = {total}"]
    return lines + [f"        for {k} in range({y}.shape[2]):",
                    f"            {y}[{o}, {i}, {k}] = 0",
                    f"        for {t} in range({index}.shape[1]):",
                    f"            {j} = {index}[{i}, {t}]",
                    f"            if {j} < {size}:",
                    f"                for {k} in range({y}.shape[2]):",
                    f"                    {y}[{o}, {i}, {k}] += {weight}[{i}, {t}] * {x}[{o}, {j}, {k}]"]


STATEMENTS = {"tap_sum": tap_sum}
