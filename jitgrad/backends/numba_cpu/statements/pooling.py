"""``max_pool2d`` and its gradient's scatter and gather: loops over each plane's windows, read through
their positions in the plane (``ops.pooling.pool_positions``, a kernel argument, -1 on the padding)."""
from __future__ import annotations

from ....ops.pooling import pool_positions
from ..context import OpContext


def max_pool2d(ctx: OpContext) -> list[str]:
    """The first largest element of each window (a NaN, once met, stays: numpy's and PyTorch's rule) and
    its position; the output is bound to the pair (values, indices), new arrays."""
    a = ctx.attrs
    shape = ctx.node.args[0].meta["shape"]
    positions = ctx.index_argument(pool_positions(tuple(shape[2:]), a["kernel_size"], a["stride"], a["padding"],
                                                  a["dilation"], a["ceil_mode"]))
    n, c, h, w = ctx.shape(ctx.self)
    out_shape = ctx.node.meta["shape"][0]
    oh, ow = ctx.size(out_shape[2]), ctx.size(out_shape[3])
    x, values, indices, p, l, k, q, v, best, at = (f"{ctx.out}_{s}" for s in (
        "planes", "values", "indices", "p", "l", "k", "q", "v", "best", "at"))
    return [f"{x} = {ctx.contiguous(ctx.self)}.reshape(({n} * {c}, {h} * {w}))",
            f"{values} = np.empty(({n} * {c}, {oh} * {ow}), {ctx.T})",
            f"{indices} = np.empty(({n} * {c}, {oh} * {ow}), np.int64)",
            f"for {p} in range({n} * {c}):",
            f"    for {l} in range({oh} * {ow}):",
            f"        {best} = {ctx.T}(0)",
            f"        {at} = -1",
            f"        for {k} in range({positions}.size // ({oh} * {ow})):",
            f"            {q} = {positions}[{k} * {oh} * {ow} + {l}]",
            f"            if {q} >= 0:",
            f"                {v} = {x}[{p}, {q}]",
            f"                if {at} < 0 or {v} > {best} or ({v} != {v} and {best} == {best}):",
            f"                    {best} = {v}",
            f"                    {at} = {q}",
            f"        {values}[{p}, {l}] = {best}",
            f"        {indices}[{p}, {l}] = {at}",
            f"{ctx.out} = ({values}.reshape(({n}, {c}, {oh}, {ow})), {indices}.reshape(({n}, {c}, {oh}, {ow})))"]


def max_pool2d_backward(ctx: OpContext) -> list[str]:
    """Zeros, and each output's gradient added at its maximum's position, in order."""
    n, c, h, w = ctx.shape()
    length = ctx.product(ctx.shape(ctx.grad)[2:])
    planes, grad, indices, p, l = (f"{ctx.out}_{s}" for s in ("planes", "grad", "indices", "p", "l"))
    return [f"{ctx.out}[...] = 0",
            f"{planes} = {ctx.out}.reshape(({n} * {c}, {h} * {w}))",
            f"{grad} = {ctx.contiguous(ctx.grad)}.reshape(({n} * {c}, {length}))",
            f"{indices} = {ctx.contiguous(ctx.indices)}.reshape(({n} * {c}, {length}))",
            f"for {p} in range({n} * {c}):",
            f"    for {l} in range({length}):",
            f"        {planes}[{p}, {indices}[{p}, {l}]] += {grad}[{p}, {l}]"]


def max_pool2d_gather(ctx: OpContext) -> list[str]:
    n, c = ctx.shape(ctx.self)[:2]
    plane = ctx.product(ctx.shape(ctx.self)[2:])
    length = ctx.product(ctx.shape()[2:])
    planes, out, indices, p, l = (f"{ctx.out}_{s}" for s in ("planes", "flat", "indices", "p", "l"))
    return [f"{planes} = {ctx.contiguous(ctx.self)}.reshape(({n} * {c}, {plane}))",
            f"{out} = {ctx.out}.reshape(({n} * {c}, {length}))",
            f"{indices} = {ctx.contiguous(ctx.indices)}.reshape(({n} * {c}, {length}))",
            f"for {p} in range({n} * {c}):",
            f"    for {l} in range({length}):",
            f"        {out}[{p}, {l}] = {planes}[{p}, {indices}[{p}, {l}]]"]


STATEMENTS = {"max_pool2d": max_pool2d, "max_pool2d_backward": max_pool2d_backward,
              "max_pool2d_gather": max_pool2d_gather}
