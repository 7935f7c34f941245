"""Small real programs lowered whole, forward and backward, and compiled by numba: a chain like the
benchmarks' W1 and one training step of a small MLP, equal to eager."""
from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

import jitgrad as jg
import workloads
from jitgrad.backends.numba_cpu import compiler
from helpers import assert_close
from lowering_helpers import interpreted, lowered

def chain(x):
    """The benchmarks' W1 with its backward."""
    loss = workloads.w1_loss(jg)(x)
    loss.backward()
    return loss


def mlp_step(x, onehot, w1, b1, w2, b2):
    hidden = jg.tanh(x @ w1 + b1)
    logits = hidden @ w2 + b2
    loss = -(jg.nn.functional.log_softmax(logits, dim=1) * onehot).sum(dim=1).mean()
    loss.backward()
    return loss


def eager_gradients(program, arrays):
    """The program's result and the gradients of its floating inputs, run eagerly."""
    tensors = [jg.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    result = program(*tensors)
    return [result.detach().numpy()] + [t.grad.numpy() for t in tensors if t.grad is not None]


@pytest.fixture(scope="module")
def chain_kernel():
    arrays = [np.linspace(-1.5, 1.5, 16)]
    before = len(compiler._KERNELS)
    graph, kernel = lowered(chain, arrays)
    return SimpleNamespace(arrays=arrays, graph=graph, kernel=kernel, compiled=len(compiler._KERNELS) - before)


def test_the_chain_forward_and_backward_is_one_kernel(chain_kernel):
    phases = {n.meta.get("phase", "forward") for n in chain_kernel.graph.nodes}
    assert phases == {"forward", "backward"}
    assert chain_kernel.compiled <= 1
    assert chain_kernel.kernel.source.count("def ") == 1  # no function beside the kernel


def test_the_chain_equals_eager_and_the_interpreter(chain_kernel):
    got = list(chain_kernel.kernel(*chain_kernel.arrays))
    assert_close(got, interpreted(chain_kernel.graph, chain_kernel.arrays), dtype=np.float64)
    assert_close(got, eager_gradients(chain, chain_kernel.arrays), dtype=np.float64)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_an_mlp_training_step_equals_eager(dtype):
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal((8, 5)), np.eye(3)[rng.integers(0, 3, 8)], rng.standard_normal((5, 6)) * 0.5,
              rng.standard_normal(6) * 0.1, rng.standard_normal((6, 3)) * 0.5, rng.standard_normal(3) * 0.1]
    arrays = [a.astype(dtype) for a in arrays]
    graph, kernel = lowered(mlp_step, arrays)
    got = list(kernel(*arrays))
    assert len(got) == 7  # the loss and the gradients of the six inputs (lowered() makes them all require grad)
    assert_close(got, interpreted(graph, arrays), dtype=dtype)
    assert_close(got, eager_gradients(mlp_step, arrays), dtype=dtype)


def test_compiled_large_reductions_equal_eager():
    """Row folds of a loop large enough for ``accumulate_in_lanes`` (W3's shape, smaller), compiled."""
    x = jg.tensor(np.random.default_rng(0).uniform(-1.0, 1.0, (512, 515)).astype(np.float32), requires_grad=True)

    def program(x):
        z = jg.gelu(x, approximate="tanh") * 2.0
        out = (z - z.mean(1, keepdim=True)) / (z.std(1, keepdim=True) + 1e-5)
        return (out * x).sum(), jg.autograd.grad((out * x).sum(), [x])[0]

    step = jg.compile(program, fullgraph=True, cache=False)
    for got, want in zip(step(x), program(x)):
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=2e-4, atol=1e-4)
    source = step.explain(x).lowered[0].source
    assert "_lane" in source and "sub_re" in source  # rows folded in lanes; z - mean recomputed, not stored



def test_compiled_flat_sum_equals_eager_at_any_thread_count():
    """K14's forward fold, smaller: ``tanh(h).sum()`` over rows of 16 float32 is folded over one flat range
    (``accumulate_flat``), compiled; it equals eager, with the same bits on 1 and 2 threads."""
    import numba
    h = np.random.default_rng(7).standard_normal((4111, 16)).astype(np.float32)
    graph, kernel = lowered(lambda x: (x.tanh(), x.tanh().sum()), [h])
    assert "_flat" in kernel.source and "prange" in kernel.source
    threads = numba.get_num_threads()
    try:
        results = []
        for count in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
            numba.set_num_threads(count)
            results.append(list(kernel(h)))
    finally:
        numba.set_num_threads(threads)
    np.testing.assert_array_equal(results[0][1], results[-1][1])
    t = jg.tensor(h)
    assert_close(results[0], [jg.tanh(t).numpy(), jg.tanh(t).sum().numpy()], dtype=np.float32)
