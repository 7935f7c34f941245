"""Running the generated kernels under numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``), where CI tests
them. The simulator runs each CUDA thread as a Python thread. ``install()`` mends two things of its fake
``cuda`` module that the kernels need:

- It has ``syncthreads`` but no warp shuffles, which the reduction kernels use: ``shfl_down_sync`` is
  added. The emulation exchanges values through a table of the block (every thread writes its value,
  waits at the block's barrier, reads its partner's, and waits again before the table is reused), so it
  is right only when every thread of the block calls it, as in the reduction kernels, which call it in
  code every thread runs; blocks are one warp under the simulator (``THREADS``). Lanes past the warp's
  end read their own value, as on a GPU.
- Its ``cuda.shared.array`` is not thread-safe (numba-cuda 0.30): each thread looks the block's array up
  by the calling line and makes it when it is missing, in two steps, so two threads switched between
  them each make one, and the block's threads no longer share memory: a tile one thread loaded is
  missing for the others, and a product or reduction is silently wrong (once in a few hundred launches
  with a 1 µs switch interval; it was seen as a wrong ``matmul`` gradient in a loaded CI run). The
  replacement looks up and makes the array under a lock. A GPU never had this defect: it is the
  simulator's, not the kernels'. A new floating-point array is filled with NaN, so that a kernel reading
  a slot no thread wrote (a missing barrier, a reduction tree reading too far) gives NaN here rather
  than whatever memory numpy reused, which may pass for a right value.
"""
from __future__ import annotations

import sys
import threading
from typing import Any

import numpy as np

WARP = 32
_ALLOCATING = threading.Lock()  # held while a thread looks up or makes a block's shared array


def is_simulator() -> bool:
    from numba import config

    return bool(config.ENABLE_CUDASIM)


def _shfl_down_sync(self: Any, mask: int, value: Any, delta: int) -> Any:
    thread = threading.current_thread()
    table = thread._manager.__dict__.setdefault("_jitgrad_shuffle", {})
    me = thread.thread_id
    table[me] = value
    thread.syncthreads()
    partner = me + delta
    result = table[partner] if (me % WARP) + delta < WARP and partner in table else value
    thread.syncthreads()
    return result


def _shared_array(self: Any, shape: Any, dtype: Any, alignment: Any = None) -> Any:
    """The block's shared array made at the calling line (one per line, as numba's simulator keys them),
    the same array for every thread of the block: looked up and made atomically (NaN where floating)."""
    if alignment is not None or (isinstance(shape, int) and shape == 0):  # numba's refusal, or the launch's
        return _numba_shared_array(self, shape, dtype, alignment)        # dynamic memory: made beforehand
    from numba.core.types import Type
    from numba.np.numpy_support import as_dtype

    caller = sys._getframe(1)
    key = (caller.f_code.co_filename, caller.f_lineno)
    with _ALLOCATING:
        array = self._allocations.get(key)
        if array is None:
            array = self._allocations[key] = np.empty(shape, as_dtype(dtype) if isinstance(dtype, Type) else dtype)
            if array.dtype.kind in "fc":
                array.fill(np.nan)
    return array


_numba_shared_array: Any = None  # the simulator's own ``FakeCUDAShared.array``, for what it does safely


def install() -> None:
    """Gives the simulator's fake ``cuda`` module ``shfl_down_sync`` and a thread-safe
    ``cuda.shared.array`` (once; a no-op on a GPU)."""
    global _numba_shared_array
    if not is_simulator():
        return
    from numba.cuda.simulator.kernelapi import FakeCUDAModule, FakeCUDAShared

    if not hasattr(FakeCUDAModule, "shfl_down_sync"):
        FakeCUDAModule.shfl_down_sync = _shfl_down_sync
    if FakeCUDAShared.array is not _shared_array:
        _numba_shared_array = FakeCUDAShared.array
        FakeCUDAShared.array = _shared_array


__all__ = ["WARP", "install", "is_simulator"]
