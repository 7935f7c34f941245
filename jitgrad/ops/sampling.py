"""Random ops: ``uniform`` and ``normal`` draw from the generator state they are given as an input.

The state is an int64 tensor ``[seed, offset]`` (``jitgrad.random.Generator.take``), an input like any
other, so that a trace records where the numbers come from rather than the numbers themselves, and a
compiled call can feed each draw its own state (docs/compile.md, "Random numbers"). The same state
gives the same numbers eagerly (numpy, ``jitgrad.random.sampling``) and in a compiled kernel (the
numba backend's ``fill_uniform``/``fill_normal``, the same Philox arithmetic compiled). Their outputs
have no gradient: nothing about them depends on a differentiable input.
"""
from __future__ import annotations

from typing import Any

from ..random.sampling import sample, significant_bits
from .meta_rules import given
from .registry import defop


def _uniform_lower(ctx: Any) -> str:
    """One call writing every element of the (C-contiguous) output, seen flat."""
    flat = f"{ctx.out}.reshape({ctx.product(ctx.shape())})"
    return f"fill_uniform({ctx.state}, {flat}, {significant_bits(ctx.dtype)})"


def _normal_lower(ctx: Any) -> str:
    return f"fill_normal({ctx.state}, {ctx.out}.reshape({ctx.product(ctx.shape())}))"


uniform = defop("uniform", ("state",), lambda state, shape, dtype: sample(state, shape, dtype, "uniform"),
                meta=given("shape", "dtype"), lower=_uniform_lower)
normal = defop("normal", ("state",), lambda state, shape, dtype: sample(state, shape, dtype, "normal"),
               meta=given("shape", "dtype"), lower=_normal_lower)

__all__ = ["normal", "uniform"]
