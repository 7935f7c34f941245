"""Running the numba backend's generated code as plain Python inside the test process.

numba reads ``numba.config.DISABLE_JIT`` when a function is decorated, so turning it on makes the
kernels lowered afterwards plain Python: the code generator is exercised without a numba compile per
kernel. Two things must hold for that: nothing may compile under it (numba decorates some of its own
helpers lazily, and those would stay plain), so the jitted scalar helpers the generated code calls are
compiled first, for the float32 they get under numba and the Python float ``math`` returns in Python;
and kernels made this way are forgotten afterwards, so that no other test gets one.
"""
from __future__ import annotations

import contextlib
from typing import Iterator

import numpy as np


@contextlib.contextmanager
def plain_python_kernels() -> Iterator[None]:
    import numba

    from jitgrad.backends.numba_cpu import clear_cache, numba_runtime
    from jitgrad.backends.numba_cpu.intrinsics import exp_float32, exp_float64, tanh_float32, tanh_float64
    from jitgrad.backends.numba_cpu.sampling import fill_normal, fill_randperm, fill_uniform

    numba_runtime()  # the backend's numba functions, decorated while the JIT is on
    for function in (tanh_float32, exp_float32):
        function(np.float32(0.5))
        function(0.5)  # as plain Python, math.sin of a float32 is a Python float
    for function in (tanh_float64, exp_float64):
        function(0.5)
    state = np.zeros(2, dtype=np.int64)
    for dtype in (np.float32, np.float64):  # the random ops' fills, for the arrays kernels give them
        fill_uniform(state, np.empty(1, dtype), 24)
        fill_normal(state, np.empty(1, dtype))
    for dtype in (np.int64, np.float32):  # the randperm samples' dtypes
        fill_randperm(state, np.empty(1, dtype))
    saved = numba.config.DISABLE_JIT
    numba.config.DISABLE_JIT = True
    clear_cache()
    try:
        yield
    finally:
        numba.config.DISABLE_JIT = saved
        clear_cache()
