"""Random draws in compiled functions: each call draws afresh from the generator, the numbers eager
would draw under the same seed, and the generator ends where eager leaves it; as a loss, as a whole
step, with check=True, through create_graph's eager re-run, and on the numba backend."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitgrad as jg
import jitgrad.nn.functional as F
from compile_helpers import assert_close
from jitgrad.compile import CompileWarning
from jitgrad.random import default_generator


def draw_all(x):
    """Every random factory and dropout, mixed with x."""
    return (x * jg.rand(3, 4) + jg.randn(4) + jg.rand_like(x) * jg.randn_like(x, dtype=jg.float64).float(),
            F.dropout(x, p=0.4))


def dropout_loss(x, w):
    return (F.dropout(jg.tanh(x @ w), p=0.5) * jg.randn(3, 2)).sum()


def dropout_step(x, w):
    w.grad = None
    loss = dropout_loss(x, w)
    loss.backward()
    return loss, w.grad


def inputs(seed=0):
    rng = np.random.default_rng(seed)
    return (jg.tensor(rng.standard_normal((3, 4)).astype(np.float32)),
            jg.tensor(rng.standard_normal((4, 2)).astype(np.float32), requires_grad=True))


def run_calls(fn, calls, *args):
    """``fn(*args)`` ``calls`` times from seed 0, with an eager draw between calls; its results, the
    eager draws, and the generator's offset at the end."""
    jg.manual_seed(0)
    results, between = [], []
    for _ in range(calls):
        results.append(fn(*args))
        between.append(jg.rand(2))
    return results, between, default_generator.offset


def assert_same(compiled, eager):
    for a, b in zip(jg.fx.node.iter_leaves(compiled), jg.fx.node.iter_leaves(eager)):
        if isinstance(b, jg.Tensor):
            assert_close(a, b)


def test_each_call_draws_fresh_numbers():
    f = jg.compile(lambda x: x + jg.rand(5), fullgraph=True, cache=False)
    x = jg.zeros(5)
    first, second = f(x).numpy(), f(x).numpy()
    assert not np.array_equal(first, second)
    assert len(f.programs) == 1


def test_eager_and_compiled_draw_the_same_numbers():
    x = jg.tensor(np.linspace(-1, 1, 12, dtype=np.float32).reshape(3, 4))
    expected = run_calls(draw_all, 3, x)
    got = run_calls(jg.compile(draw_all, fullgraph=True, cache=False), 3, x)
    for a, b in zip(got[0] + got[1], expected[0] + expected[1]):
        assert_same(a, b)
    assert got[2] == expected[2] == 3 * (12 + 4 + 12 + 12 + 12 + 2)


def test_a_loss_draws_as_eager_and_its_gradient_follows_the_mask():
    x, w = inputs()
    expected = run_calls(lambda x, w: (dropout_loss(x, w), jg.autograd.grad(dropout_loss(x, w), w)), 1, x, w)
    f = jg.compile(dropout_loss, fullgraph=True, cache=False)

    def compiled(x, w):
        return f(x, w), jg.autograd.grad(f(x, w), w)
    got = run_calls(compiled, 1, x, w)
    assert f.programs[0].kind == "loss"
    assert_same(got[0], expected[0])
    assert_same(got[1], expected[1])
    assert got[2] == expected[2]


def test_a_loss_with_backward_outside_over_several_calls():
    x, w = inputs()

    def train(fn):
        jg.manual_seed(5)
        losses, grads = [], []
        for _ in range(3):
            w.grad = None
            loss = fn(x, w)
            loss.backward()
            losses.append(loss.detach())
            grads.append(w.grad)
        return losses, grads, default_generator.offset
    eager = train(dropout_loss)
    compiled = train(jg.compile(dropout_loss, fullgraph=True, cache=False))
    for a, b in zip(compiled[0] + compiled[1], eager[0] + eager[1]):
        assert_close(a, b)
    assert not np.array_equal(eager[1][0].numpy(), eager[1][1].numpy())   # a new mask per call
    assert compiled[2] == eager[2]


def test_a_whole_step_draws_as_eager():
    x, w = inputs()
    expected = run_calls(dropout_step, 3, x, w)
    f = jg.compile(dropout_step, fullgraph=True, cache=False)
    got = run_calls(f, 3, x, w)
    assert f.programs[0].kind == "step"
    for a, b in zip(got[0] + got[1], expected[0] + expected[1]):
        assert_same(a, b)
    assert got[2] == expected[2]


def test_check_mode_sees_the_calls_numbers():
    x, w = inputs()
    for fn in (dropout_loss, dropout_step):
        f = jg.compile(fn, fullgraph=True, cache=False, check=True)
        jg.manual_seed(1)
        got = [f(x, w) for _ in range(2)]
        offset = default_generator.offset
        jg.manual_seed(1)
        expected = [fn(x, w) for _ in range(2)]
        assert default_generator.offset == offset
        for a, b in zip(got, expected):
            assert_same(a, b)


def test_the_create_graph_rerun_draws_the_calls_numbers():
    x, w = inputs()

    def second_order(fn):
        jg.manual_seed(3)
        loss = fn(x, w)
        jg.rand(7)   # the generator moves on before the backward re-runs the function
        (g,) = jg.autograd.grad(loss, w, create_graph=True)
        (gg,) = jg.autograd.grad((g * g).sum(), w)
        return loss, g, gg, default_generator.offset
    eager = second_order(dropout_loss)
    compiled = second_order(jg.compile(dropout_loss, fullgraph=True, cache=False))
    for a, b in zip(compiled[:3], eager[:3]):
        assert_close(a, b)
    assert compiled[3] == eager[3]


def test_a_function_that_seeds_the_generator_runs_eagerly():
    def seeded(x):
        jg.manual_seed(0)
        return x + jg.rand(3)
    f = jg.compile(seeded, cache=False)
    x = jg.zeros(3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        first = f(x)
    assert any(issubclass(w.category, CompileWarning) and "seed" in str(w.message) for w in caught)
    jg.rand(4)
    np.testing.assert_array_equal(f(x).numpy(), first.numpy())   # as eager: the same numbers every call


def test_a_generator_of_the_users_own_draws_eagers_numbers():
    """A draw from a generator of one's own runs the function eagerly; until 2026-11-28 the traces'
    draws moved that generator, so the eager calls drew numbers eager mode never would, silently."""
    def noisy(x, g):
        return x + jg.randn(3, generator=g)
    f = jg.compile(noisy, cache=False)
    x = jg.zeros(3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", CompileWarning)
        got = [f(x, g).numpy() for g in [jg.Generator().manual_seed(5)] for _ in range(2)]
    g = jg.Generator().manual_seed(5)
    expected = [noisy(x, g).numpy() for _ in range(2)]
    np.testing.assert_array_equal(np.array(got), np.array(expected))


def test_tracing_does_not_draw():
    f = jg.compile(lambda x: x * jg.randn(2), fullgraph=True, cache=False)
    jg.manual_seed(4)
    f.explain(jg.ones(2))   # traces and lowers, runs nothing
    assert default_generator.offset == 0
    first = f(jg.ones(2)).numpy()
    jg.manual_seed(4)
    np.testing.assert_array_equal(first, jg.randn(2).numpy())


def test_numba_backend_draws_eagers_numbers(monkeypatch):
    monkeypatch.setenv("JITGRAD_COMPILE_BACKEND", "numba_cpu")
    x, w = inputs()
    f = jg.compile(dropout_step, fullgraph=True, cache=False)
    assert f.backend.name == "numba_cpu"
    expected = run_calls(dropout_step, 2, x, w)
    got = run_calls(f, 2, x, w)
    for a, b in zip(got[0] + got[1], expected[0] + expected[1]):
        assert_same(a, b)
    assert got[2] == expected[2]
    assert "fill_uniform" in f.programs[0].lowered.source and "fill_normal" in f.programs[0].lowered.source


def test_numba_backend_normals_in_float64(monkeypatch):
    monkeypatch.setenv("JITGRAD_COMPILE_BACKEND", "numba_cpu")
    f = jg.compile(lambda x: jg.randn(50_000, dtype=jg.float64) + jg.rand(3, dtype=jg.float64).sum() + x,
                   fullgraph=True, cache=False)
    x = jg.zeros(1, dtype=jg.float64)
    jg.manual_seed(9)
    got = f(x).numpy()
    jg.manual_seed(9)
    expected = (jg.randn(50_000, dtype=jg.float64) + jg.rand(3, dtype=jg.float64).sum()).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-14, atol=1e-15)   # the C library's log/cos: an ulp at most


@pytest.mark.parametrize("p", [0.0, 1.0])
def test_dropout_edges_compile(p):
    x, w = inputs()

    def loss(x, w):
        return F.dropout(x @ w, p=p).sum()
    f = jg.compile(loss, fullgraph=True, cache=False)
    assert_close(f(x, w), loss(x, w))
    assert_close(jg.autograd.grad(f(x, w), w)[0], jg.autograd.grad(loss(x, w), w)[0])
