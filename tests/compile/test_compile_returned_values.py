"""What a compiled function returns must behave as eager's: a returned tensor whose graph a backward
outside could still run through, and returned tensors sharing memory, make the function run eagerly
(``compile/returned_values.py``); an ordinary step's loss, whose graph its backward freed, compiles."""
from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.compile import CompileWarning


def _outer_gradient(step, compiled: bool):
    """``x.grad`` after ``(step(x) + x.sum()).backward()``: the step's own backward inside, then one
    outside through what it returned."""
    fn = jg.compile(step, cache=False) if compiled else step
    x = jg.tensor([1.0, 2.0, 3.0], requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CompileWarning)
        for _ in range(2):
            x.grad = None
            (fn(x) + x.sum()).backward()
    return x.grad.numpy(), [str(w.message) for w in caught if issubclass(w.category, CompileWarning)]


def _retained(x):
    loss = (x * x).sum()
    loss.backward(retain_graph=True)
    return loss


def _nothing_saved(x):
    loss = (x - 1.0).sum()   # SubBackward0 and SumBackward0 keep no tensors: a backward may run again
    loss.backward()
    return loss


def _computed_after_backward(x):
    (x * x).sum().backward()
    return (x * 3.0).sum()


@pytest.mark.parametrize("step", [_retained, _nothing_saved, _computed_after_backward],
                         ids=["retain_graph", "nothing saved", "after the backward"])
def test_a_returned_graph_that_outlives_the_call_runs_eagerly(step):
    expected, _ = _outer_gradient(step, compiled=False)
    found, messages = _outer_gradient(step, compiled=True)
    np.testing.assert_array_equal(found, expected)
    assert any("a backward outside it could still run through" in m for m in messages), messages


def test_a_steps_loss_whose_graph_its_backward_freed_still_compiles():
    def step(w, x):
        loss = ((x @ w).tanh() ** 2).sum()
        loss.backward()
        return loss

    fn = jg.compile(step, cache=False, fullgraph=True)
    w = jg.ones(3, 2, requires_grad=True)
    for _ in range(2):
        w.grad = None
        fn(w, jg.ones(4, 3))
    assert len(fn.programs) == 1   # fullgraph: no eager fallback


@pytest.mark.parametrize("needs_grad", [False, True])
def test_returned_tensors_sharing_memory_run_eagerly(needs_grad):
    def both(x):
        y = x * 2
        return y[0], y

    rows = []
    for fn in (both, jg.compile(both, cache=False)):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", CompileWarning)
            row, whole = fn(jg.ones(2, 2, requires_grad=needs_grad))
        with jg.no_grad():
            whole.mul_(3)
        rows.append(row.detach().numpy())
    np.testing.assert_array_equal(rows[1], rows[0])
    assert any("share memory" in str(w.message) for w in caught)


def _through_detach(x):
    y = x * 2
    y.detach().add_(1)   # y's memory: eagerly y is x * 2 + 1 from here on
    return y * x


def _through_data(x):
    y = x * 2
    y.data.mul_(3)
    return y[1:] + y * x


@pytest.mark.parametrize("fn", [_through_detach, _through_data], ids=["detach", "data"])
def test_a_write_through_an_alias_of_a_value_made_inside_is_seen_by_it(fn):
    x = jg.tensor([1.0, 2.0])
    np.testing.assert_array_equal(jg.compile(fn, cache=False)(x).numpy(), fn(x).numpy())


@dataclasses.dataclass
class StepOutput:
    loss: jg.Tensor
    steps: int


def _returns_a_dataclass(x, w):
    loss = (x * w).sum()
    loss.backward()
    return StepOutput(loss.detach(), 1)


def test_a_returned_object_holding_tensors_runs_eagerly():
    """Any object but tuples, lists, dicts and named tuples is returned as it is: until 2026-11-28 a
    dataclass of outputs came back as the one the trace made, with the trace's tensors, at every call."""
    compiled = jg.compile(_returns_a_dataclass, cache=False)
    w = jg.ones(3, dtype=jg.float64, requires_grad=True)
    with pytest.warns(CompileWarning, match="returns a StepOutput holding tensors"):
        for scale in (1.0, 2.0):
            x = jg.full((3,), scale, dtype=jg.float64)
            out = compiled(x, w)
            assert type(out.loss) is jg.Tensor
            np.testing.assert_allclose(out.loss.numpy(), 3.0 * scale)
