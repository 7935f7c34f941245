"""jitgrad's random numbers: a counter-based generator (Philox4x32-10) whose ``(seed, offset)`` state
random ops take as an input, so that eager calls and compiled calls draw the same numbers.

``generator.py`` holds the state and ``manual_seed``; ``philox.py`` the bit generator; ``sampling.py``
turns its blocks into uniform and normal floats.
"""
from .generator import (Draw, Generator, default_generator, get_rng_state, initial_seed, manual_seed, seed,
                        set_rng_state)

__all__ = ["Draw", "Generator", "default_generator", "get_rng_state", "initial_seed", "manual_seed", "seed",
           "set_rng_state"]
