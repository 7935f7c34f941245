"""``nll_loss``, its backward and ``cross_entropy_backward`` on the CUDA backend (``kernels/losses.py``):
the reduction goes to the kernel as a literal, so "none", "sum" and "mean" share one compiled kernel."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the backend's OpContext (../context.py): statements only read it
    from ..context import OpContext


def nll_loss(ctx: OpContext) -> str:
    return (f"{ctx.library('kernels.losses', 'nll_loss')}({ctx.self}, {ctx.target}, {ctx.out}, "
            f"{ctx.attrs['reduction']!r}, {ctx.stream}, {int(ctx.attrs.get('ignore_index', -100))})")


def nll_loss_backward(ctx: OpContext) -> str:
    return (f"{ctx.library('kernels.losses', 'nll_loss_backward')}({ctx.grad}, {ctx.target}, {ctx.out}, "
            f"{ctx.attrs['reduction']!r}, {ctx.stream}, {int(ctx.attrs.get('ignore_index', -100))})")


def cross_entropy_backward(ctx: OpContext) -> str:
    return (f"{ctx.library('kernels.losses', 'cross_entropy_backward')}({ctx.grad}, {ctx.target}, {ctx.output}, "
            f"{ctx.out}, {ctx.attrs['reduction']!r}, {ctx.stream}, {int(ctx.attrs.get('ignore_index', -100))})")


STATEMENTS = {"nll_loss": nll_loss, "nll_loss_backward": nll_loss_backward,
              "cross_entropy_backward": cross_entropy_backward}
