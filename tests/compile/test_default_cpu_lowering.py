"""The warm-start index and output reuse under the default CPU lowering (the LLVM generator, numba
behind it), not only under numba_cpu: the same tests as test_warm_index.py and test_output_reuse.py,
collected again here, where every kernel comes from llvm_cpu; and a program with a rolled loop in the
index."""
import numpy as np

import jitgrad as jg
from test_output_reuse import *  # noqa: F401,F403 - the tests and their fixtures, under this BACKEND
from test_warm_index import *  # noqa: F401,F403
from test_warm_index import build

BACKEND = ""  # read by conftest.compile_backend: JITGRAD_COMPILE_BACKEND unset, the default lowering


RNN = """
def step(wh, wx, xs):
    h = jg.zeros(wh.shape[0], dtype=wh.dtype)
    for t in range(xs.shape[0]):
        h = jg.tanh(wh @ h + wx @ xs[t])
    loss = (h * h).sum()
    return loss, jg.autograd.grad(loss, [wh, wx])
"""


def test_a_rolled_loop_warm_starts_from_the_llvm_kernels_object_code(cache):
    """A program whose kernel has a loop (the RNN's steps rolled) goes into the warm-start index and
    comes back from the disk's object code, untraced, with the same bits."""
    from jitgrad.backends import llvm_cpu

    rng = np.random.default_rng(5)
    wh, wx, xs = 0.4 * rng.standard_normal((3, 3)), 0.4 * rng.standard_normal((3, 2)), rng.standard_normal((6, 2))

    def run_rnn():
        step = jg.compile(build(RNN)["step"])
        loss, grads = step(jg.tensor(wh, requires_grad=True), jg.tensor(wx, requires_grad=True), jg.tensor(xs))
        return step, [loss.numpy(), *(g.numpy() for g in grads)]

    # compiled afresh, so that its object code goes into this test's cache: a kernel of the same code
    # that an earlier test compiled would be reused from memory and not written to this cache
    llvm_cpu.clear_cache()
    step, first = run_rnn()
    assert "_j_head:" in step.programs[0].lowered.source and "stored" in cache()
    llvm_cpu.clear_cache()   # the kernel must come from the disk, as in a new process
    again, second = run_rnn()
    assert "runs without tracing" in cache()
    assert again.programs[0].lowered.from_disk
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b)
    h = np.zeros(3)
    for x in xs:
        h = np.tanh(wh @ h + wx @ x)
    np.testing.assert_allclose(first[0], (h * h).sum(), rtol=1e-12)
