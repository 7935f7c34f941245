"""``uniform``, ``normal`` and ``randperm``: one call of the backend's Philox fill (``jitgrad/backends/numba_cpu/
sampling.py``) writing every element of the (C-contiguous) output, seen flat."""
from __future__ import annotations

from ....random.sampling import significant_bits
from ..context import OpContext


def uniform(ctx: OpContext) -> str:
    flat = f"{ctx.out}.reshape({ctx.product(ctx.shape())})"
    return f"fill_uniform({ctx.state}, {flat}, {significant_bits(ctx.dtype)})"


def normal(ctx: OpContext) -> str:
    return f"fill_normal({ctx.state}, {ctx.out}.reshape({ctx.product(ctx.shape())}))"


def randperm(ctx: OpContext) -> str:
    return f"fill_randperm({ctx.state}, {ctx.out})"


STATEMENTS = {"uniform": uniform, "normal": normal, "randperm": randperm}
