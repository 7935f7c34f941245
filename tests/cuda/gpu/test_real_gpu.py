"""On a real GPU only (marked ``gpu``): sizes the simulator could never run, compared with the CPU.

The simulator checks the kernels' logic on tiny inputs; these check what only hardware shows: blocks
of 256 threads, reductions over more elements than a block, many blocks in a grid-stride loop, and that
``.grad`` is complete when ``backward()`` returns (the streams are synchronised).
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg

pytestmark = pytest.mark.gpu


def test_large_elementwise_and_reduction_match_the_cpu():
    x = jg.randn(1 << 20)
    expected = (x.tanh() * 2 + 1).sum().item()
    got = (x.cuda().tanh() * 2 + 1).sum().item()
    assert got == pytest.approx(expected, rel=1e-4)


def test_large_matmul_matches_the_cpu():
    a, b = jg.randn(513, 1031), jg.randn(1031, 257)
    np.testing.assert_allclose((a.cuda() @ b.cuda()).cpu().numpy(), (a @ b).numpy(), rtol=1e-4, atol=1e-3)


def test_compiled_loss_gradients_are_complete_when_backward_returns():
    @jg.compile
    def loss(x, w):
        return (x @ w).relu().pow(2).mean()

    x, w = jg.randn(4096, 512), jg.randn(512, 256, requires_grad=True)
    loss(x, w).backward()
    expected = w.grad.numpy().copy()
    w_cuda = w.detach().cuda().requires_grad_()
    loss(x.cuda(), w_cuda).backward()
    np.testing.assert_allclose(w_cuda.grad.cpu().numpy(), expected, rtol=1e-3, atol=1e-5)
