"""``concatenate`` and ``stack`` on the CUDA backend: each input copied into its part of the output the
backend allocated (``kernels/copy.py``). The views of ``ops/shape.py`` (reshape, permute, split) are
``shape.py``'s."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..context import OpContext


def concatenate(ctx: OpContext) -> str:
    call = ctx.library("kernels.copy", "concatenate")
    return f"{call}([{', '.join(ctx.tensors)}], {ctx.out}, {ctx.attrs['dim']}, {ctx.stream})"


def stack(ctx: OpContext) -> str:
    call = ctx.library("kernels.copy", "stack")
    return f"{call}([{', '.join(ctx.tensors)}], {ctx.out}, {ctx.attrs['dim']}, {ctx.stream})"


STATEMENTS = {"concatenate": concatenate, "stack": stack}
