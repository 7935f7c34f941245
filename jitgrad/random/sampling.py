"""From Philox blocks to floats: uniform in [0, 1) and standard normal, one block per element.

Element ``i`` of a draw at generator state ``(seed, offset)`` is Philox block ``offset + i``: its
counter is ``offset + i`` as two 32-bit words (the other two are 0), its key the seed's two words. One
whole block per element, whatever the distribution and dtype, wastes bits (a float32 uniform needs 24
of its 128) but keeps the bookkeeping trivial: a draw of ``n`` elements advances the offset by ``n``,
and element ``i`` depends on nothing but ``(seed, offset + i)``, so a kernel can compute any element
on its own, in any order.

- *uniform*: a float with ``bits`` significant bits (11 for float16, 24 for float32, 53 for float64)
  is the block's top ``bits`` bits as an integer, times ``2**-bits``: exactly representable, in
  ``[0, 1)``, each of the ``2**bits`` values equally likely.
- *normal*: Box-Muller, ``sqrt(-2 ln u1) cos(2 pi u2)`` with two 53-bit uniforms from the block
  (``u1`` taken as ``1 - u`` so that it lies in ``(0, 1]`` and the log stays finite), computed in
  float64 and rounded once to the dtype. An exact transform with a fixed cost per element; a
  rejection method (Marsaglia's polar, the ziggurat) would use a varying number of blocks per element,
  which a kernel cannot know in advance. The tails reach ``sqrt(-2 ln 2**-53)``, about 8.6.

The conversions are plain functions of ``uint64`` words, like ``philox4x32_10``: numpy runs them on
arrays (``sample``, the eager forward of the ``uniform`` and ``normal`` ops) and numba compiles them
unchanged (``jitgrad.backends.numba_cpu.sampling``).

- *permutation*: the stable ranks of ``n`` float64 uniforms (``argsort``), a uniformly random order
  that costs ``n`` elements of the stream, as ``rand(n, dtype=float64)`` would. Ties need two equal
  53-bit draws and the stable sort breaks them by position, so every backend gives the same order.
"""
from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from .philox import WORD, WORD_BITS, philox4x32_10

DISTRIBUTIONS = ("uniform", "normal")
TWO_PI = 2.0 * math.pi
SHIFT_27, SHIFT_26 = np.uint64(5), np.uint64(6)   # 27 bits of one word and 26 of the next make 53
SCALE_53 = 2.0 ** -53


def significant_bits(dtype: Any) -> int:
    """The bits a uniform float of ``dtype`` is made of: its mantissa and the implicit leading bit."""
    return int(np.finfo(dtype).nmant) + 1


def uniform_from_words(w0: Any, w1: Any, bits: int) -> Any:
    """A float64 in [0, 1) holding the top ``bits`` bits (at most 53) of the words ``w0, w1``."""
    if bits <= 32:
        return np.float64(w0 >> np.uint64(32 - bits)) * 2.0 ** -bits
    return np.float64(((w0 >> SHIFT_27) << np.uint64(26)) | (w1 >> SHIFT_26)) * SCALE_53


def normal_from_uniforms(u1: Any, u2: Any) -> Any:
    """A float64 standard normal from two uniforms in [0, 1) (a block's, ``uniform_from_words(w0, w1,
    53)`` and ``(w2, w3, 53)``), by Box-Muller (module docstring). Two plain functions, not one that
    calls the other, so that numba can compile each as it is."""
    return np.sqrt(-2.0 * np.log(1.0 - u1)) * np.cos(TWO_PI * u2)


def split_state(state: np.ndarray) -> tuple[np.uint64, np.uint64]:
    """``(seed, offset)`` of an int64 state ``[seed, offset]``, as the uint64s the arithmetic uses
    (a seed is taken modulo 2**64, so a negative one is as good as any)."""
    seed, offset = np.asarray(state, dtype=np.int64).reshape(2).view(np.uint64)
    return seed, offset


def sample(state: np.ndarray, shape: Sequence[int], dtype: Any, distribution: str) -> np.ndarray:
    """``shape`` elements of ``distribution`` drawn at ``state``, as an array of float ``dtype``."""
    dtype = np.dtype(dtype)
    if dtype.kind != "f":
        raise TypeError(f"random floats need a floating dtype, not {dtype}")
    if distribution not in DISTRIBUTIONS:
        raise ValueError(f"unknown distribution {distribution!r} (expected one of {DISTRIBUTIONS})")
    seed, offset = split_state(state)
    counter = np.arange(math.prod(shape), dtype=np.uint64) + offset
    zeros = np.zeros_like(counter)
    words = philox4x32_10(counter & WORD, counter >> WORD_BITS, zeros, zeros, seed & WORD, seed >> WORD_BITS)
    if distribution == "uniform":
        values = uniform_from_words(words[0], words[1], significant_bits(dtype))
    else:
        values = normal_from_uniforms(uniform_from_words(words[0], words[1], 53),
                                      uniform_from_words(words[2], words[3], 53))
    return np.asarray(values).astype(dtype).reshape(tuple(shape))


def permutation(state: np.ndarray, n: int, dtype: Any = np.int64) -> np.ndarray:
    """A random order of ``range(n)`` drawn at ``state`` (module docstring), as an array of ``dtype``."""
    keys = sample(state, (n,), np.float64, "uniform")
    return np.argsort(keys, kind="stable").astype(dtype)


__all__ = ["DISTRIBUTIONS", "normal_from_uniforms", "permutation", "sample", "significant_bits", "split_state",
           "uniform_from_words"]
