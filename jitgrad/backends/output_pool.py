"""The output arrays of a compiled call, handed out again once nobody holds them: no allocation in
the steady state (issue 17), and never an array the caller kept.

A compiled step's outputs become the caller's tensors and ``.grad``s without a copy (the backend
contract, ``compile/backend.py``), so an output may only be written again when nothing else can see
it. The reference count tells: a tensor, a ``.grad``, a numpy view or ``torch.from_numpy`` of it, an
argument of this call, all hold a reference. Each thread keeps, per output, the last two arrays
(a step whose new gradient replaces the one it read, accumulation or an update written back,
alternates between them); both CPU backends' compiled graphs take their outputs from here.
"""
from __future__ import annotations

import sys
import threading

import numpy as np

KEPT_OUTPUTS = 2


def _count_in_pool(held: list) -> int:
    for array in held:
        return sys.getrefcount(array)
    return 0


# What ``sys.getrefcount(array)`` gives, for ``array`` the variable of a loop over its pool, when only
# the pool holds it (the pool, the loop variable, the call's argument).
_ONLY_THE_POOL = _count_in_pool([object()])


def output_arrays(local: threading.local, outputs: list[tuple[tuple[int, ...], np.dtype]]) -> list[np.ndarray]:
    """One array per output (shape, dtype) for this call: one an earlier call on this thread
    returned, if nothing but the pool (kept on ``local``) holds it, else a new one, kept in place of
    the oldest."""
    pools = getattr(local, "outputs", None)
    if pools is None:
        pools = local.outputs = [[] for _ in outputs]
    out = []
    count = sys.getrefcount
    for held, (shape, dtype) in zip(pools, outputs):
        for array in held:
            if count(array) == _ONLY_THE_POOL:
                break
        else:
            array = np.empty(shape, dtype)
            if len(held) == KEPT_OUTPUTS:
                del held[0]
            held.append(array)
        out.append(array)
    return out
