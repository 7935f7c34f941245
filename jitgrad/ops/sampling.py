"""Random ops: ``uniform``, ``normal`` and ``randperm`` draw from the generator state they are given as
an input.

The state is an int64 tensor ``[seed, offset]`` (``jitgrad.random.Generator.take``), an input like any
other, so that a trace records where the numbers come from rather than the numbers themselves, and a
compiled call can feed each draw its own state (docs/compile.md, "Random numbers"). The same state
gives the same numbers eagerly (numpy, ``jitgrad.random.sampling``) and in a compiled kernel (the
numba backend's ``fill_uniform``/``fill_normal``, the same Philox arithmetic compiled). Their outputs
have no gradient: nothing about them depends on a differentiable input.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..random import Draw, Generator, default_generator
from ..random.sampling import permutation, sample
from ..tensor import Tensor
from .lowering import intrinsic
from .meta_rules import given
from .registry import OpDef, defop, note_created

uniform = defop("uniform", ("state",), lambda state, shape, dtype: sample(state, shape, dtype, "uniform"),
                meta=given("shape", "dtype"), lower=intrinsic("uniform"))
normal = defop("normal", ("state",), lambda state, shape, dtype: sample(state, shape, dtype, "normal"),
               meta=given("shape", "dtype"), lower=intrinsic("normal"))
# A random order of range(n) (``shape`` is ``(n,)``): the ranks of n float64 uniforms at ``state``.
randperm = defop("randperm", ("state",), lambda state, shape, dtype: permutation(state, shape[0], dtype),
                 meta=given("shape", "dtype"), lower=intrinsic("randperm"))


def draw(op: OpDef, shape: tuple[int, ...], dtype: Any, generator: Generator | None = None) -> Tensor:
    """``op`` (one of the random ops above) at the state ``generator`` (by default jitgrad's) gives for
    ``shape``'s elements, on the CPU. The state tensor is made here and a tracer is told it came from
    the generator, so that a compiled call feeds the op its own call's state (docs/compile.md)."""
    generator = default_generator if generator is None else generator
    count = math.prod(shape)
    state = Tensor._make(generator.take(count))
    note_created(state, Draw(generator, state._data, count))
    return op(state, shape=tuple(shape), dtype=np.dtype(dtype))


__all__ = ["draw", "normal", "randperm", "uniform"]
