"""Running the generated kernels under numba's CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``), where CI tests
them: the simulator runs each CUDA thread as a Python thread and has ``syncthreads`` but no warp
shuffles, which the reduction kernels use. ``install()`` adds ``shfl_down_sync`` to its fake ``cuda``
module.

The emulation exchanges values through a table of the block (every thread writes its value, waits at
the block's barrier, reads its partner's, and waits again before the table is reused), so it is
right only when every thread of the block calls it, as in the reduction kernels, which call it in
code every thread runs; blocks are one warp under the simulator (``THREADS``). Lanes past the warp's
end read their own value, as on a GPU.
"""
from __future__ import annotations

import threading
from typing import Any

WARP = 32


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


def install() -> None:
    """Gives the simulator's fake ``cuda`` module ``shfl_down_sync`` (once; a no-op on a GPU)."""
    if not is_simulator():
        return
    from numba.cuda.simulator.kernelapi import FakeCUDAModule

    if not hasattr(FakeCUDAModule, "shfl_down_sync"):
        FakeCUDAModule.shfl_down_sync = _shfl_down_sync


__all__ = ["WARP", "install", "is_simulator"]
