"""The short cuts the passes take on long traces give what the long way gives: a call keyed by its
arguments' values before its full key, an erasure checked at once, readers rewired once, a new order put
in order before the graph gets it, a run of row reads classified in one loop."""
from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg
from jitgrad import fx
from jitgrad.fx import GraphError
from jitgrad.fx.node import clear_inputs
from jitgrad.fx.passes import eliminate_common_subexpressions, roll_loops, topological_order
from jitgrad.fx.passes.topological_sort import stable_order

X = jg.randn(3, 4)


def calls(graph, op):
    return [n for n in graph.nodes if n.op == "call_function" and n.target_name == op]


def test_cse_keeps_calls_apart_whose_arguments_are_equal_but_of_other_types():
    """``x * 2`` and ``x * 2.0`` share their op and equal arguments (2 == 2.0), which is all the first
    key looks at: the full key, which keeps an int and a float apart (they promote differently), decides."""
    g = fx.trace(lambda x: (x * 2, x * 2.0), X).graph
    eliminate_common_subexpressions(g)
    g.lint()
    assert len(calls(g, "mul")) == 2


def test_cse_merges_calls_whose_arguments_are_no_key_of_their_own():
    """A slice (unhashable before Python 3.12) among the attributes: the call is keyed in full at once."""
    g = fx.trace(lambda x: (x[1:3] + 1.0, x[1:3] + 1.0), X).graph
    eliminate_common_subexpressions(g)
    g.lint()
    assert len(calls(g, "getitem")) == 1 and len(calls(g, "add")) == 1


def test_erase_nodes_names_a_reader_left_behind_and_erases_nothing():
    g = fx.trace(lambda x: x.exp().sin() + x.cos(), X).graph
    exp, sin, cos = g.find("exp"), g.find("sin"), g.find("cos")
    before = list(g.nodes)
    with pytest.raises(GraphError, match="cannot erase sin: it is still read by add"):
        g.erase_nodes([exp, sin, cos])
    assert list(g.nodes) == before and set(sin.users) == {g.find("add")}
    g.lint()


def test_clear_inputs_leaves_readers_lists_in_step():
    g = fx.trace(lambda x: x.exp() * x.exp().sin(), X).graph
    mul = g.find("mul")
    sources = mul.all_input_nodes
    g.output_node.args = (g.placeholders[0],)
    clear_inputs([mul])
    assert mul.args == () and mul.kwargs == {} and mul.all_input_nodes == []
    assert all(mul not in source.users for source in sources)


def test_replace_inputs_rewires_nested_values_and_repeats_at_once():
    g = fx.trace(lambda x: (jg.stack([x.exp(), x.exp(), x.sin()]), x.exp() * x.exp()), X).graph
    exp, exp_1, sin, exp_2, exp_3 = (g.find(name) for name in ("exp", "exp_1", "sin", "exp_2", "exp_3"))
    stack, mul = g.find("stack"), g.find("mul")
    stack.replace_inputs({exp_1: exp, sin: exp})
    assert stack.args[0] == (exp, exp, exp) and stack.all_input_nodes == [exp] and stack.kwargs == {"dim": 0}
    assert stack in exp.users and stack not in exp_1.users and stack not in sin.users
    mul.replace_inputs({exp_2: exp, exp_3: exp})
    assert mul.args == (exp, exp) and mul.all_input_nodes == [exp] and list(exp.users) == [stack, mul]


def test_stable_order_of_a_new_order_is_the_graph_order_after_the_reorder():
    g = fx.trace(lambda x: ((x * 2.0).exp() + x.sin()).tanh().sum() + x.cos().mean(), X).graph
    rng = np.random.default_rng(1)
    *body, output = g.nodes
    shuffled = [body[i] for i in rng.permutation(len(body))] + [output]
    expected_from = stable_order(shuffled)
    g.reorder(shuffled)
    assert expected_from == topological_order(g)
    g.reorder(expected_from)
    g.lint()


@pytest.mark.parametrize("step", [1, -1])
def test_a_loop_over_rows_read_either_way_rolls_and_a_broken_run_stops_where_it_breaks(step):
    """Rows read one after another up or down roll; a skipped row ends the run there (the one-loop
    classification of row reads)."""
    rows = list(range(10))[::step]
    rows[6] = rows[7]  # iteration 6 skips a row: the run of rows ends there

    def program(w, h, xs):
        for t in rows:
            h = jg.tanh(w @ h + xs[t])
        return h
    w, h, xs = 0.5 * jg.randn(4, 4), jg.randn(4), jg.randn(10, 4)
    g = fx.trace(program, w, h, xs).graph
    before = fx.Interpreter(g).run(w, h, xs)
    roll_loops(g)
    g.lint()
    loops = [n.target for n in g.nodes if n.op == "call_function" and n.target_name == "loop"]
    assert [(loop.count, loop.reverse) for loop in loops] == [(6, step == -1)]
    np.testing.assert_allclose(fx.Interpreter(g).run(w, h, xs).numpy(), before.numpy(), rtol=1e-6)
