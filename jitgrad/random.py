"""jitgrad's random number generator, seeded with ``manual_seed`` for reproducible runs."""
from __future__ import annotations

import numpy as np

_generator = np.random.default_rng()


def manual_seed(seed: int) -> np.random.Generator:
    """Seeds the generator behind ``randn``/``rand``; returns it."""
    global _generator
    _generator = np.random.default_rng(seed)
    return _generator


def generator() -> np.random.Generator:
    return _generator
