"""``gather``, ``scatter_add``, ``embedding`` and its backward on the CUDA backend (``kernels/gathering.py``): the
indices are a device array the kernels read at run time."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the backend's OpContext (../context.py): statements only read it
    from ..context import OpContext


def gather(ctx: OpContext) -> str:
    return (f"{ctx.library('kernels.gathering', 'gather')}({ctx.self}, {ctx.index}, {ctx.out}, "
            f"{ctx.attrs['dim']!r}, {ctx.stream})")


def scatter_add(ctx: OpContext) -> str:
    return (f"{ctx.library('kernels.gathering', 'scatter_add')}({ctx.src}, {ctx.index}, {ctx.out}, "
            f"{ctx.attrs['dim']!r}, {ctx.stream})")


def embedding(ctx: OpContext) -> str:
    return f"{ctx.library('kernels.gathering', 'embedding')}({ctx.weight}, {ctx.indices}, {ctx.out}, {ctx.stream})"


def embedding_dense_backward(ctx: OpContext) -> str:
    return (f"{ctx.library('kernels.gathering', 'embedding_dense_backward')}({ctx.grad}, {ctx.indices}, {ctx.out}, "
            f"{ctx.attrs['padding_idx']!r}, {ctx.stream})")


STATEMENTS = {"gather": gather, "scatter_add": scatter_add, "embedding": embedding,
              "embedding_dense_backward": embedding_dense_backward}
