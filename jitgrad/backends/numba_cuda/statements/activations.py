"""``softmax`` and ``log_softmax`` and their backwards on the CUDA backend: a block per row along ``dim``
(``kernels/rows.py``)."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the backend's OpContext (../context.py): statements only read it
    from ..context import OpContext


def softmax(ctx: OpContext) -> str:
    return f"{ctx.library('kernels.rows', 'softmax')}({ctx.self}, {ctx.out}, {ctx.attrs['dim']!r}, {ctx.stream})"


def log_softmax(ctx: OpContext) -> str:
    return f"{ctx.library('kernels.rows', 'log_softmax')}({ctx.self}, {ctx.out}, {ctx.attrs['dim']!r}, {ctx.stream})"


def softmax_backward(ctx: OpContext, kernel: str = "softmax_backward") -> str:
    """The kernel reads a gradient and an output of the result's shape and dtype (what the derivative
    formulas pass); anything else is refused, and the graph runs eagerly."""
    node = ctx.node
    if any(a.meta["shape"] != node.meta["shape"] or a.meta["dtype"] != node.meta["dtype"] for a in node.args[:2]):
        raise NotImplementedError(f"{kernel} of a gradient and an output unlike the result in shape or dtype")
    return (f"{ctx.library('kernels.rows', kernel)}({ctx.grad_output}, {ctx.output}, {ctx.out}, "
            f"{ctx.attrs['dim']!r}, {ctx.stream})")


def log_softmax_backward(ctx: OpContext) -> str:
    return softmax_backward(ctx, "log_softmax_backward")


STATEMENTS = {"softmax": softmax, "log_softmax": log_softmax, "softmax_backward": softmax_backward,
              "log_softmax_backward": log_softmax_backward}
