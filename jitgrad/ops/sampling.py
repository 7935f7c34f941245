"""Random ops: ``uniform`` and ``normal`` draw from the generator state they are given as an input.

The state is an int64 tensor ``[seed, offset]`` (``jitgrad.random.Generator.take``), an input like any
other, so that a trace records where the numbers come from rather than the numbers themselves, and a
compiled call can feed each draw its own state (docs/compile.md, "Random numbers"). The same state
gives the same numbers eagerly (numpy, ``jitgrad.random.sampling``) and in a compiled kernel (the
numba backend's ``fill_uniform``/``fill_normal``, the same Philox arithmetic compiled). Their outputs
have no gradient: nothing about them depends on a differentiable input.
"""
from __future__ import annotations

from ..random.sampling import sample
from .lowering import intrinsic
from .meta_rules import given
from .registry import defop

uniform = defop("uniform", ("state",), lambda state, shape, dtype: sample(state, shape, dtype, "uniform"),
                meta=given("shape", "dtype"), lower=intrinsic("uniform"))
normal = defop("normal", ("state",), lambda state, shape, dtype: sample(state, shape, dtype, "normal"),
               meta=given("shape", "dtype"), lower=intrinsic("normal"))

__all__ = ["normal", "uniform"]
