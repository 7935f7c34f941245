"""A compiled step's outputs that are its inputs, or views of them, share the input's memory as eager
mode's do: a write through one is seen through the other. Before, every output was the kernel's own
array, so ``y = f(x); y.add_(1)`` left ``x`` unchanged where eager changes it, silently."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg
from compile_helpers import assert_close

CASES = {  # name -> the function, returning one tensor
    "transpose": lambda x: x.t(),
    "slice of a transpose": lambda x: x.t()[1:],
    "row": lambda x: x[0],
    "reshape": lambda x: x.reshape(6),
    "unsqueeze then expand": lambda x: x.unsqueeze(0).expand(2, 2, 3),
    "detach": lambda x: x.detach(),
    "the input": lambda x: x,
    "a new value": lambda x: x * 2.0,
    "reshape of a transpose (a copy)": lambda x: x.t().reshape(6),
}


def _after_write(fn, x):
    y = fn(x)
    with jg.no_grad():
        y.add_(1.0)
    return y


@pytest.mark.parametrize("name", list(CASES))
def test_an_output_shares_memory_with_its_input_exactly_when_eager_says_so(name):
    fn = CASES[name]
    compiled = jg.compile(fn, cache=False, fullgraph=True)
    for _ in range(2):   # the first call traces; the second runs the program
        x, xe = jg.arange(6.0).reshape(2, 3), jg.arange(6.0).reshape(2, 3)
        y, ye = compiled(x), fn(xe)
        assert np.shares_memory(y.numpy(), x.numpy()) == np.shares_memory(ye.numpy(), xe.numpy())
        assert (y is x) == (ye is xe)
        assert y.shape == ye.shape
        if name != "unsqueeze then expand":   # several elements over one: not writable, as in PyTorch
            y, ye = _after_write(compiled, x), _after_write(fn, xe)
            assert_close(x, xe)
            assert_close(y, ye)


def test_a_view_of_an_input_written_in_place_shows_the_write():
    def step(w):
        with jg.no_grad():
            w.mul_(2.0)
        return w[1:], w
    compiled = jg.compile(step, cache=False, fullgraph=True)
    for _ in range(2):
        w, we = jg.ones(3), jg.ones(3)
        (view, same), (view_e, _) = compiled(w), step(we)
        assert same is w
        assert_close(view, view_e)
        with jg.no_grad():
            view[0] = 7.0
            view_e[0] = 7.0
        assert_close(w, we)


def test_a_view_of_a_captured_tensor_is_that_tensors_memory():
    table = jg.arange(4.0)
    compiled = jg.compile(lambda: table[2:], cache=False, fullgraph=True)
    for _ in range(2):
        view = compiled()
        assert np.shares_memory(view.numpy(), table.numpy())
        assert not view.requires_grad


def test_a_loss_returning_a_view_of_an_input_runs_eagerly_and_keeps_eagers_memory():
    """A loss's results come from its kernels; a view of an input among them would be a copy, so such
    a function runs eagerly (with a warning), where the view shares the input's memory."""
    from jitgrad.compile import CompileWarning

    def f(x):
        return (x * 2.0).sum(), x[1:]
    compiled = jg.compile(f, cache=False)
    x = jg.ones(3, requires_grad=True)
    with pytest.warns(CompileWarning, match="a result is an input or a view of one"):
        loss, view = compiled(x)
    assert np.shares_memory(view.detach().numpy(), x.detach().numpy()) and view.grad_fn is not None
    loss.backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]


def _step_returning_grads(kind, views):
    """A step returning the ``.grad``s it leaves (to all-reduce or clip them outside, say): eager
    returns the ``.grad`` tensors themselves, so scaling them in place scales what ``opt.step()`` reads."""
    import jitgrad.nn as nn
    jg.manual_seed(0)
    model = nn.Linear(3, 2).double()

    def step(x):
        if kind != "accumulated":
            model.zero_grad()
        loss = model(x).sin().sum()
        loss.backward()
        weight, bias = model.weight.grad, model.bias.grad
        return loss.detach(), [weight[0], bias[1:]] if views else [weight, bias]
    return model, step


@pytest.mark.parametrize("views", [False, True], ids=["the grads", "views of them"])
@pytest.mark.parametrize("kind", ["accumulated", "set to None"])
def test_a_grad_a_step_returns_is_the_grad_it_leaves(kind, views):
    """Until 2026-11-28 a compiled step returned the kernel's copy of each: scaling it left ``.grad`` as it
    was, silently (a weight's gradient is a transpose, so its views are taken from that)."""
    runs = []
    for compiled in (False, True):
        model, step = _step_returning_grads(kind, views)
        fn = jg.compile(step, cache=False, fullgraph=True) if compiled else step
        x = jg.tensor(np.arange(12.0).reshape(4, 3) / 10)
        seen = []
        for _ in range(3):
            _, grads = fn(x)
            seen.append([grad is model.weight.grad for grad in grads])
            with jg.no_grad():
                for grad in grads:
                    grad.mul_(2.0)
            seen.append((model.weight.grad.tolist(), model.bias.grad.tolist()))
        runs.append(seen)
    assert runs[0] == runs[1]


def test_a_parameter_or_a_leaf_requiring_grad_a_step_returns_is_one_as_eagerly():
    """``return w`` gives the parameter itself, and a leaf made inside (``nn.Parameter(...)``,
    ``.detach().requires_grad_()``: the next iterate of a hand-written optimizer, fed back in) requires
    grad, of its class, over the input's memory where it is a view of one. Until 2026-11-28 each came
    back as a plain copy that did not: the next call's ``autograd.grad`` raised, and a backward outside
    left them out."""
    import jitgrad.nn as nn

    def step(w, x):
        loss = (w * x).sin().sum()
        (g,) = jg.autograd.grad(loss, [w])
        new = (w - 0.1 * g).detach().requires_grad_()
        return loss.detach(), w, new, nn.Parameter(new.detach() * 2.0), x[1:].detach().requires_grad_()
    runs = []
    for compiled in (False, True):
        fn = jg.compile(step, cache=False, fullgraph=True) if compiled else step
        w, x = nn.Parameter(jg.tensor([1.0, 2.0])), jg.tensor([0.5, 0.3])
        seen = []
        for _ in range(3):
            _, same, w, param, of_x = fn(w, x)
            seen.append((same.requires_grad, w.requires_grad, w.is_leaf, type(w).__name__, type(param).__name__,
                         param.requires_grad, of_x.requires_grad, np.shares_memory(of_x.detach().numpy(), x.numpy()),
                         w.tolist()))
        runs.append(seen)
    assert runs[0] == runs[1]
    assert runs[1][0][:8] == (True, True, True, "Tensor", "Parameter", True, True, True)
