"""``fill_uniform``, ``fill_normal`` and ``fill_randperm``: the kernels' side of the random ops (``jitgrad.ops.sampling``).

They compile the very functions eager numpy runs (``jitgrad.random.philox`` and
``jitgrad.random.sampling``), one element per Philox block, so a compiled draw has eager's bits:
exactly for uniforms, and for normals up to the last bit of the C library's ``log`` and ``cos``
against numpy's (float32 normals are rounded from float64, which hides that almost always).
"""
from __future__ import annotations

import numba
import numpy as np

from ...random.philox import WORD, WORD_BITS, philox4x32_10
from ...random.sampling import normal_from_uniforms, uniform_from_words

_philox = numba.njit(inline="always")(philox4x32_10)
_uniform = numba.njit(inline="always")(uniform_from_words)
_normal = numba.njit(inline="always")(normal_from_uniforms)
_ZERO = np.uint64(0)


@numba.njit(inline="always")
def _block(state, i):
    """The words of element ``i`` of a draw at ``state`` (int64 ``[seed, offset]``)."""
    seed, counter = np.uint64(state[0]), np.uint64(state[1]) + np.uint64(i)
    return _philox(counter & WORD, counter >> WORD_BITS, _ZERO, _ZERO, seed & WORD, seed >> WORD_BITS)


@numba.njit(nogil=True)
def fill_uniform(state, out, bits):
    """``out[i]`` = element ``i`` of a uniform draw at ``state``, with ``bits`` significant bits."""
    for i in range(out.shape[0]):
        w0, w1, _, _ = _block(state, i)
        out[i] = _uniform(w0, w1, bits)


@numba.njit(nogil=True)
def fill_normal(state, out):
    """``out[i]`` = element ``i`` of a standard normal draw at ``state``."""
    for i in range(out.shape[0]):
        w0, w1, w2, w3 = _block(state, i)
        out[i] = _normal(_uniform(w0, w1, 53), _uniform(w2, w3, 53))



@numba.njit(nogil=True)
def _stable_order(keys, order):
    """``order`` = the indices of ``keys`` in increasing order of key, equal keys by index: numpy's
    ``argsort(kind="stable")``, which ``permutation`` runs eagerly (a stable order is unique, so the two
    agree). A bottom-up merge sort written out, because numba's own ``argsort`` takes several times
    longer to compile, and this is compiled in every process that lowers a ``randperm``."""
    n = keys.shape[0]
    for i in range(n):
        order[i] = i
    merged = np.empty(n, np.int64)
    width = 1
    while width < n:
        for low in range(0, n, 2 * width):
            middle, high = min(low + width, n), min(low + 2 * width, n)
            i, j = low, middle
            for k in range(low, high):
                if i < middle and (j >= high or keys[order[i]] <= keys[order[j]]):
                    merged[k] = order[i]
                    i += 1
                else:
                    merged[k] = order[j]
                    j += 1
        for k in range(n):
            order[k] = merged[k]
        width *= 2


@numba.njit(nogil=True)
def fill_randperm(state, out):
    """``out`` = the stable ranks of ``out.shape[0]`` float64 uniforms drawn at ``state``: the eager
    ``permutation``'s order."""
    keys = np.empty(out.shape[0], np.float64)
    fill_uniform(state, keys, 53)
    order = np.empty(out.shape[0], np.int64)
    _stable_order(keys, order)
    for i in range(out.shape[0]):
        out[i] = order[i]


__all__ = ["fill_normal", "fill_randperm", "fill_uniform"]
