"""``uniform``, ``normal`` and ``randperm`` on the CUDA backend: drawn on the host by jitgrad's own sampler and copied
to the device.

The numbers must be the CPU backend's (and eager numpy's) for the same generator state, bit for bit:
``jitgrad.random.sampling.sample`` is the function both of those run, so calling it here gives that
by construction, float64 ``log`` and ``cos`` included, which a device kernel's libdevice would round
differently. The cost is a read of the two-word state when it lives on the device and a host-to-device
copy of the draw; both are small beside the step that uses a dropout mask or an initialisation.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from numba import cuda

from ....random.sampling import permutation, sample
from .copy import copy

KERNELS: list = []
"""No kernel: the draw runs on the host (module docstring); a strided output is filled by
``copy.strided_copy``, listed there."""


def draw(state: Any, out: Any, distribution: str, stream: Any = 0) -> None:
    """``out`` = ``distribution`` (``"uniform"``, ``"normal"`` or ``"randperm"``) drawn at generator ``state`` (int64
    ``[seed, offset]``, a host or device array), element ``i`` of ``out`` in C order being element
    ``i`` of the draw, as ``sample`` and the CPU backend's ``fill_uniform``/``fill_normal`` number them."""
    host_state = state if isinstance(state, np.ndarray) else state.copy_to_host()  # synchronous: the draw needs it
    if distribution == "randperm":
        values = permutation(host_state, out.shape[0], np.dtype(out.dtype))
    else:
        values = sample(host_state, tuple(out.shape), np.dtype(out.dtype), distribution)
    if out.is_c_contiguous():
        out.copy_to_device(values, stream=stream)
    else:
        copy(cuda.to_device(values, stream=stream), out, stream)


def uniform(state: Any, out: Any, stream: Any = 0) -> None:
    """``out`` = uniform floats in [0, 1) drawn at ``state``."""
    draw(state, out, "uniform", stream)


def normal(state: Any, out: Any, stream: Any = 0) -> None:
    """``out`` = standard normal floats drawn at ``state``."""
    draw(state, out, "normal", stream)



def randperm(state: Any, out: Any, stream: Any = 0) -> None:
    """``out`` (1-d) = a random order of ``range(len(out))`` drawn at ``state``."""
    draw(state, out, "randperm", stream)


__all__ = ["KERNELS", "draw", "normal", "randperm", "uniform"]
