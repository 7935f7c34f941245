"""A trace replays derivative formulas it has recorded before (fx/derivative_templates.py): the graph and
the values must be exactly those of running every formula."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg
from jitgrad.fx import derivative_templates
from jitgrad.fx.trace_calls import start_trace
from jitgrad.ops.meta_rules import elementwise, promoted
from jitgrad.ops.registry import OpDef

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


def _scalar_kinds(x):
    """The same derivatives meet Python numbers of other kinds (an int, a float, a bool of equal value):
    each is a call of its own kind, recorded with its own attribute."""
    h = x
    for scale in (2, 2.0, True, 1, 1.0, 0, False, 0.5):
        h = ((h * scale + x).sin() + 2.0) ** scale
    return jg.autograd.grad(h.sum(), [x])


def _one_node_twice(x, y, w):
    """mul's derivative reads the incoming gradient and the other factor: first one node for both
    (``grad_outputs=y`` of ``x * y``), then two; replaying the first call's template would square w."""
    grads = []
    for incoming in (y, w, y, w):
        grads += jg.autograd.grad(x * y, [x], grad_outputs=incoming)
    return grads


def _index_values(x, first, second, mask):
    """The same shapes, other index and mask values at every step: values are never part of a template."""
    h = x
    for step in range(4):
        index = first if step % 2 else second
        h = (h.gather(1, index) * h.index_select(0, index[0]) + jg.where(mask if step % 2 else ~mask, h, h * 3)
             + h.masked_fill(mask, 0.5)).sin()
    return jg.autograd.grad(h.sum(), [x])


class _Scaled(jg.autograd.Function):
    @staticmethod
    def forward(ctx, a, scale):
        ctx.save_for_backward(a)
        ctx.scale = scale
        return a * a * scale

    @staticmethod
    def backward(ctx, grad):
        a, = ctx.saved_tensors
        return grad * a * (2 * ctx.scale), None


def _user_code_in_the_loop(x):
    """Hooks that change the gradient (in place and not), ``retain_grad``, a custom Function and
    saved-tensor hooks run between replayed formulas."""
    h, kept = x * 1, []
    with jg.autograd.graph.saved_tensors_hooks(lambda t: t * 2, lambda t: t + 1):
        for step in range(3):
            h = _Scaled.apply((h * 2).sin(), step - 0.5)
            h.register_hook(lambda grad: grad.mul_(2) if step % 2 else grad * 3)
            h.retain_grad()
            kept.append(h)
    (h * h).sum().backward()
    return [x.grad] + [t.grad for t in kept]


def _double_backward(x):
    """With ``create_graph`` the formulas' ops must record their own backward: never replayed."""
    h = x
    for _ in range(3):
        h = (h * h).sin()
    first, = jg.autograd.grad(h.sum(), [x], create_graph=True)
    return jg.autograd.grad((first * first).sum(), [x])


# ``other * 0.5`` of an integer ``other`` is a tensor of the default dtype (as pow's log of an integer base)
_SCALED_BY_EXP = OpDef("test_scaled_by_exp", ("self", "other"), np.multiply,
                       {"self": lambda grad, other: grad * (other * 0.5).exp()}, node="TestScaledByExpBackward",
                       meta=elementwise(promoted))


def _default_dtype_between_calls(x, other):
    """The same formula arguments make float32 or float64 nodes as the default dtype changes between
    backward calls."""
    grads, before = [], jg.get_default_dtype()
    try:
        for dtype in (jg.float64, jg.float32, jg.float64, jg.float32):
            jg.set_default_dtype(dtype)
            grads += jg.autograd.grad(_SCALED_BY_EXP(x, other).sum(), [x])
    finally:
        jg.set_default_dtype(before)
    return grads


CASES = {
    "rnn": (_rnn, lambda: [RNG.standard_normal((3, 3)), RNG.standard_normal((3, 2)), RNG.standard_normal((6, 2))],
            2),
    "broadcast_layers": (_broadcast_layers, lambda: [RNG.standard_normal((3, 3)) * 0.5, RNG.standard_normal(3),
                                                    RNG.standard_normal((2, 3))], 3),
    "multiple_outputs": (_multiple_outputs, lambda: [RNG.standard_normal((2, 4))], 1),
    "signed_zeros": (_signed_zeros, lambda: [RNG.standard_normal(3)], 1),
    "mixed_dtypes": (_mixed_dtypes, lambda: [RNG.standard_normal((3, 3)).astype(np.float32) * 0.3,
                                            RNG.standard_normal((2, 3))], 2),
    "scalar_kinds": (_scalar_kinds, lambda: [RNG.standard_normal(3)], 1),
    "one_node_twice": (_one_node_twice, lambda: [RNG.standard_normal(3), RNG.standard_normal(3),
                                                RNG.standard_normal(3)], 1),
    "index_values": (_index_values, lambda: [RNG.standard_normal((2, 2)), np.array([[0, 1], [1, 1]]),
                                            np.array([[1, 0], [0, 0]]), np.array([[True, False], [False, False]])], 1),
    "user_code_in_the_loop": (_user_code_in_the_loop, lambda: [RNG.standard_normal(3)], 1),
    "double_backward": (_double_backward, lambda: [RNG.standard_normal(3)], 1),
    "default_dtype_between_calls": (_default_dtype_between_calls, lambda: [RNG.standard_normal(3), np.array([0, 2, 3])],
                                    1),
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

    def counted(self, template, tensors, nodes):
        result = replay(self, template, tensors, nodes)
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
