"""``tap_sum`` on the CUDA backend (``kernels/tap_sums.py``): the tables are device arrays the kernel reads
at run time."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the backend's OpContext (../context.py): statements only read it
    from ..context import OpContext


def tap_sum(ctx: OpContext) -> str:
    return (f"{ctx.library('kernels.tap_sums', 'tap_sum')}({ctx.input}, {ctx.index}, {ctx.weight}, {ctx.out}, "
            f"{ctx.attrs['dim']!r}, {ctx.stream})")


STATEMENTS = {"tap_sum": tap_sum}
