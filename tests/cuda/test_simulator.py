"""The backend's mends to numba's CUDA simulator (``jitgrad/backends/numba_cuda/simulator.py``), under
thread switches that used to break them.

numba's ``cuda.shared.array`` looked a block's array up and made it in two steps; a thread switched
between them made a second array, and the block's threads no longer shared memory (seen once in CI as
a wrong ``matmul`` gradient). Here the allocation is made slow (a sleep inside ``numpy.empty``, which
lets every other thread run), so that without the mend every launch goes wrong, not one in hundreds.
"""
from __future__ import annotations

import time

import numpy as np
import pytest
from numba import cuda

import jitgrad as jg
from jitgrad.backends.numba_cuda.simulator import install

from cuda_support import SIMULATOR, cuda_mode

pytestmark = pytest.mark.skipif(cuda_mode() != SIMULATOR, reason="tests numba's simulator, not a GPU")


@pytest.fixture
def slow_allocation(monkeypatch):
    """``numpy.empty`` sleeping first: a thread making an array lets the others run meanwhile."""
    install()
    empty = np.empty

    def sleeping_empty(*args, **kwargs):
        time.sleep(0.002)
        return empty(*args, **kwargs)

    monkeypatch.setattr(np, "empty", sleeping_empty)


@cuda.jit
def _next_lanes_number(out):
    numbers = cuda.shared.array(32, np.float64)
    numbers[cuda.threadIdx.x] = cuda.threadIdx.x
    cuda.syncthreads()
    out[cuda.blockIdx.x, cuda.threadIdx.x] = numbers[(cuda.threadIdx.x + 1) % 32]


def test_the_threads_of_a_block_share_its_shared_array(slow_allocation):
    out = np.zeros((2, 32))
    _next_lanes_number[2, 32](out)
    np.testing.assert_array_equal(out, np.tile((np.arange(32) + 1) % 32, (2, 1)))


@cuda.jit
def _unwritten_slot(out):
    numbers = cuda.shared.array(33, np.float64)
    numbers[cuda.threadIdx.x] = 1.0
    cuda.syncthreads()
    out[cuda.threadIdx.x] = numbers[cuda.threadIdx.x + 1]  # slot 32: no thread wrote it


def test_a_shared_slot_read_before_any_write_is_nan():
    """A kernel reading what no thread wrote gets NaN under the simulator, not a plausible value."""
    install()
    out = np.zeros(32)
    _unwritten_slot[1, 32](out)
    np.testing.assert_array_equal(out[:31], 1.0)
    assert np.isnan(out[31])


def test_the_matmul_gradient_seen_wrong_in_ci(slow_allocation):
    """``x (2, 3, 4) @ v (4,)``, backward: the tiled product's shared tiles, then a reduction."""
    rng = np.random.default_rng(3)
    x, v, seed = rng.standard_normal((2, 3, 4)), rng.standard_normal(4), rng.uniform(0.5, 1.5, (2, 3))
    xs, vs = (jg.tensor(a, device="cuda", requires_grad=True) for a in (x, v))
    out = jg.matmul(xs, vs)
    out.backward(jg.tensor(seed, device="cuda"))
    np.testing.assert_allclose(out.detach().cpu().numpy(), x @ v, rtol=1e-12)
    np.testing.assert_allclose(vs.grad.cpu().numpy(), np.einsum("bik,bi->k", x, seed), rtol=1e-12)
    np.testing.assert_allclose(xs.grad.cpu().numpy(), seed[..., None] * v, rtol=1e-12)
