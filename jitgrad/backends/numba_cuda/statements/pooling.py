"""``max_pool2d`` and its gradient's scatter and gather on the CUDA backend (``kernels/pooling.py``):
the windows' positions in a plane are computed when lowering and passed as a kernel argument."""
from __future__ import annotations

from typing import TYPE_CHECKING

from ....ops.pooling import pool_positions

if TYPE_CHECKING:  # the backend's OpContext (../context.py): statements only read it
    from ..context import OpContext


def max_pool2d(ctx: OpContext) -> str:
    """The node's result is the pair (values, indices), new device arrays the host function allocates,
    and ``ctx.out`` is bound to it (as for ``max(dim)``)."""
    a = ctx.attrs
    shape = ctx.node.args[0].meta["shape"]
    positions = pool_positions(tuple(shape[2:]), a["kernel_size"], a["stride"], a["padding"], a["dilation"],
                               a["ceil_mode"])
    out_shape = ", ".join(ctx.size(int(n)) for n in ctx.node.meta["shape"][0])
    return (f"{ctx.out} = {ctx.library('kernels.pooling', 'max_pool2d')}({ctx.self}, "
            f"{ctx.index_argument(positions)}, {ctx.size(positions.shape[0])}, ({out_shape},), {ctx.stream})")


def max_pool2d_backward(ctx: OpContext) -> str:
    return (f"{ctx.library('kernels.pooling', 'max_pool2d_backward')}({ctx.grad}, {ctx.indices}, {ctx.out}, "
            f"{ctx.stream})")


def max_pool2d_gather(ctx: OpContext) -> str:
    return (f"{ctx.library('kernels.pooling', 'max_pool2d_gather')}({ctx.self}, {ctx.indices}, {ctx.out}, "
            f"{ctx.stream})")


STATEMENTS = {"max_pool2d": max_pool2d, "max_pool2d_backward": max_pool2d_backward,
              "max_pool2d_gather": max_pool2d_gather}
