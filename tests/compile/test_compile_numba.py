"""The decorator on the numba backend: a few small programs, forward and backward, a loss and a whole
step, equal to eager. Few and small: each graph is a numba compile. Every op here has a lowering, so
a function that cannot compile fails its test (fullgraph=True) rather than testing eager against
itself."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg
from compile_helpers import assert_close, w1_step
from helpers import last_json_line, run_python
from jitgrad.compile import CompiledFunctionBackward

BACKEND = "numba_cpu"  # read by conftest.compile_backend


def compiled(fn):
    """``jitgrad.compile(fn)`` on the numba backend, with fullgraph=True: no silent eager fallback."""
    function = jg.compile(fn, fullgraph=True, cache=False)
    assert function.backend.name == "numba_cpu"
    return function


def mlp_loss(x, onehot, w1, b1, w2, b2):
    h = jg.tanh(x @ w1 + b1)
    logits = h @ w2 + b2
    return -(jg.nn.functional.log_softmax(logits, dim=1) * onehot).sum() / x.shape[0]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_mlp_loss_forward_and_gradients(dtype):
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal((6, 5)), np.eye(3)[rng.integers(0, 3, 6)], rng.standard_normal((5, 4)),
              rng.standard_normal(4), rng.standard_normal((4, 3)), rng.standard_normal(3)]
    arrays = [a.astype(dtype) for a in arrays]

    def tensors():
        return [jg.tensor(a) for a in arrays[:2]] + [jg.tensor(a, requires_grad=True) for a in arrays[2:]]
    ours, theirs = tensors(), tensors()
    f = compiled(mlp_loss)
    loss = f(*ours)
    assert isinstance(loss.grad_fn, CompiledFunctionBackward)
    expected = mlp_loss(*theirs)
    assert_close(loss, expected)
    loss.backward()
    expected.backward()
    for a, e in zip(ours[2:], theirs[2:]):
        assert_close(a.grad, e.grad)
    if dtype == np.float64:  # explain lowers a loss's forward and whole backward too: two more compiles, done once
        assert "def kernel(" in f.explain(*ours).source


def test_whole_sgd_step_over_several_steps():
    def step(x, y, w, b):
        loss = ((x @ w + b).tanh() - y).pow(2).mean()
        loss.backward()
        with jg.no_grad():
            w -= 0.1 * w.grad
            b -= 0.1 * b.grad
        w.grad = None
        b.grad = None
        return loss
    rng = np.random.default_rng(1)
    x, y, w, b = rng.standard_normal((8, 3)), rng.standard_normal((8, 2)), rng.standard_normal((3, 2)), rng.standard_normal(2)
    ours = [jg.tensor(w, requires_grad=True), jg.tensor(b, requires_grad=True)]
    theirs = [jg.tensor(w, requires_grad=True), jg.tensor(b, requires_grad=True)]
    f = compiled(step)
    for _ in range(3):
        assert_close(f(jg.tensor(x), jg.tensor(y), *ours), step(jg.tensor(x), jg.tensor(y), *theirs))
        for a, e in zip(ours, theirs):
            assert_close(a, e)


def test_w1_chain_step():
    import workloads

    inputs = workloads.w1_inputs(True)
    x, xe = jg.tensor(inputs["x"], requires_grad=True), jg.tensor(inputs["x"], requires_grad=True)
    (loss, (grad,)), (loss_e, (grad_e,)) = compiled(w1_step)(x), w1_step(xe)
    assert_close(loss, loss_e)
    assert_close(grad, grad_e)


def test_new_batch_size_retraces_without_recompiling():
    f = compiled(lambda x, w: ((x * w).sin() * 2.0).sum())
    w = jg.randn(3, dtype=jg.float64, requires_grad=True)
    for batch in (4, 7):
        x = jg.randn(batch, 3, dtype=jg.float64)
        we = w.detach().requires_grad_()
        out = f(x, w)
        out.backward()
        expected = ((x * we).sin() * 2.0).sum()
        expected.backward()
        assert_close(out, expected)
        assert_close(w.grad, we.grad)
        w.grad = None
    assert f.recompiles == 0


def test_new_batch_size_reuses_the_numba_kernels():
    f = compiled(lambda x, w: ((x * w).cos() * 3.0).sum())  # a graph no other test lowers
    w = jg.randn(3, dtype=jg.float64, requires_grad=True)
    for batch in (5, 9):
        f(jg.randn(batch, 3, dtype=jg.float64), w)
    assert f.programs[-1].lowered_graphs[0].reused


def mean_mlp_step(x, onehot, w1, b1, w2, b2):
    """The issue's W2 step written with ``mean``: it reads no shape, so sizes stay out of the graph."""
    h = jg.tanh(x @ w1 + b1)
    loss = -(jg.nn.functional.log_softmax(h @ w2 + b2, dim=1) * onehot).sum(dim=1).mean()
    loss.backward()
    return loss


def test_an_mlp_step_at_batch_64_then_100_then_37_compiles_its_kernels_once():
    from jitgrad.backends.numba_cpu import compiler

    rng = np.random.default_rng(3)
    params = [jg.tensor(rng.standard_normal(s).astype(np.float32) * 0.3, requires_grad=True)
              for s in ((12, 8), (8,), (8, 5), (5,))]
    step = compiled(mean_mlp_step)
    kernels = []
    for batch in (64, 100, 37):
        x = jg.tensor(rng.standard_normal((batch, 12)).astype(np.float32))
        onehot = jg.tensor(np.eye(5, dtype=np.float32)[rng.integers(0, 5, batch)])
        mirrors = [p.detach().requires_grad_() for p in params]
        assert_close(step(x, onehot, *params), mean_mlp_step(x, onehot, *mirrors))
        for p, m in zip(params, mirrors):
            assert_close(p.grad, m.grad, "gradient")
            p.grad = None
        kernels.append(len(compiler._KERNELS))
    assert kernels[1:] == kernels[:1] * 2, f"kernels in memory after each batch size: {kernels}"
    assert step.recompiles == 0


NUMBA_SCRIPT = """
import json
import jitgrad as jg
from jitgrad.compile import cache

@jg.compile
def loss(x, w):
    return ((x * w).tanh() * 3.0).sum()

x = jg.tensor([0.5, -1.0, 2.0], dtype=jg.float64)
w = jg.tensor([1.0, 2.0, 3.0], dtype=jg.float64, requires_grad=True)
out = loss(x, w)
out.backward()
program = loss.programs[0]
kernels = [lowered.call.kernel for lowered in program.lowered_graphs]
print(json.dumps({"hits": cache.stats.hits, "writes": cache.stats.writes, "grad": w.grad.tolist(),
                  "kernels": len(kernels), "numba_cache_hits": sum(sum(k.stats.cache_hits.values()) for k in kernels)}))
"""


def test_a_second_process_gets_numba_machine_code_from_the_disk_cache(tmp_path):
    """numba's own cache, what a kernel kept without object code is loaded from (the object code that
    comes first is removed here; tests/compile/test_warm_start.py runs it)."""
    env = {"JITGRAD_CACHE_DIR": str(tmp_path), "JITGRAD_COMPILE_BACKEND": "numba_cpu"}
    first = last_json_line(run_python(NUMBA_SCRIPT, env, timeout=300))
    for path in [*tmp_path.glob("jitgrad_object_*.json"), *(tmp_path / "objects").iterdir()]:
        path.unlink()
    second = last_json_line(run_python(NUMBA_SCRIPT, env, timeout=300))
    kernels = first["kernels"]  # the fused loss-and-gradient kernel
    assert first["writes"] == 2 * kernels and first["numba_cache_hits"] == 0  # numba's entry and the object
    assert second["hits"] == kernels and second["numba_cache_hits"] == kernels, second
    assert second["grad"] == first["grad"]


PLAIN_PYTHON_SCRIPT = """
import inspect, json
import jitgrad as jg

def loss(x, w):
    return (x * w).sin().sum()

x = jg.tensor([0.5, -1.0, 2.0], dtype=jg.float64)
w = jg.tensor([1.0, 2.0, 3.0], dtype=jg.float64, requires_grad=True)
f = jg.compile(loss, fullgraph=True, cache=False)
f(x, w).backward()
kernel = f.programs[0].lowered_graphs[0].call.kernel
w_eager = w.detach().requires_grad_()
loss(x, w_eager).backward()
print(json.dumps({"plain_function": inspect.isfunction(kernel), "file": kernel.__code__.co_filename,
                  "lines": inspect.getsource(kernel).count("\\n"),
                  "grad": w.grad.tolist(), "eager_grad": w_eager.grad.tolist()}))
"""


def test_under_numba_disable_jit_the_generated_code_runs_as_plain_python():
    env = {"NUMBA_DISABLE_JIT": "1", "JITGRAD_COMPILE_BACKEND": "numba_cpu"}
    run = last_json_line(run_python(PLAIN_PYTHON_SCRIPT, env, timeout=120))
    assert run["plain_function"] and "jitgrad.backends.numba_cpu kernel" in run["file"]
    assert run["lines"] > 3  # a debugger and inspect find the generated source
    np.testing.assert_allclose(run["grad"], run["eager_grad"], rtol=1e-12)


def test_cross_entropy_on_class_indices_takes_the_labels_as_an_argument():
    """Labels are an integer tensor argument: each batch runs the same program, and a label outside the
    classes raises IndexError from the kernel before the step changes any parameter."""
    rng = np.random.default_rng(5)
    w = jg.tensor(rng.standard_normal((4, 3)), requires_grad=True)
    reference = jg.tensor(w.detach().numpy(), requires_grad=True)

    def step(x, labels, w):
        loss = jg.nn.functional.cross_entropy(x @ w, labels)
        loss.backward()
        with jg.no_grad():
            w -= 0.1 * w.grad
        w.grad = None
        return loss
    f = compiled(step)
    for _ in range(2):
        x, labels = jg.tensor(rng.standard_normal((5, 4))), jg.tensor(rng.integers(0, 3, 5))
        assert_close(f(x, labels, w), step(x, labels, reference))
        np.testing.assert_allclose(w.detach().numpy(), reference.detach().numpy(), rtol=1e-12)
    assert len(f.programs) == 1
    before = w.detach().numpy().copy()
    with pytest.raises(IndexError, match="out of bounds"):
        f(x, jg.tensor(np.array([0, 1, 3, 0, 1])), w)
    np.testing.assert_array_equal(w.detach().numpy(), before)


def test_captured_weights_and_dynamic_numbers_in_numba_kernels():
    """A model's weights captured by a closure and a learning rate and step count that change every
    call: numba kernels with the weights as inputs and the numbers as scalar arguments, two compiles,
    float32 values as eager computes them (the numbers cast to float32 before each op)."""
    rng = np.random.default_rng(4)
    x = jg.tensor(rng.standard_normal((5, 3)).astype(np.float32))

    def model():
        return [jg.tensor(rng.standard_normal(s).astype(np.float32), requires_grad=True) for s in ((3, 4), (4, 1))]
    ours, theirs = model(), model()
    for a, b in zip(ours, theirs):
        b.data = a.detach().clone()

    def make_step(params):
        def step(x, lr, t):
            loss = ((x @ params[0]).tanh() @ params[1]).pow(2).mean()
            loss.backward()
            with jg.no_grad():
                for p in params:
                    p -= lr * p.grad / (1 - 0.9 ** t)
                    p.grad = None
            return loss
        return step
    f, eager = compiled(make_step(ours)), make_step(theirs)
    for t in range(1, 6):
        assert_close(f(x, 0.05 / t, t), eager(x, 0.05 / t, t))
    for a, b in zip(ours, theirs):
        assert_close(a, b)
    assert len(f.programs) == 2 and "python_number" in f.programs[-1].lowered.ir_after


def test_a_kernel_call_runs_no_python_code_and_results_are_fresh_arrays():
    """The caller allocates the outputs and the kernel fills them: a call runs no Python function
    (numba unpickles the type of each array a kernel returns). A 0-d loss and a view of a value made
    inside come back as arrays of their own. (A loss returning an input, or a view of one, runs eagerly:
    test_compile_output_aliases.py.)"""
    import sys

    f = jg.compile(lambda x, w: (((x * w).sin() * 1.5).sum(), (x * w).transpose(0, 1)), cache=False)
    x = jg.randn(3, 2, dtype=jg.float64)
    w = jg.randn(3, 2, dtype=jg.float64, requires_grad=True)
    loss, view = f(x, w)
    assert_close(loss, ((x * w).sin() * 1.5).sum())
    assert_close(view, (x * w).transpose(0, 1))
    assert not np.shares_memory(view.detach().numpy(), x.numpy())
    lowered = f.programs[0].forward.call
    arguments = [x.numpy(), w.detach().numpy(), *lowered.trailing_arguments(),
                 *[np.empty(shape, dtype) for shape, dtype in lowered.output_arrays]]
    called: list[str] = []
    sys.setprofile(lambda frame, event, arg: called.append(frame.f_code.co_name) if event == "call" else None)
    try:
        lowered.kernel(*arguments)
    finally:
        sys.setprofile(None)
    assert set(called) <= {"kernel"}, called  # numba reports the kernel itself to a profiler
