"""One version counter per numpy memory that tensors share through ``numpy()`` and ``from_numpy``.

Views, ``detach`` and ``.data`` share their source's counter because an op made them from a tensor.
Memory handed out by ``Tensor.numpy()`` can come back as another tensor, ``from_numpy(a)`` twice or
``from_numpy(x.detach().numpy())``, with no op in between: without a common counter, an in-place change
through the second tensor would go unseen by a graph that saved the first, and its gradient would be
silently wrong. So the root array of such memory (the last ndarray of its ``.base`` chain) remembers
the counter of the first tensor that shared it, for as long as it lives.

Writes made through the numpy array itself cannot be seen, as in PyTorch: call
``jitgrad.autograd.graph.increment_version(t)`` after them.
"""
from __future__ import annotations

import weakref

import numpy as np

_counters: dict[int, tuple[weakref.ref, list[int]]] = {}


def root_array(array: np.ndarray) -> np.ndarray:
    """The array whose memory ``array`` views (the last ndarray of its ``.base`` chain; itself if it
    owns its memory)."""
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def shared_counter(array: np.ndarray, counter: list[int]) -> list[int]:
    """The version counter of ``array``'s memory: the one already recorded for it, else ``counter``,
    which is recorded from now on."""
    root = root_array(array)
    key = id(root)
    entry = _counters.get(key)
    if entry is not None and entry[0]() is root:
        return entry[1]
    _counters[key] = (weakref.ref(root, lambda _, key=key: _counters.pop(key, None)), counter)
    return counter
