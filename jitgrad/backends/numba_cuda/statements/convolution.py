"""``im2col``, ``col2im`` and ``convolution`` on the CUDA backend (``kernels/convolution.py``): the
window positions become scatter plans when lowering (kernel arguments, never source), and the kernel
library's deterministic scatter and tiled product do the work."""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

from ....ops.convolution import planar, window_positions
from ..kernels.convolution import col2im_plan, im2col_plan

if TYPE_CHECKING:  # the backend's OpContext (../context.py): statements only read it
    from ..context import OpContext


def _plan(ctx: OpContext, make, image_shape: tuple, kernel: tuple, stride: tuple, padding: tuple,
          dilation: tuple) -> str:
    """The plan's three arrays as kernel arguments, for the batch of (C, H, W) images."""
    positions = window_positions(image_shape[1], tuple(image_shape[2:]), tuple(kernel), tuple(dilation),
                                 tuple(padding), tuple(stride))
    plan = make(positions, image_shape[0], math.prod(image_shape[1:]))
    return ", ".join(ctx.index_argument(array) for array in plan)


def _scatter(ctx: OpContext, source: str, plan: str) -> str:
    return f"{ctx.library('kernels.indexing', 'index_scatter')}({source}, {plan}, {ctx.out}, {ctx.stream})"


def im2col(ctx: OpContext) -> str:
    a = ctx.attrs
    plan = _plan(ctx, im2col_plan, ctx.node.args[0].meta["shape"], a["kernel_size"], a["stride"], a["padding"],
                 a["dilation"])
    return _scatter(ctx, ctx.self, plan)


def col2im(ctx: OpContext) -> str:
    a = ctx.attrs
    plan = _plan(ctx, col2im_plan, ctx.node.meta["shape"], a["kernel_size"], a["stride"], a["padding"],
                 a["dilation"])
    return _scatter(ctx, ctx.self, plan)


def convolution(ctx: OpContext) -> str:
    """A 1-d convolution is a 2-d one of height 1: its operands are viewed so, by the host function's
    reshapes of their contiguous copies."""
    a = ctx.attrs
    stride, padding, dilation = planar(a["stride"], a["padding"], a["dilation"])
    in_shape, w_shape = (tuple(arg.meta["shape"]) for arg in ctx.node.args[:2])
    if len(a["stride"]) == 1:
        in_shape, w_shape = in_shape[:2] + (1,) + in_shape[2:], w_shape[:2] + (1,) + w_shape[2:]
    plan = _plan(ctx, im2col_plan, in_shape, w_shape[2:], stride, padding, dilation)
    bias = "None" if ctx.bias is None else ctx.bias
    return (f"{ctx.library('kernels.convolution', 'convolution')}({ctx.input}, {ctx.weight}, {bias}, {plan}, "
            f"{ctx.size(a['groups'])}, {ctx.out}, {ctx.stream})")


STATEMENTS = {"im2col": im2col, "col2im": col2im, "convolution": convolution}
