"""``topk`` (and ``sort``) and ``cumsum`` on the CUDA backend (``kernels/sorting.py``). ``topk`` has two
outputs and no buffer of the memory plan: ``ctx.out`` is bound to the pair of new device arrays, as
for ``max(dim)``."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the backend's OpContext (../context.py): statements only read it
    from ..context import OpContext


def topk(ctx: OpContext) -> str:
    k = ctx.size(ctx.attrs["k"])
    return (f"{ctx.out} = {ctx.library('kernels.sorting', 'topk')}({ctx.self}, {k}, {ctx.attrs['dim']!r}, "
            f"{bool(ctx.attrs['largest'])!r}, {ctx.stream})")


def cumsum(ctx: OpContext) -> str:
    return f"{ctx.library('kernels.sorting', 'cumsum')}({ctx.self}, {ctx.out}, {ctx.attrs['dim']!r}, {ctx.stream})"


STATEMENTS = {"topk": topk, "cumsum": cumsum}
