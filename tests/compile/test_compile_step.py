"""A whole training step (backward() inside, an SGD update under no_grad) compiled as one graph."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

import jitgrad as jg
import workloads
from compile_helpers import assert_close, w1_step

LR = 0.1


def sgd_step(x, y, w, b):
    loss = ((x @ w + b).tanh() - y).pow(2).mean()
    loss.backward()
    with jg.no_grad():
        w -= LR * w.grad
        b.data = b.data - LR * b.grad
    w.grad = None
    b.grad = None
    return loss


def accumulating_step(x, w):
    """No zero_grad: the gradient accumulates over calls, as eager's does."""
    loss = (x * w).sin().sum()
    loss.backward()
    with jg.no_grad():
        w.sub_(0.01 * w.grad)
    return loss


def _params(rng):
    return [rng.standard_normal((4, 3)), rng.standard_normal((3, 2)), rng.standard_normal(2), rng.standard_normal((4, 2))]


@pytest.fixture(scope="module")
def compiled_sgd():
    return jg.compile(sgd_step)


def test_sgd_over_several_steps_matches_eager(compiled_sgd):
    x, w, b, y = _params(np.random.default_rng(0))
    ours = [jg.tensor(w, requires_grad=True), jg.tensor(b, requires_grad=True)]
    theirs = [jg.tensor(w, requires_grad=True), jg.tensor(b, requires_grad=True)]
    w_before = ours[0].detach().numpy()
    for _ in range(4):
        loss = compiled_sgd(jg.tensor(x), jg.tensor(y), *ours)
        expected = sgd_step(jg.tensor(x), jg.tensor(y), *theirs)
        assert_close(loss, expected)
        for a, e in zip(ours, theirs):
            assert_close(a, e)
            assert a.grad is None
    assert ours[0].detach().numpy() is w_before  # updated in place, like eager's w -= ...
    assert len(compiled_sgd.programs) == 1


def test_gradient_already_there_is_an_input():
    rng = np.random.default_rng(1)
    x, w = rng.standard_normal(5), rng.standard_normal(5)
    compiled = jg.compile(accumulating_step)
    ours, theirs = jg.tensor(w, requires_grad=True), jg.tensor(w, requires_grad=True)
    for _ in range(3):
        assert_close(compiled(jg.tensor(x), ours), accumulating_step(jg.tensor(x), theirs))
        assert_close(ours, theirs)
        assert_close(ours.grad, theirs.grad)


def test_a_steps_first_grad_has_the_leafs_layout():
    """PyTorch's layout contract, as eager's AccumulateGrad keeps it: a column-major weight's first .grad
    is column-major (a program's gradients are row-major; until 2026-11-28 the step's .grad was one)."""
    rng = np.random.default_rng(2)
    x, w = rng.standard_normal((2, 3)), np.asfortranarray(rng.standard_normal((2, 3)))
    ours, theirs = jg.tensor(w, requires_grad=True), jg.tensor(w, requires_grad=True)
    jg.compile(accumulating_step, cache=False)(jg.tensor(x), ours)
    accumulating_step(jg.tensor(x), theirs)
    assert ours.grad.stride() == theirs.grad.stride() == (1, 2)
    assert_close(ours.grad, theirs.grad)


def test_w1_whole_step_matches_eager():
    inputs = workloads.w1_inputs(True)
    compiled = jg.compile(w1_step)
    x, xe = jg.tensor(inputs["x"], requires_grad=True), jg.tensor(inputs["x"], requires_grad=True)
    for _ in range(2):
        (loss, (grad,)), (loss_e, (grad_e,)) = compiled(x), w1_step(xe)
        assert_close(loss, loss_e)
        assert_close(grad, grad_e)
        assert_close(x.grad, xe.grad)


def test_w2_step_matches_eager_float32():
    inputs = workloads.w2_inputs(True)
    names = workloads.W2_PARAMS

    def w2_step(x, onehot, w1, b1, w2, b2, w3, b3):
        h = jg.tanh(x @ w1 + b1)
        h = jg.tanh(h @ w2 + b2)
        logits = h @ w3 + b3
        loss = -(jg.nn.functional.log_softmax(logits, dim=1) * onehot).sum() / x.shape[0]
        loss.backward()
        return loss
    compiled = jg.compile(w2_step)

    def tensors():
        return [jg.tensor(inputs["x"]), jg.tensor(inputs["onehot"])] + \
            [jg.tensor(inputs[n], requires_grad=True) for n in names]
    ours, theirs = tensors(), tensors()
    assert_close(compiled(*ours), w2_step(*theirs))
    for a, e in zip(ours[2:], theirs[2:]):
        assert_close(a.grad, e.grad)


def test_a_forward_value_the_backward_recomputes_is_computed_once():
    def step(x):
        z = x.tanh()
        loss = ((z - z.mean(1, keepdim=True)) / z.std(1, keepdim=True)).sum()
        loss.backward()   # std's backward computes z.mean(1, keepdim=True) again, under no_grad
        return loss
    f = jg.compile(step, cache=False)
    x = jg.randn(4, 5, dtype=jg.float64, requires_grad=True)
    xe = x.detach().requires_grad_()
    assert_close(f(x), step(xe))
    assert_close(x.grad, xe.grad)
    program = f.programs[0]
    graph = program.lowered.ir_after if not isinstance(program.lowered, list) else program.lowered[0].ir_after
    assert graph.count("= call_function mean(") == 1, graph


@pytest.mark.parametrize("enabled", [True, False])
def test_the_cycle_collector_is_off_while_a_call_compiles_and_as_it_was_after(monkeypatch, enabled):
    """A long trace made the collector's full passes a fifth of W4's 500-step compile (decorator.py)."""
    import gc
    import importlib
    capture_module = importlib.import_module("jitgrad.compile.capture")
    seen, capture = [], capture_module.capture

    def watched(*args, **kwargs):
        seen.append(gc.isenabled())
        return capture(*args, **kwargs)
    monkeypatch.setattr(capture_module, "capture", watched)
    f = jg.compile(lambda x: (x * 2.0).sum(), cache=False)
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        f(jg.ones(3))
        assert seen == [False] and gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()


def _grad_step(kind):
    def step(x, w):
        if kind == "set to None":
            w.grad = None
        elif kind == "zeroed in place":
            w.grad.zero_()
        loss = ((x @ w).tanh() ** 2).sum()
        loss.backward()
        return loss
    return step


@pytest.mark.parametrize("kind", ["accumulated", "set to None", "zeroed in place"])
def test_a_steps_grad_is_the_same_tensor_exactly_when_eager_keeps_it(kind):
    """Eager adds a later gradient into the ``.grad`` it finds (docs/autograd.md, section 8): a ``.grad``
    held from before the call sees the sum. The compiled step writes into that tensor in the same cases,
    and makes a new one where eager does."""
    runs = []
    for compiled in (False, True):
        fn = jg.compile(_grad_step(kind), cache=False) if compiled else _grad_step(kind)
        x = jg.tensor(np.arange(6.0).reshape(2, 3) / 6)
        w = jg.tensor(np.ones((3, 2)) / 3, requires_grad=True)
        w.grad = jg.zeros(3, 2, dtype=jg.float64)
        held = w.grad
        seen = []
        for _ in range(3):
            fn(x, w)
            seen.append((w.grad is held, held.tolist(), w.grad.tolist()))
        runs.append(seen)
    assert runs[0] == runs[1]


def test_one_tensor_set_as_the_grad_of_two_parameters_gets_both_gradients():
    """Eager's ``AccumulateGrad`` adds each parameter's gradient into the ``.grad`` it finds, so a tensor
    set as the ``.grad`` of two parameters sums both, as in PyTorch. The trace saw it as one input, and
    the program wrote the two sums into it one after the other: the second parameter's won (until
    2026-11-28). Such a call runs eagerly, with a warning."""
    runs = []
    for compiled in (False, True):
        a = jg.tensor([1.0, 2.0], requires_grad=True)
        b = jg.tensor([3.0, 4.0], requires_grad=True)

        def step(x):
            loss = (a * x).sum() + (b * x * x).sum()
            loss.backward()
            return loss.detach()
        fn = jg.compile(step, cache=False) if compiled else step
        x = jg.tensor([1.0, 1.5])
        fn(x)
        shared = jg.zeros(2)
        a.grad = b.grad = shared
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(2):
                fn(x)
        runs.append((shared.tolist(), a.grad is shared, b.grad is shared))
        if compiled:
            assert any("the .grad of two" in str(w.message) for w in caught)
    assert runs[0] == runs[1] == ([4.0, 7.5], True, True)


def test_a_grad_the_step_reads_over_memory_it_writes_runs_eagerly():
    """A ``.grad`` that is a view of a buffer the step scales in place (a gradient bucket) is read
    after the write, eagerly; the program would read it before."""
    runs = []
    for compiled in (False, True):
        w = jg.tensor([1.0, 2.0, 3.0], requires_grad=True)
        bucket = jg.tensor([1.0, 1.0, 1.0, 4.0])
        w.grad = bucket[:3]

        def step():
            bucket.mul_(0.5)
            with jg.no_grad():
                w.sub_(w.grad)
        fn = jg.compile(step, cache=False) if compiled else step
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(3):
                fn()
        runs.append((w.tolist(), bucket.tolist()))
    assert runs[0] == runs[1]
