"""The second trace takes a pure backward call's results from the first (fx/backward_calls.py), and is
exactly as strict as running it: anything that could run user code in the backward, or make it
differ from the first trace's, makes the second trace run it, so a difference between the traces
still shows and the function runs eagerly. Each case below compiles silently, and wrongly, when the
check it names is removed."""
from __future__ import annotations

import importlib
import queue

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.autograd.graph import get_gradient_edge
from jitgrad.compile import CompileWarning

backward_calls = importlib.import_module("jitgrad.fx.backward_calls")


@pytest.fixture
def taken(monkeypatch):
    """The backward calls whose results a second trace took, counted."""
    count = [0]
    take = backward_calls.BackwardCalls._take

    def counted(self, *args):
        count[0] += 1
        return take(self, *args)
    monkeypatch.setattr(backward_calls.BackwardCalls, "_take", counted)
    return count


def _values(seed=0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((3, 3)) * 0.5, rng.standard_normal((6, 3))


def _rnn(w, xs):
    h = jg.zeros(3, dtype=w.dtype)
    for t in range(6):
        h = (w @ h + xs[t]).tanh()
    return (h * h).sum()


def test_two_pure_backward_calls_are_taken_and_give_eagers_results(taken):
    """``loss.backward(retain_graph=True)`` into ``.grad``, then ``autograd.grad`` over the same graph:
    the second trace runs neither, and the compiled step matches the function run eagerly."""
    w_value, xs_value = _values()

    def make():
        w = jg.tensor(w_value, requires_grad=True)

        def step(xs):
            loss = _rnn(w, xs)
            loss.backward(retain_graph=True)
            (again,) = jg.autograd.grad(loss, [w])
            grad = w.grad
            w.grad = None
            return loss, grad, again * 2
        return step

    eager, compiled = make(), jg.compile(make(), cache=False)
    for seed in (1, 2):
        xs = jg.tensor(_values(seed)[1])
        for got, want in zip(compiled(xs), eager(xs)):
            np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12, atol=1e-14)
    assert compiled.programs and taken[0] == 2


def _refused(step, xs):
    with pytest.warns(CompileWarning, match="two traces of one call gave different graphs"):
        step(xs)
    assert not step.programs


def _unseen(values):
    """A call giving ``values`` in turn, from a library's object no guard looks into (a queue): the
    second trace reads another value than the first. (An iterator's ``next`` runs the function eagerly
    untraced, ``free_variables``.)"""
    pending = queue.SimpleQueue()
    for value in values:
        pending.put(value)

    def take():
        value = pending.get_nowait()
        pending.put(value)
        return value
    return take


def _flipping(register, into_grad):
    """A step that calls ``register(w, h, loss)`` only in every second run (the second trace), where no
    guard sees it (``next`` of a cycle); its backward is ``loss.backward()`` with ``into_grad``, else
    ``autograd.grad``."""
    flip = _unseen([False, True])
    w = jg.tensor(_values()[0], requires_grad=True)

    def step(xs):
        h = (w @ xs[0]).tanh()
        loss = (h * xs[1]).sum()
        if flip():
            register(w, h, loss)
        if not into_grad:
            return jg.autograd.grad(loss, [w])[0]
        loss.backward()
        grad = w.grad
        w.grad = None
        return grad
    return jg.compile(step, cache=False)


HOOKS = [  # each runs user code in the backward, in the second trace only: (name, register, into .grad)
    ("a tensor hook on an intermediate", lambda w, h, loss: h.register_hook(lambda g: g * 2), False),
    ("a prehook on a node", lambda w, h, loss: loss.grad_fn.register_prehook(lambda g: (g[0] * 2,)), False),
    ("a hook on a node", lambda w, h, loss: h.grad_fn.register_hook(lambda gi, go: tuple(g * 2 for g in gi)),
     False),
    ("a tensor hook on the leaf", lambda w, h, loss: w.register_hook(lambda g: g * 2), False),
    ("a tensor hook on the leaf, backward()", lambda w, h, loss: w.register_hook(lambda g: g * 2), True),
    # autograd.grad runs no hook of the AccumulateGrad it captures at, eagerly or traced: only backward()
    ("a prehook on the leaf's AccumulateGrad",
     lambda w, h, loss: get_gradient_edge(w).node.register_prehook(lambda g: (g[0] * 2,)), True),
    ("a post-accumulate hook on the leaf", lambda w, h, loss: w.register_post_accumulate_grad_hook(
        lambda p: p.grad.mul_(2)), True),
]


@pytest.mark.parametrize("register, into_grad", [c[1:] for c in HOOKS], ids=[c[0] for c in HOOKS])
def test_a_hook_in_the_second_trace_only_is_run_and_seen(register, into_grad):
    _refused(_flipping(register, into_grad), jg.tensor(_values(1)[1]))


def test_saved_tensor_hooks_in_the_second_trace_only_are_run_and_seen():
    """An unpack hook runs in the backward (this one makes an op there)."""
    flip = _unseen([False, True])
    w = jg.tensor(_values()[0], requires_grad=True)

    def step(xs):
        if flip():
            with jg.autograd.graph.saved_tensors_hooks(lambda t: t, lambda t: t * 1.5):
                loss = (w @ xs[0]).tanh().sum()
        else:
            loss = (w @ xs[0]).tanh().sum()
        return jg.autograd.grad(loss, [w])[0]
    _refused(jg.compile(step, cache=False), jg.tensor(_values(1)[1]))


def test_a_custom_function_in_the_second_trace_only_is_run_and_seen():
    """The same forward ops, a backward of the user's own."""
    class Doubled(jg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x.tanh()

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * (1 - x.tanh() ** 2) * 2

    flip = _unseen([False, True])
    w = jg.tensor(_values()[0], requires_grad=True)

    def step(xs):
        a = w @ xs[0]
        h = Doubled.apply(a) if flip() else a.tanh()
        return jg.autograd.grad(h.sum(), [w])[0]
    with pytest.warns(CompileWarning):
        step_compiled = jg.compile(step, cache=False)
        step_compiled(jg.tensor(_values(1)[1]))
    assert not step_compiled.programs


def test_a_grad_present_in_the_second_trace_only_is_accumulated_into():
    """``w.grad`` set before ``backward()`` in the second trace only: the backward adds into it there."""
    flip = _unseen([False, True])
    w = jg.tensor(_values()[0], requires_grad=True)

    def step(xs, start):
        if flip():
            w.grad = start
        loss = (w @ xs[0]).tanh().sum()
        loss.backward()
        grad = w.grad
        w.grad = None
        return grad
    compiled = jg.compile(step, cache=False)
    with pytest.warns(CompileWarning, match="two traces of one call gave different graphs"):
        compiled(jg.tensor(_values(1)[1]), jg.ones(3, 3, dtype=jg.float64))
    assert not compiled.programs


def test_a_graph_kept_in_the_first_trace_only_is_freed_as_eager_frees_it():
    """``retain_graph`` true in the first trace, false in the second: the second's second backward
    fails as it does eagerly (the graph was freed), so the step is not compiled; the call runs
    eagerly, false again, and raises there."""
    flip = _unseen([True, False, False])
    w = jg.tensor(_values()[0], requires_grad=True)

    def step(xs):
        loss = (w @ xs[0]).tanh().sum()
        (first,) = jg.autograd.grad(loss, [w], retain_graph=flip())
        (second,) = jg.autograd.grad(loss, [w])
        return first + second
    compiled = jg.compile(step, cache=False)
    with pytest.raises(RuntimeError, match="backward through the graph a second time"):
        compiled(jg.tensor(_values(1)[1]))
    assert not compiled.programs


def test_a_backward_from_another_root_in_the_second_trace_is_run():
    """Two losses of the same shape of graph; the second trace differentiates the other one."""
    flip = _unseen([False, True])
    w = jg.tensor(_values()[0], requires_grad=True)

    def step(xs):
        first, second = ((w @ xs[t]).tanh().sum() for t in (0, 1))
        return jg.autograd.grad(second if flip() else first, [w])[0]
    _refused(jg.compile(step, cache=False), jg.tensor(_values(1)[1]))


def test_a_seed_the_trace_has_not_seen_is_compared_by_value():
    """``grad_outputs`` made from a value no guard sees: a constant of the backward, whose values differ."""
    values = _unseen([1.0, 2.0])
    w = jg.tensor(_values()[0], requires_grad=True)

    def step(xs):
        loss = (w @ xs[0]).tanh().sum()
        return jg.autograd.grad(loss, [w], grad_outputs=jg.tensor(values(), dtype=jg.float64))[0]
    _refused(jg.compile(step, cache=False), jg.tensor(_values(1)[1]))


def test_a_custom_functions_backward_is_run_in_both_traces():
    """Its backward reads a value no guard sees: only running it shows the difference."""
    factors = _unseen([2.0, 3.0])

    class Scaled(jg.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1.0

        @staticmethod
        def backward(ctx, g):
            return g * factors()

    w = jg.tensor(_values()[0], requires_grad=True)

    def step(xs):
        return jg.autograd.grad(Scaled.apply(w @ xs[0]).sum(), [w])[0]
    _refused(jg.compile(step, cache=False), jg.tensor(_values(1)[1]))


def test_a_taken_call_frees_what_the_first_trace_freed(taken):
    """A second backward over a freed graph fails in both traces, and the function that catches it
    compiles: the taken call freed the second trace's graph too."""
    w = jg.tensor(_values()[0], requires_grad=True)

    def step(xs):
        loss = (w @ xs[0]).tanh().sum()
        (grad,) = jg.autograd.grad(loss, [w])
        try:
            jg.autograd.grad(loss, [w])
        except RuntimeError:
            return grad * 2
        return grad
    compiled = jg.compile(step, cache=False)
    xs = jg.tensor(_values(1)[1])
    np.testing.assert_allclose(compiled(xs).numpy(), step(xs).numpy(), rtol=1e-12, atol=1e-14)
    assert compiled.programs and taken[0] == 1


def test_one_gradient_twice_stays_one_tensor(taken):
    """``autograd.grad`` of a leaf asked for twice returns one tensor twice: an in-place change through
    one name shows through the other, in the second trace as eagerly."""
    w = jg.tensor(_values()[0], requires_grad=True)

    def step(xs):
        first, again = jg.autograd.grad((w @ xs[0]).tanh().sum(), [w, w])
        first.add_(1.0)
        return again
    compiled = jg.compile(step, cache=False)
    xs = jg.tensor(_values(1)[1])
    np.testing.assert_allclose(compiled(xs).numpy(), step(xs).numpy(), rtol=1e-12, atol=1e-14)
    assert compiled.programs and taken[0] == 1
