"""``softmax`` and ``log_softmax`` on the CUDA backend: a block per row along ``dim``
(``kernels/rows.py``)."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the backend's OpContext (../context.py): statements only read it
    from ..context import OpContext


def softmax(ctx: OpContext) -> str:
    return f"{ctx.library('kernels.rows', 'softmax')}({ctx.self}, {ctx.out}, {ctx.attrs['dim']!r}, {ctx.stream})"


def log_softmax(ctx: OpContext) -> str:
    return f"{ctx.library('kernels.rows', 'log_softmax')}({ctx.self}, {ctx.out}, {ctx.attrs['dim']!r}, {ctx.stream})"


STATEMENTS = {"softmax": softmax, "log_softmax": log_softmax}
