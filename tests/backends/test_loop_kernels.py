"""Rolled loops (``roll_loops``) in numba kernels run as plain Python, and in the LLVM generator's kernels
(compiled for real: a fraction of a second each): the shapes of carries and kept values that W4 does not
have (a scalar loss summed over the steps, a batch of hidden states, two carries, a kept value per
step), against eager, and the LLVM kernel against the same graph unrolled, bit for bit.
tests/fx/test_roll_loops.py compiles W4's shape for real."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg
from jitgrad import fx
from jitgrad.backends.numba_cpu import lower
from jitgrad.fx.loop import Loop
from jitgrad.fx.passes import DEFAULT_PIPELINE, LOOP_PIPELINE, PassManager

pytestmark = pytest.mark.usefixtures("plain_python")
STEPS = 6


def summed_losses(wh, wx, xs):
    """A loss per step, summed: a scalar carried beside the hidden state."""
    h, loss = jg.zeros(wh.shape[0], dtype=wh.dtype), 0.0
    for t in range(STEPS):
        h = jg.tanh(wh @ h + wx @ xs[t])
        loss = loss + (h * h).sum()
    return loss, jg.autograd.grad(loss, [wh, wx])


def batched(wh, wx, xs):
    """A batch of sequences: the carried state is a matrix (batch, hidden)."""
    h = jg.zeros(xs.shape[1], wh.shape[0], dtype=wh.dtype)
    for t in range(STEPS):
        h = jg.tanh(h @ wh + xs[t] @ wx)
    loss = (h * h).sum()
    return loss, jg.autograd.grad(loss, [wh, wx])


def two_states(wh, wx, xs):
    """Two carried values and every step's output kept (returned as a list)."""
    h, c = jg.zeros(wh.shape[0], dtype=wh.dtype), jg.zeros(wh.shape[0], dtype=wh.dtype)
    outs = []
    for t in range(STEPS):
        c = (wh @ c) * 0.5 + jg.tanh(wx @ xs[t])
        h = jg.tanh(wh @ h + c)
        outs.append(h.sum())
    return outs


def inputs(program):
    rng = np.random.default_rng(3)
    features = 2
    wh = jg.tensor(0.4 * rng.standard_normal((3, 3)), requires_grad=True)
    if program is batched:
        return wh, jg.tensor(0.4 * rng.standard_normal((features, 3)), requires_grad=True), \
            jg.tensor(rng.standard_normal((STEPS, 4, features)))
    return wh, jg.tensor(0.4 * rng.standard_normal((3, features)), requires_grad=True), \
        jg.tensor(rng.standard_normal((STEPS, features)))


def flat(values):
    if isinstance(values, (tuple, list)):
        return [a for v in values for a in flat(v)]
    return [np.asarray(values.detach().numpy() if isinstance(values, jg.Tensor) else values)]


@pytest.mark.parametrize("program", [summed_losses, batched, two_states], ids=lambda p: p.__name__)
def test_rolled_loops_in_a_kernel_equal_eager(program):
    args = inputs(program)
    graph = PassManager(LOOP_PIPELINE).run(fx.trace(program, *args).graph)
    assert any(isinstance(n.target, Loop) for n in graph.nodes)
    kernel = lower(graph)
    assert "for loop_j in range(" in kernel.source
    got = kernel(*(a.detach().numpy() for a in args))
    want = flat(program(*args))
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g).reshape(np.shape(w)), w, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("program", [summed_losses, batched, two_states], ids=lambda p: p.__name__)
def test_rolled_loops_in_an_llvm_kernel_equal_the_unrolled_kernel_and_eager(program):
    """The LLVM generator writes each loop node once, as a counted loop (one loop head per loop node),
    with the same bits as the unrolled graph's kernel: same float functions, same order."""
    llvm_cpu = pytest.importorskip("jitgrad.backends.llvm_cpu")
    args = inputs(program)
    arrays = [a.detach().numpy() for a in args]
    graph = PassManager(LOOP_PIPELINE).run(fx.trace(program, *args).graph)
    loops = [n for n in graph.nodes if isinstance(n.target, Loop)]
    assert loops
    kernel = llvm_cpu.lower(graph)
    for loop in loops:
        assert kernel.source.count(f"\n{loop.name}_j_head:") == 1
    got = kernel(*arrays)
    unrolled = llvm_cpu.lower(PassManager(DEFAULT_PIPELINE).run(fx.trace(program, *args).graph))(*arrays)
    want = flat(program(*args))
    assert len(got) == len(unrolled) == len(want)
    for g, u, w in zip(got, unrolled, want):
        np.testing.assert_array_equal(g, u)
        np.testing.assert_allclose(np.asarray(g).reshape(np.shape(w)), w, rtol=1e-10, atol=1e-12)
