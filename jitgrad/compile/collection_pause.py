"""Python's cycle collector paused while ``jitgrad.compile`` traces and lowers a call (decorator.py)."""
from __future__ import annotations

import contextlib
import gc
from typing import Iterator


@contextlib.contextmanager
def cycle_collection_paused() -> Iterator[None]:
    """Python's cycle collector off while a call is traced and compiled, back on after (if it was on).
    A trace allocates tens of thousands of objects that live until it ends (nodes, traced tensors,
    the engine's backward graph), so the collector's full passes, each walking every live object,
    grow with the program and run more often the longer it is: W4 over 500 steps spent 0.43-0.47 s
    of a 2 s first call (loaded) in 3 full and 28 middle collections, against 0.005-0.02 s at 50 steps.
    The garbage a compile leaves is collected by the next collection after it (numba's compile of W4,
    which makes the most, raised the process's peak memory from 196 to 200 MB). The switch is
    process-wide: another thread allocating meanwhile is not collected either."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


__all__ = ["cycle_collection_paused"]
