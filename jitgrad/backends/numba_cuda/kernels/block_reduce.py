"""Block-wide folds for the kernels that give a block to each row (softmax, argmax, matrix-vector).

Each thread holds a partial result; warp shuffles (``cuda.shfl_down_sync``) fold each warp's 32 values
into its lane 0, which writes it to shared memory, and thread 0 folds the warps' values in warp order.
The order is fixed by thread numbers, so a result is the same bit for bit on every run (no atomics).

Every thread of the block calls these functions (they synchronise the block, and a shuffle needs all
lanes of the warp). Blocks are a whole number of warps: ``launch.THREADS`` threads, one warp under the simulator,
which has no shuffles of its own (the backend's ``simulator.py`` emulates them for one-warp blocks).
"""
from __future__ import annotations

from numba import cuda

from ..launch import THREADS

WARP = 32
WARPS = THREADS // WARP
ALL_LANES = 0xFFFFFFFF


@cuda.jit(device=True)
def block_sum(value, partials):
    """The sum of every thread's ``value``, returned to every thread; ``partials``: shared, ``WARPS``
    elements of the value's type."""
    offset = WARP // 2
    while offset > 0:
        value += cuda.shfl_down_sync(ALL_LANES, value, offset)
        offset //= 2
    if cuda.threadIdx.x % WARP == 0:
        partials[cuda.threadIdx.x // WARP] = value
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        for warp in range(1, WARPS):
            value += partials[warp]
        partials[0] = value
    cuda.syncthreads()
    total = partials[0]
    cuda.syncthreads()  # before anyone writes partials again
    return total


@cuda.jit(device=True)
def block_max(value, partials):
    """The largest of every thread's ``value``, returned to every thread (as ``block_sum``)."""
    offset = WARP // 2
    while offset > 0:
        value = max(value, cuda.shfl_down_sync(ALL_LANES, value, offset))
        offset //= 2
    if cuda.threadIdx.x % WARP == 0:
        partials[cuda.threadIdx.x // WARP] = value
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        for warp in range(1, WARPS):
            value = max(value, partials[warp])
        partials[0] = value
    cuda.syncthreads()
    peak = partials[0]
    cuda.syncthreads()
    return peak


@cuda.jit(device=True)
def beats(key, at, best, best_at, largest):
    """Whether element ``at`` with ``key`` goes before the best so far (``best`` at ``best_at``; an
    index -1 is no element): numpy's and PyTorch's first best element, a NaN counting as the best."""
    if at < 0:
        return False
    if best_at < 0:
        return True
    if key != key:
        return best == best or at < best_at
    if best != best:
        return False
    if key == best:
        return at < best_at
    return key > best if largest else key < best


@cuda.jit(device=True)
def block_best(key, at, keys, indices, largest):
    """The first best (key, index) pair over the block (``beats``), returned to every thread; ``keys``
    and ``indices``: shared, ``WARPS`` elements of the key's type and of int64."""
    offset = WARP // 2
    while offset > 0:
        other = cuda.shfl_down_sync(ALL_LANES, key, offset)
        other_at = cuda.shfl_down_sync(ALL_LANES, at, offset)
        if beats(other, other_at, key, at, largest):
            key, at = other, other_at
        offset //= 2
    if cuda.threadIdx.x % WARP == 0:
        keys[cuda.threadIdx.x // WARP] = key
        indices[cuda.threadIdx.x // WARP] = at
    cuda.syncthreads()
    if cuda.threadIdx.x == 0:
        for warp in range(1, WARPS):
            if beats(keys[warp], indices[warp], key, at, largest):
                key, at = keys[warp], indices[warp]
        keys[0] = key
        indices[0] = at
    cuda.syncthreads()
    key, at = keys[0], indices[0]
    cuda.syncthreads()
    return key, at
