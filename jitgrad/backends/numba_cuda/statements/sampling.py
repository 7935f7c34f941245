"""``uniform``, ``normal`` and ``randperm`` on the CUDA backend: the draw of ``kernels/sampling.py`` (jitgrad's sampler
on the host, copied into the output), so that a seeded generator gives the CPU backend's numbers."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..context import OpContext


def uniform(ctx: OpContext) -> str:
    return f"{ctx.library('kernels.sampling', 'uniform')}({ctx.state}, {ctx.out}, {ctx.stream})"


def normal(ctx: OpContext) -> str:
    return f"{ctx.library('kernels.sampling', 'normal')}({ctx.state}, {ctx.out}, {ctx.stream})"


def randperm(ctx: OpContext) -> str:
    return f"{ctx.library('kernels.sampling', 'randperm')}({ctx.state}, {ctx.out}, {ctx.stream})"


STATEMENTS = {"uniform": uniform, "normal": normal, "randperm": randperm}
