"""The warm-start index (compile/warm_index.py): a compiled function new to this process (as every one is
in a new process) finds a program on disk by its code, what its code reads and its arguments, and
runs it without tracing; anything that changed is another key, traced afresh, with the right result.

Each test makes fresh ``jitgrad.compile`` objects over functions built from source text, so that a
"new process" costs no interpreter start; the kernels are tiny and shared (sizes and Python numbers
are arguments of a kernel, so most variants reuse one compiled kernel). The cross-process run is
tests/compile/test_warm_start.py.
"""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.compile import warm_index
from jitgrad.compile.fingerprint import NotStable, fingerprint

BACKEND = "numba_cpu"
BASE = """
SCALE = {scale}
def helper(x):
    return x * SCALE
def step(x, w):
    loss = (helper(x) @ w).tanh().sum()
    return loss, jg.autograd.grad(loss, [w])
"""


@pytest.fixture
def cache(tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("JITGRAD_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("JITGRAD_LOG", "cache")

    def log() -> str:
        return capfd.readouterr().err
    return log


def build(source: str = BASE, scale: float = 2.0):
    namespace = {"jg": jg}
    exec(compile(source.format(scale=scale), "<step>", "exec"), namespace)
    return namespace


def arrays(rows: int = 3, dtype=np.float32):
    rng = np.random.default_rng(0)
    return rng.standard_normal((rows, 4)).astype(dtype), rng.standard_normal((4, 2)).astype(dtype)


def run(namespace, x, w):
    """A compiled function new to the process, called once: its loss and gradient, as numpy."""
    step = jg.compile(namespace["step"])
    loss, (grad,) = step(jg.tensor(x), jg.tensor(w, requires_grad=True))
    return step, loss.numpy(), grad.numpy()


def expected(x, w, scale):
    pre = (x.astype(np.float64) * scale) @ w
    return np.tanh(pre).sum(), (x.astype(np.float64) * scale).T @ (1 - np.tanh(pre) ** 2)


def check(result, x, w, scale):
    _, loss, grad = result
    want_loss, want_grad = expected(x, w, scale)
    np.testing.assert_allclose(loss, want_loss, rtol=1e-5)
    np.testing.assert_allclose(grad, want_grad, rtol=1e-4, atol=1e-5)


def test_a_new_compiled_function_runs_the_indexed_program_and_every_change_is_traced(cache):
    x, w = arrays()
    check(run(build(), x, w), x, w, 2.0)
    assert "stored" in cache()
    again = run(build(), x, w)  # the same code and arguments: no trace
    check(again, x, w, 2.0)
    assert "used: step (step) runs without tracing" in cache()
    lowered = again[0].programs[0].lowered
    assert lowered.from_disk
    assert lowered.ir_before == warm_index.NOT_INDEXED_IR and "%" in lowered.ir_after  # what explain shows
    variants = [
        ("the global it reads", build(scale=3.0), x, w, 3.0),
        ("its source", build(BASE.replace("x * SCALE", "x * SCALE * 2.0")), x, w, 4.0),
        ("a shape", build(), *arrays(rows=5), 2.0),
        ("a dtype", build(), *arrays(dtype=np.float64), 2.0),
    ]
    for what, namespace, vx, vw, scale in variants:
        check(run(namespace, vx, vw), vx, vw, scale)
        assert "no entry for this code and these arguments: tracing" in cache(), what
        check(run(namespace, vx, vw), vx, vw, scale)
        assert "runs without tracing" in cache(), what


def test_eager_calls_before_do_not_change_a_functions_fingerprint():
    """What eager recording caches (an op's recorder, its node class) is not part of a function's
    fingerprint: the index finds a program whether or not the process ran the ops eagerly first."""
    namespace = build()
    before = fingerprint(namespace["step"])
    x, w = arrays()
    eager_w = jg.tensor(w, requires_grad=True)
    jg.tanh(eager_w).sum().backward()   # jg.tanh: a name step's code reads (.tanh())
    jg.tanh(jg.tensor(x) * 2.0 @ eager_w).sum().backward()
    assert fingerprint(namespace["step"]) == before


def test_a_program_from_the_index_keeps_its_in_process_guards(cache):
    """After a call ran an indexed program, rebinding what the function reads retraces, as after a trace."""
    x, w = arrays()
    run(build(), x, w)
    namespace = build()
    step, loss, _ = run(namespace, x, w)
    assert "runs without tracing" in cache()
    namespace["SCALE"] = 3.0
    new_loss, (grad,) = step(jg.tensor(x), jg.tensor(w, requires_grad=True))
    np.testing.assert_allclose(new_loss.numpy(), expected(x, w, 3.0)[0], rtol=1e-5)
    assert step.recompiles == 1 and "SCALE" in step.log[-1]


def test_what_has_no_stable_description_is_traced_and_said(cache):
    x, w = arrays()
    layer = jg.nn.Linear(4, 2)

    def uses_a_module(x):
        return layer(x).sum()

    def reads_the_environment(x):
        import os
        return (x * float(os.environ.get("SCALE", "1"))).sum()

    for fn, reason in [(uses_a_module, "Linear"), (reads_the_environment, "os")]:
        with pytest.raises(NotStable, match=reason):
            fingerprint(fn)
    for body, reason in [("x * np.random.rand()", "object"), ("x * np.load('w.npy')", "numpy.load"),
                         ("x * jg.initial_seed()", "initial_seed"), ("x * jg.distributed.get_rank()", "distributed"),
                         ("x * hash('a')", "hash"), ("x + jg.tensor(np.ones(3))", "")]:
        namespace = {"np": np, "jg": jg}
        exec(f"def g(x):\n    return {body}", namespace)
        if reason:
            with pytest.raises(NotStable, match=reason):
                fingerprint(namespace["g"])
        else:
            fingerprint(namespace["g"])  # numpy and jitgrad by name: described
    compiled = jg.compile(uses_a_module)
    bias = layer.bias.detach().numpy()
    np.testing.assert_allclose(compiled(jg.tensor(x)).item(), (x @ layer.weight.detach().numpy().T + bias).sum(),
                               rtol=1e-5)
    assert "warm-start index: uses_a_module: not used:" in cache()
    layer.weight = jg.nn.Parameter(jg.zeros(3, 4))  # the module's parameters change shape: guarded in-process
    layer.bias = jg.nn.Parameter(jg.ones(3))
    assert compiled(jg.tensor(x)).item() == pytest.approx(9.0)


def test_an_entry_that_fails_a_check_is_not_used(cache, tmp_path):
    x, w = arrays()
    run(build(), x, w)
    cache()
    for data in (tmp_path / "index").glob("*.bin"):
        data.write_bytes(data.read_bytes() + b"x")
    with pytest.warns(RuntimeWarning, match="not trusted"):
        check(run(build(), x, w), x, w, 2.0)
    assert "not trusted" in cache()

