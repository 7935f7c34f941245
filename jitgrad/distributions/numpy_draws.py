"""Draws that jitgrad has no op for (gamma, Poisson, binomial) come from numpy's generator, seeded
with a number drawn from jitgrad's so that ``jitgrad.manual_seed`` repeats them. A trace would keep
one draw as a constant that every compiled call repeated, so they refuse to be traced."""
from __future__ import annotations

import numpy as np

from ..factories import randint
from ..ops.registry import observed

__all__ = ["numpy_generator"]


def numpy_generator(family: str) -> np.random.Generator:
    """A numpy generator seeded from jitgrad's, or a RuntimeError naming ``family`` while traced."""
    if observed():
        raise RuntimeError(f"{family} draws with numpy's generator and cannot be traced by jitgrad.compile: draw "
                           "outside the compiled function and pass the sample in")
    return np.random.default_rng(int(randint(0, 2 ** 62, (1,)).item()))
