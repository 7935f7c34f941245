"""``hoist_numbers`` alone: the arithmetic on Python numbers taken out of a traced graph into a Python
prelude (each computation once), and the predicates (comparisons the traced code branched on) checked
in the trace's order."""
from __future__ import annotations

import numpy as np

import jitgrad as jg
from jitgrad.fx.node import Opcode
from jitgrad.fx.numbers import is_number_op
from jitgrad.fx.passes.hoist_numbers import hoist_numbers
from jitgrad.fx.tracer import Tracer


def traced(body):
    """``body(tracer, a, b, x)`` traced with number inputs a=0.9, b=0.5 and a tensor x; its graph."""
    tracer = Tracer()
    with tracer.running():
        a, b = tracer.number_input("a", 0.9), tracer.number_input("b", 0.5)
        x = jg.tensor(np.arange(3.0))
        tracer.lift("x", x)
        out = body(a, b, x)
        tracer.graph.output(tracer.node_of(out))
    return tracer


def test_number_ops_leave_the_graph_and_repeats_are_computed_once():
    tracer = traced(lambda a, b, x: x * (1 - a) + x * (1 - a) * b + x * (1 - a))
    graph = tracer.graph
    prelude = hoist_numbers(graph, tracer.predicates)
    assert not any(n.op is Opcode.CALL_FUNCTION and is_number_op(n.target) for n in graph.nodes)
    assert prelude.inputs == ["a", "b"] and len(prelude.outputs) == 1   # one 1 - a for three uses
    assert np.isclose(prelude(0.25, 2.0)[0], 0.75)
    readers = [n for n in graph.nodes if any(getattr(a, "name", None) == prelude.outputs[0] for a in n.args)]
    assert len(readers) == 3


def test_predicates_are_checked_in_order_and_stop_at_the_first_change():
    def body(a, b, x):
        if a < 1:                      # True in the trace
            scale = 1 / (1 - a)        # computed only where a < 1
            if scale > b:              # True in the trace
                return x * scale
        return x
    tracer = traced(body)
    prelude = hoist_numbers(tracer.graph, tracer.predicates)
    assert prelude.expected == (True, True) and len(prelude.checks) == 2
    assert prelude.holds(0.5, 0.5)
    assert not prelude.holds(1.0, 0.5)          # stops at a < 1: never divides by zero
    assert not prelude.holds(0.5, 3.0)          # the second comparison changed
    assert "(True when traced, False now)" in prelude.outcomes(0.5, 3.0)[0]
    assert prelude.outcomes(0.5, 0.5) == []


def test_a_repeated_predicate_is_checked_once():
    def body(a, b, x):
        for _ in range(3):
            if a != 0:
                x = x * a
        return x
    tracer = traced(body)
    assert len(tracer.predicates) == 3
    prelude = hoist_numbers(tracer.graph, tracer.predicates)
    assert len(prelude.checks) == 1 and prelude.holds(0.3, 0.0) and not prelude.holds(0.0, 0.0)
