"""A trace replays derivative formulas it has recorded before (fx/derivative_templates.py): the graph and
the values must be exactly those of running every formula."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.fx import derivative_templates
from jitgrad.fx.tracer import start_trace

RNG = np.random.default_rng(0)


def _rnn(wh, wx, xs):
    h = jg.zeros(3, dtype=wh.dtype)
    for t in range(xs.shape[0]):
        h = jg.tanh(wh @ h + wx @ xs[t])
    return jg.autograd.grad((h * h).sum(), [wh, wx])


def _broadcast_layers(w, b, x):
    h = x
    for _ in range(4):
        h = jg.relu(h @ w + b)          # b's gradient is summed over the batch (the engine's sum_to)
    return jg.autograd.grad(h.sum(), [w, b])


def _multiple_outputs(x):
    h = x
    for _ in range(4):
        values, _ = h.max(dim=1, keepdim=True)
        first, second = h.split(2, dim=1)
        h = jg.cat([second, first], dim=1) * values
    return jg.autograd.grad(h.sum(), [x])


def _signed_zeros(x):
    h = x
    for scale in (0.0, -0.0, 0.0, -0.0, 2.0):
        h = (h * scale + x).sin()
    return jg.autograd.grad(h.sum(), [x])


def _mixed_dtypes(w, x):
    h = x
    for _ in range(3):
        h = (h.float() @ w).double().exp()
    return jg.autograd.grad(h.sum(), [w, x])


CASES = {
    "rnn": (_rnn, lambda: [RNG.standard_normal((3, 3)), RNG.standard_normal((3, 2)), RNG.standard_normal((6, 2))],
            2),
    "broadcast_layers": (_broadcast_layers, lambda: [RNG.standard_normal((3, 3)) * 0.5, RNG.standard_normal(3),
                                                    RNG.standard_normal((2, 3))], 3),
    "multiple_outputs": (_multiple_outputs, lambda: [RNG.standard_normal((2, 4))], 1),
    "signed_zeros": (_signed_zeros, lambda: [RNG.standard_normal(3)], 1),
    "mixed_dtypes": (_mixed_dtypes, lambda: [RNG.standard_normal((3, 3)).astype(np.float32) * 0.3,
                                            RNG.standard_normal((2, 3))], 2),
}


def _traced(fn, arrays, wanted):
    """The graph a trace of ``fn`` makes, as it prints, and the values of the gradients it returned."""
    tensors = [jg.tensor(a, requires_grad=i < wanted) for i, a in enumerate(arrays)]
    tracer, args = start_trace(fn, tuple(tensors))
    with tracer.running():
        grads = fn(*args)
    tracer.graph.output(tuple(tracer.node_of(g) for g in grads))
    return str(tracer.graph), [g._data.copy() for g in grads]


@pytest.mark.parametrize("case", sorted(CASES))
def test_replayed_formulas_make_the_graph_and_values_of_running_them(case, monkeypatch):
    fn, make, wanted = CASES[case]
    arrays = make()
    replays = []
    replay = derivative_templates.DerivativeTemplates._replay

    def counted(self, template, tensors):
        result = replay(self, template, tensors)
        replays.append(result is not self)
        return result

    monkeypatch.setattr(derivative_templates.DerivativeTemplates, "_replay", counted)
    graph, values = _traced(fn, arrays, wanted)
    assert any(replays), "no formula was replayed"
    monkeypatch.setattr(derivative_templates.DerivativeTemplates, "__call__",
                        lambda self, op, name, formula, args: formula(*args))
    graph_run, values_run = _traced(fn, arrays, wanted)
    assert graph == graph_run
    eager = fn(*[jg.tensor(a, requires_grad=i < wanted) for i, a in enumerate(arrays)])
    for value, run, expected in zip(values, values_run, eager):
        assert value.dtype == run.dtype == expected._data.dtype
        np.testing.assert_array_equal(value, run)
        np.testing.assert_array_equal(value, expected._data)


def test_a_formula_asked_for_the_same_kind_with_other_shapes_is_recorded_again():
    """Same op, same input, other shapes: another kind, so the replay never reuses a template's
    metadata for another shape (the graph still matches running the formulas)."""
    def fn(x, y):
        return jg.autograd.grad((x.tanh().sum() + y.tanh().sum() + x.tanh().sum()), [x, y])
    arrays = [RNG.standard_normal(3), RNG.standard_normal((2, 2))]
    graph, values = _traced(fn, arrays, 2)
    assert "float64[2, 2] = call_function mul" in graph
    np.testing.assert_array_equal(values[1], 1 - np.tanh(arrays[1]) ** 2)
