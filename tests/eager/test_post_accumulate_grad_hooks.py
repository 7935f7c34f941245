"""``Tensor.register_post_accumulate_grad_hook`` against PyTorch, and the engine's ``queue_callback``:
the two seams DistributedDataParallel drives its all-reduces from."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.autograd.engine import queue_callback


def _scenario(lib):
    """Every event a post-accumulate hook sees in a few backwards, as plain values."""
    events = []

    def record(name):
        return lambda t: events.append((name, t.grad.detach().numpy().tolist()))

    x = lib.tensor([1.0, 2.0], requires_grad=True)
    w = lib.tensor([3.0, -1.0], requires_grad=True)
    x.register_hook(lambda g: events.append(("pre x", g.detach().numpy().tolist())))
    hx = x.register_post_accumulate_grad_hook(record("x"))
    w.register_post_accumulate_grad_hook(record("w"))
    (x * w).sum().backward()                  # both hooks, after the accumulation
    (x * x * 2).sum().backward()              # x only (w gets no gradient), summed into .grad
    lib.autograd.grad((x * w).sum(), [x])     # autograd.grad accumulates nothing: no hook
    (x * w).sum().backward(inputs=[w])        # only the inputs accumulate
    hx.remove()
    (x * w).sum().backward()
    events.append(("unused", None))
    y = lib.tensor([1.0], requires_grad=True)
    y.register_post_accumulate_grad_hook(lambda t: t)  # a tensor returned is accepted and ignored
    (y * 2).sum().backward()
    return events


def test_hooks_run_as_pytorchs():
    torch = pytest.importorskip("torch")
    assert _scenario(jg) == _scenario(torch)


def test_hook_sees_the_accumulated_gradient_and_runs_per_backward():
    x = jg.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.numpy().copy()))
    (x * 3).sum().backward()
    (x * 3).sum().backward()
    assert [s.tolist() for s in seen] == [[3.0, 3.0], [6.0, 6.0]]


def test_a_hooked_leaf_takes_the_general_path_of_a_one_node_backward():
    """``x.sum().backward()`` is one node into a leaf, which the engine runs without a graph task unless
    the leaf is hooked: the hook must run there too, and may queue a callback."""
    x = jg.tensor([1.0, 2.0], requires_grad=True)
    order = []

    def hook(t):
        order.append("hook")
        queue_callback(lambda: order.append("end"))
    x.register_post_accumulate_grad_hook(hook)
    x.sum().backward()
    assert order == ["hook", "end"]


def _hook_registered_in_backward(lib):
    """A custom Function's backward registers a post-accumulate hook on the leaf it feeds: in a
    one-node backward, the leaf's accumulation, after that backward, runs it, with grad mode off."""
    seen = []
    x = lib.ones(3, requires_grad=True)

    class Sum(lib.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x.sum()

        @staticmethod
        def backward(ctx, g):
            x.register_post_accumulate_grad_hook(
                lambda t: seen.append((lib.is_grad_enabled(), t.grad.detach().numpy().tolist())))
            return g * lib.ones(3)
    Sum.apply(x).backward()
    return seen


def test_a_hook_registered_during_a_one_node_backward_runs_as_pytorchs():
    assert _hook_registered_in_backward(jg) == [(False, [1.0, 1.0, 1.0])]
    torch = pytest.importorskip("torch")
    assert _hook_registered_in_backward(torch) == _hook_registered_in_backward(jg)


def test_errors_as_pytorchs():
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
        jg.ones(2).register_post_accumulate_grad_hook(print)
    x = jg.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be registered on non-leaf tensors"):
        (x * 2).register_post_accumulate_grad_hook(print)
    x.register_post_accumulate_grad_hook(lambda t: 5)
    with pytest.raises(TypeError, match="expected Variable, but hook returned 'int'"):
        (x * 2).sum().backward()


def test_queue_callback_runs_after_the_last_node_once():
    a = jg.tensor([1.0, 2.0], requires_grad=True)
    b = jg.tensor([3.0], requires_grad=True)
    order = []

    def hook(t):
        order.append("a")
        queue_callback(lambda: order.append(("end", b.grad is not None)))
    a.register_post_accumulate_grad_hook(hook)
    b.register_post_accumulate_grad_hook(lambda t: order.append("b"))
    ((a * 2).sum() * b).sum().backward()
    assert order[-1] == ("end", True) and sorted(order[:-1]) == ["a", "b"]
    assert np.allclose(a.grad.numpy(), [6.0, 6.0])


def test_queue_callback_outside_backward_is_refused():
    with pytest.raises(RuntimeError, match="Final callbacks can only be installed during backward pass"):
        queue_callback(print)


def test_a_failing_callback_rolls_the_backward_back():
    x = jg.tensor([1.0], requires_grad=True)

    def fail():
        raise ValueError("callback failed")
    handle = x.register_post_accumulate_grad_hook(lambda t: queue_callback(fail))
    with pytest.raises(ValueError, match="callback failed"):
        (x * 2).sum().backward()
    assert x.grad is None
    handle.remove()
