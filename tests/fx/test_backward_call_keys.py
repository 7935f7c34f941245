"""The pieces a second trace uses to take a backward call's results (fx/backward_calls.py): the key of
a call's graph (``autograd.describe_pure_backward``) and ``CheckedGraph.skip``. The compiled
behaviour is tested in tests/compile/test_backward_calls.py."""
from __future__ import annotations

import numpy as np

import jitgrad as jg
from jitgrad.autograd.graph import get_gradient_edge
from jitgrad.autograd.pure_backward import describe_pure_backward
from jitgrad.fx.checked_graph import CheckedGraph
from jitgrad.fx.node import Opcode
from jitgrad.fx.trace_calls import trace
from jitgrad.tensor import Tensor


def _loss():
    w = jg.tensor(np.arange(4.0).reshape(2, 2), requires_grad=True)
    return w, ((w * 2).tanh() * 3).sum()


def _describe(loss, label_node, label_tensor=lambda t: "leaf"):
    return describe_pure_backward([get_gradient_edge(loss)], [jg.tensor(1.0)], None, ("flags",), label_node,
                                  label_tensor, frozenset(), (Tensor,))


def test_every_node_must_have_a_label():
    """A node the trace did not see made (a tensor reached by the graph that was not in the first
    trace) refuses the key; so does a leaf without one."""
    _, loss = _loss()
    described = _describe(loss, lambda fn: fn.name())
    assert described is not None and [fn.name() for fn in described.nodes] == \
        ["SumBackward0", "MulBackward0", "TanhBackward0", "MulBackward0", "AccumulateGrad"]
    assert described.leaves == [4]
    seen = {loss.grad_fn}
    assert _describe(loss, lambda fn: fn.name() if fn not in seen else None) is None
    assert _describe(loss, lambda fn: fn.name(), lambda t: None) is None


def test_the_key_tells_freed_graphs_and_set_grads_apart():
    w, loss = _loss()
    before = _describe(loss, lambda fn: fn.name())
    w.grad = jg.ones(2, 2, dtype=jg.float64)
    with_grad = _describe(loss, lambda fn: fn.name(), lambda t: "grad" if t is w.grad else "leaf")
    assert with_grad.key != before.key
    w.grad = None
    loss.backward()
    assert _describe(loss, lambda fn: fn.name()).key != before.key
    assert before.freed() == [1, 2, 3]  # what saved a value (the sum saved a shape, which stays)


def test_skip_takes_the_nodes_only_where_the_checked_graph_stands():
    def f(x):
        return (x * 2).sum()
    reference = trace(f, jg.tensor(np.ones(3))).graph
    calls = [n for n in reference.nodes if n.op is Opcode.CALL_FUNCTION]
    checked = CheckedGraph(reference)
    checked.placeholder("x", dict(reference.placeholders[0].meta))
    assert not checked.skip(1, 1, calls[:1], {})       # not yet at the second call
    assert not checked.skip(0, 1, calls[1:], {})       # other nodes than the next
    assert not checked.skip(0, 0, calls[:1], {})       # another count of placeholders
    names = dict(reference._names)
    assert checked.skip(0, 1, calls, names) and len(checked) == 3 and checked._names == names
